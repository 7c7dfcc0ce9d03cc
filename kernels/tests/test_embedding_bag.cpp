// embedding_bag and its backward ops against their references
// (embedding_bag_ref.cpp): sum / mean / max, empty bags, positions past the
// last bag, padding_idx, per-sample weights, scale_grad_by_freq, a row
// stride wider than the rows, zero-width rows, the offset / index checks,
// every floating dtype, and enough bags / columns for several thread chunks.
// Tolerances: max copies an element and the bookkeeping outputs are
// integers, so they must match exactly; sums use ref_compare.h's per-dtype
// tolerance relative to the largest sum of |terms|. The weight gradient
// rounds every addition to the dtype, so its bound is (m + 1) unit roundoffs
// of each element's sum of |terms|, m the most additions into one element
// (ref_compare.h near_rounded_sums).
#include "mlu_kernels/embedding_bag.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class EmbeddingBagTest : public ::testing::TestWithParam<ScalarType> {};

const char* mode_name(BagMode m) { return m == BagMode::Sum ? "sum" : m == BagMode::Mean ? "mean" : "max"; }

// Random indices and bag bounds (sorted, starting at 0, empty bags, and
// sometimes a last bound short of the end: positions in no bag).
struct Bags {
  std::vector<int64_t> indices, bounds;
};

Bags random_bags(Rng& rng, int64_t num_weights, int64_t num_indices, int64_t num_bags) {
  Bags g;
  for (int64_t i = 0; i < num_indices; ++i) g.indices.push_back(uniform(rng, 0, num_weights - 1));
  g.bounds.push_back(0);
  for (int64_t b = 1; b < num_bags; ++b) g.bounds.push_back(uniform(rng, 0, num_indices));
  std::sort(g.bounds.begin(), g.bounds.end());
  if (num_bags > 0) g.bounds.push_back(chance(rng, 0.7) ? num_indices : uniform(rng, g.bounds.back(), num_indices));
  if (num_bags == 0) g.bounds = {0};
  return g;
}

struct Sizes {
  int64_t num_weights, dim, num_indices, num_bags;
};
constexpr Sizes kSizes[] = {{1, 1, 1, 1},  {3, 0, 4, 2},   {4, 5, 0, 3},   {5, 1, 9, 4},  {6, 17, 11, 5},
                            {9, 15, 20, 1}, {7, 33, 25, 7}, {2, 16, 13, 6}, {8, 3, 30, 0}};

void run_case(ScalarType type, const Sizes& z, BagMode mode, int variant, Rng& rng) {
  EmbeddingBagArgs a;
  a.type = type;
  a.num_weights = z.num_weights;
  a.dim = z.dim;
  a.num_indices = z.num_indices;
  a.num_bags = z.num_bags;
  a.mode = mode;
  a.weight_row_stride = variant % 2 == 0 ? z.dim : z.dim + 3;  // odd variants: rows with gaps
  a.padding_idx = variant >= 2 ? uniform(rng, 0, z.num_weights - 1) : -1;
  const bool weighted = mode == BagMode::Sum && variant != 1;
  const bool by_freq = mode != BagMode::Max && variant >= 1;
  const std::string what = std::string(scalar_type_name(type)) + " " + mode_name(mode) + " weights " +
                           std::to_string(z.num_weights) + " dim " + std::to_string(z.dim) + " indices " +
                           std::to_string(z.num_indices) + " bags " + std::to_string(z.num_bags) + " variant " +
                           std::to_string(variant);
  const Buffer weight = normal_buffer(type, std::max<int64_t>(0, (z.num_weights - 1) * a.weight_row_stride + z.dim), rng);
  Buffer psw = normal_buffer(type, z.num_indices, rng);
  Bags bags = random_bags(rng, z.num_weights, z.num_indices, z.num_bags);
  a.weight = weight.data();
  a.indices = bags.indices.data();
  a.bounds = bags.bounds.data();
  a.per_sample_weights = weighted ? psw.data() : nullptr;

  const int64_t outputs = z.num_bags * z.dim;
  Buffer out(type, outputs), out_ref(type, outputs);
  std::vector<int64_t> o2b(static_cast<size_t>(z.num_indices), -5), o2b_ref(o2b), size(static_cast<size_t>(z.num_bags), -5),
      size_ref(size), maxi(static_cast<size_t>(outputs), -5), maxi_ref(maxi);
  const bool max = mode == BagMode::Max;
  const BagCheck check = embedding_bag(a, out.data(), o2b.data(), size.data(), max ? maxi.data() : nullptr);
  const BagCheck check_ref = embedding_bag_ref(a, out_ref.data(), o2b_ref.data(), size_ref.data(), max ? maxi_ref.data() : nullptr);
  ASSERT_EQ(check.kind, BagCheck::Ok) << what;
  ASSERT_EQ(check_ref.kind, BagCheck::Ok) << what;
  ASSERT_EQ(o2b, o2b_ref) << "offset2bag " << what;
  ASSERT_EQ(size, size_ref) << "bag_size " << what;
  ASSERT_EQ(maxi, maxi_ref) << "max_indices " << what;
  const double bag_terms = static_cast<double>(z.num_indices) * max_abs(weight) * (weighted ? max_abs(psw) : 1.0);
  if (max) {
    ASSERT_TRUE(same_buffers(out, out_ref)) << "output " << what;
  } else {
    ASSERT_TRUE(near_buffers(out, out_ref, tolerance(type, bag_terms))) << "output " << what;
  }

  // Backward ops from the reference's bookkeeping.
  const Buffer grad = normal_buffer(type, outputs, rng);
  Buffer gw(type, z.num_weights * z.dim), gw_ref(type, gw.count());
  fill_normal(gw, rng);  // overwritten
  embedding_bag_backward(a, grad.data(), o2b_ref.data(), size_ref.data(), maxi_ref.data(), by_freq, gw.data());
  embedding_bag_backward_ref(a, grad.data(), o2b_ref.data(), size_ref.data(), maxi_ref.data(), by_freq, gw_ref.data());
  // The bound: the reference on |grad| and |per_sample_weights| (each
  // element's sum of |terms|), times (m + 1) unit roundoffs for the m
  // additions into the busiest element.
  EmbeddingBagArgs abs_args = a;
  const Buffer abs_psw = abs_buffer(psw), abs_grad = abs_buffer(grad);
  abs_args.per_sample_weights = weighted ? abs_psw.data() : nullptr;
  Buffer magnitude(type, gw.count());
  embedding_bag_backward_ref(abs_args, abs_grad.data(), o2b_ref.data(), size_ref.data(), maxi_ref.data(), by_freq,
                             magnitude.data());
  int64_t m = 1;
  for (int64_t row = 0; row < z.num_weights; ++row) {
    m = std::max<int64_t>(m, std::count(bags.indices.begin(), bags.indices.end(), row));
    m = std::max<int64_t>(m, std::count(maxi_ref.begin(), maxi_ref.end(), row));
  }
  ASSERT_TRUE(near_rounded_sums(gw, gw_ref, magnitude, static_cast<double>(m))) << "grad weight " << what;

  if (weighted) {
    Buffer gp(type, z.num_indices), gp_ref(type, z.num_indices);
    embedding_bag_per_sample_weights_backward(a, grad.data(), o2b_ref.data(), gp.data());
    embedding_bag_per_sample_weights_backward_ref(a, grad.data(), o2b_ref.data(), gp_ref.data());
    ASSERT_TRUE(near_buffers(gp, gp_ref, tolerance(type, static_cast<double>(z.dim) * max_abs(grad) * max_abs(weight))))
        << "grad per_sample_weights " << what;
  }
}

