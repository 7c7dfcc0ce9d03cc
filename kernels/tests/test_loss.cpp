// nll_loss_forward / nll_loss_backward against their double references
// (loss_ref.cpp): every reduction, with and without class weights, ignored
// targets (inside and outside the class range), empty and single-class
// batches, bad targets, every floating dtype.
// Tolerances: a product of two elements rounds the same in float and double,
// so per-sample results (reduction None, and the Sum gradient) must match
// bit for bit; sums (Sum / Mean losses, total_weight) and the Mean gradient
// (g / total_weight * w, rounded twice in float) use ref_compare.h's per-dtype
// tolerance relative to the sum of the terms' magnitudes.
#include "mlu_kernels/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class LossTest : public ::testing::TestWithParam<ScalarType> {};

struct Batch {
  int64_t n, classes;
};
constexpr Batch kShapes[] = {{0, 3}, {1, 1}, {1, 5}, {5, 1}, {7, 3}, {17, 10}, {100, 33}};

// The reduced loss sums in the element type through the CPU's cascade (Note
// [nll_loss sums as the CPU does]): in 16 bits every addition rounds, so the
// sum may be off by half an ulp of the running sum per addition: up to 16
// additions per cascade level, and the final sum of the 8 levels.
Tolerance cascade_tolerance(ScalarType type, double scale, int64_t n) {
  Tolerance t = tolerance(type, scale);
  if (type == ScalarType::Float16 || type == ScalarType::BFloat16) {
    int levels = 1;
    for (int64_t covered = 16; covered < n; covered *= 16) ++levels;
    const double half_ulp = std::ldexp(1.0, type == ScalarType::Float16 ? -11 : -8);
    t.atol += (16.0 * levels + 8) * half_ulp * scale;
  }
  return t;
}

std::string reduction_name(LossReduction r) {
  return r == LossReduction::None ? "none" : r == LossReduction::Mean ? "mean" : "sum";
}

TEST_P(LossTest, NllLossMatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(61 + static_cast<int>(type));
  for (const Batch shape : kShapes) {
    for (const LossReduction reduction : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      for (int variant = 0; variant < 3; ++variant) {
        const int64_t n = shape.n, classes = shape.classes;
        const bool weighted = variant != 0;
        // -100 (PyTorch's default, never a class) or a class in range.
        const int64_t ignore_index = variant == 2 ? classes / 2 : -100;
        const std::string what = std::string(scalar_type_name(type)) + " n " + std::to_string(n) + " classes " +
                                 std::to_string(classes) + " " + reduction_name(reduction) + " variant " +
                                 std::to_string(variant);
        // Log-probabilities (<= 0) and positive class weights.
        Buffer input(type, n * classes), weight(type, classes);
        for (int64_t i = 0; i < input.count(); ++i) {
          put_real(type, input.element(i), -std::exponential_distribution<>(0.5)(rng));
        }
        for (int64_t c = 0; c < classes; ++c) {
          put_real(type, weight.element(c), std::uniform_real_distribution<>(0.1, 2.0)(rng));
        }
        std::vector<int64_t> target(static_cast<size_t>(n));
        for (int64_t& t : target) t = chance(rng, 0.15) ? ignore_index : uniform(rng, 0, classes - 1);
        const void* w = weighted ? weight.data() : nullptr;

        const int64_t outputs = reduction == LossReduction::None ? n : 1;
        Buffer out(type, outputs), out_ref(type, outputs), tw(type, 1), tw_ref(type, 1);
        const IndexCheck check = nll_loss_forward(type, n, classes, input.data(), target.data(), w, reduction,
                                                  ignore_index, out.data(), tw.data());
        const IndexCheck check_ref = nll_loss_forward_ref(type, n, classes, input.data(), target.data(), w,
                                                          reduction, ignore_index, out_ref.data(), tw_ref.data());
        ASSERT_TRUE(check.ok && check_ref.ok) << what;
        // The size of the sum's terms, for the tolerance of a sum.
        double terms = 0, weight_sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t t = target[static_cast<size_t>(i)];
          if (t == ignore_index) continue;
          const double wt = weighted ? value(weight, t) : 1.0;
          terms += std::abs(wt * value(input, i * classes + t));
          weight_sum += wt;
        }
        if (reduction == LossReduction::None) {
          ASSERT_TRUE(same_buffers(out, out_ref)) << "loss " << what;
          ASSERT_TRUE(same_buffers(tw, tw_ref)) << "total weight " << what;
        } else {
          const double scale = reduction == LossReduction::Mean ? terms / weight_sum : terms;
          ASSERT_TRUE(near_buffers(out, out_ref, cascade_tolerance(type, scale, n))) << "loss " << what;
          ASSERT_TRUE(near_buffers(tw, tw_ref, cascade_tolerance(type, weight_sum, n))) << "total weight " << what;
        }

        // Backward, from the reference's total weight.
        const Buffer grad = normal_buffer(type, outputs, rng);
        Buffer gi(type, n * classes), gi_ref(type, n * classes);
        fill_normal(gi, rng);  // overwritten
        const IndexCheck bcheck = nll_loss_backward(type, n, classes, grad.data(), target.data(), w, reduction,
                                                    ignore_index, tw_ref.data(), gi.data());
        const IndexCheck bcheck_ref = nll_loss_backward_ref(type, n, classes, grad.data(), target.data(), w,
                                                            reduction, ignore_index, tw_ref.data(), gi_ref.data());
        ASSERT_TRUE(bcheck.ok && bcheck_ref.ok) << what;
        if (reduction == LossReduction::Mean) {
          ASSERT_TRUE(near_buffers(gi, gi_ref, tolerance(type, 0))) << "grad input " << what;
        } else {
          ASSERT_TRUE(same_buffers(gi, gi_ref)) << "grad input " << what;
        }
      }
    }
  }
}