TEST_P(EmbeddingBagTest, MatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(107 + static_cast<int>(type));
  for (const Sizes& z : kSizes) {
    for (const BagMode mode : {BagMode::Sum, BagMode::Mean, BagMode::Max}) {
      for (int variant = 0; variant < 4; ++variant) {
        run_case(type, z, mode, variant, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Bags over several chunks (grain 4096 / dim bags), columns over threads in
// the backward op, positions over threads in the per-sample-weight one.
TEST_P(EmbeddingBagTest, ManyBagsSplitOverThreads) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(109);
  for (const BagMode mode : {BagMode::Sum, BagMode::Mean, BagMode::Max}) {
    run_case(type, Sizes{50, 33, 1500, 400}, mode, 3, rng);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EmbeddingBagTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

// Bad offsets and indices: the same report from both, and nothing written.
TEST(EmbeddingBagChecks, ReportedLikeReference) {
  const ScalarType type = ScalarType::Float32;
  Rng rng(113);
  const Buffer weight = normal_buffer(type, 4 * 2, rng);
  struct Bad {
    std::vector<int64_t> indices, bounds;
    BagCheck::Kind kind;
    int64_t value;
  };
  const Bad cases[] = {
      {{0, 1, 2}, {1, 3}, BagCheck::FirstOffsetNotZero, 1},
      {{0, 1, 2}, {0, 2, 1}, BagCheck::OffsetsDecrease, 1},
      {{0, 1, 2}, {0, 1, 4}, BagCheck::OffsetPastEnd, 4},
      {{0, 4, 2}, {0, 1, 3}, BagCheck::BadIndex, 4},
      {{0, -1, 2}, {0, 3}, BagCheck::BadIndex, -1},
      {{0, 9, 2}, {2, 3}, BagCheck::FirstOffsetNotZero, 2},  // offsets are checked first
  };
  for (const Bad& c : cases) {
    EmbeddingBagArgs a;
    a.type = type;
    a.num_weights = 4;
    a.dim = 2;
    a.weight = weight.data();
    a.weight_row_stride = 2;
    a.num_indices = static_cast<int64_t>(c.indices.size());
    a.num_bags = static_cast<int64_t>(c.bounds.size()) - 1;
    a.indices = c.indices.data();
    a.bounds = c.bounds.data();
    Buffer out(type, a.num_bags * 2), out_ref(type, a.num_bags * 2);
    std::vector<int64_t> o2b(c.indices.size(), -5), o2b_ref(o2b), size(static_cast<size_t>(a.num_bags), -5), size_ref(size);
    const BagCheck got = embedding_bag(a, out.data(), o2b.data(), size.data(), nullptr);
    const BagCheck want = embedding_bag_ref(a, out_ref.data(), o2b_ref.data(), size_ref.data(), nullptr);
    EXPECT_EQ(got.kind, c.kind);
    EXPECT_EQ(got.value, c.value);
    EXPECT_EQ(want.kind, got.kind);
    EXPECT_EQ(want.value, got.value);
    EXPECT_TRUE(same_buffers(out, Buffer(type, out.count())));
    EXPECT_TRUE(same_buffers(out_ref, Buffer(type, out.count())));
    EXPECT_EQ(o2b, std::vector<int64_t>(c.indices.size(), -5));
    EXPECT_EQ(o2b_ref, o2b);
    EXPECT_EQ(size_ref, size);
  }
}

}  // namespace
}  // namespace mlu::kernels