// A target outside [0, classes) that is not ignore_index: both report the
// first one and skip its sample.
TEST_P(LossTest, BadTargetsReportedLikeReference) {
  const ScalarType type = GetParam();
  Rng rng(67);
  const int64_t n = 6, classes = 4;
  const std::vector<int64_t> target = {1, -100, 7, 0, -3, 3};
  const Buffer input = normal_buffer(type, n * classes, rng), weight = normal_buffer(type, classes, rng);
  for (const LossReduction reduction : {LossReduction::None, LossReduction::Sum}) {
    const int64_t outputs = reduction == LossReduction::None ? n : 1;
    Buffer out(type, outputs), out_ref(type, outputs), tw(type, 1), tw_ref(type, 1);
    const IndexCheck check = nll_loss_forward(type, n, classes, input.data(), target.data(), weight.data(), reduction,
                                              -100, out.data(), tw.data());
    const IndexCheck check_ref = nll_loss_forward_ref(type, n, classes, input.data(), target.data(), weight.data(),
                                                      reduction, -100, out_ref.data(), tw_ref.data());
    EXPECT_FALSE(check.ok);
    EXPECT_EQ(check.bad_index, 7);
    EXPECT_EQ(check_ref.ok, check.ok);
    EXPECT_EQ(check_ref.bad_index, check.bad_index);
    EXPECT_TRUE(near_buffers(out, out_ref, tolerance(type, 10))) << reduction_name(reduction);

    Buffer gi(type, n * classes), gi_ref(type, n * classes);
    const IndexCheck bcheck = nll_loss_backward(type, n, classes, out.data(), target.data(), weight.data(), reduction,
                                                -100, tw.data(), gi.data());
    const IndexCheck bcheck_ref = nll_loss_backward_ref(type, n, classes, out.data(), target.data(), weight.data(),
                                                        reduction, -100, tw.data(), gi_ref.data());
    EXPECT_FALSE(bcheck.ok);
    EXPECT_EQ(bcheck.bad_index, 7);
    EXPECT_EQ(bcheck_ref.bad_index, 7);
    EXPECT_TRUE(same_buffers(gi, gi_ref)) << reduction_name(reduction);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LossTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
