#include "mlu_kernels/ctc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

// The oracle: every path of labels over the item's input length, kept when it
// collapses (repeats merged, then blanks dropped) to the target.
struct BruteForce {
  double p = 0;                      // sum of the kept paths' probabilities
  std::vector<double> through;  // [t * C + c]: sum over kept paths with label c at t
};

BruteForce enumerate(const std::vector<double>& probs /* [t * C + c] */, int64_t steps, int64_t labels, int64_t blank,
                     const std::vector<int64_t>& target) {
  BruteForce r;
  r.through.assign(static_cast<size_t>(steps * labels), 0);
  std::vector<int64_t> path(static_cast<size_t>(steps), 0);
  int64_t total = 1;
  for (int64_t t = 0; t < steps; ++t) total *= labels;
  for (int64_t code = 0; code < total; ++code) {
    int64_t rest = code;
    for (int64_t t = 0; t < steps; ++t) {
      path[t] = rest % labels;
      rest /= labels;
    }
    std::vector<int64_t> collapsed;
    for (int64_t t = 0; t < steps; ++t) {
      if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) collapsed.push_back(path[t]);
    }
    if (collapsed != target) continue;
    double q = 1;
    for (int64_t t = 0; t < steps; ++t) q *= probs[t * labels + path[t]];
    r.p += q;
    for (int64_t t = 0; t < steps; ++t) r.through[t * labels + path[t]] += q;
  }
  return r;
}

struct Case {
  std::vector<int64_t> input_lengths, target_lengths;
  std::vector<std::vector<int64_t>> targets;
};

// Items: an empty input with an empty target (loss 0), an empty target, a
// repeated label (needs a blank between), one that cannot fit its input (+inf),
// and two ordinary ones, over T = 5 steps and C = 4 labels, blank 2.
Case make_case() {
  return Case{{0, 4, 5, 3, 5, 2}, {0, 0, 2, 3, 3, 1}, {{}, {}, {1, 1}, {0, 0, 3}, {3, 1, 0}, {3}}};
}

template <class T, class I>
void check_against_brute_force(ScalarType type, ScalarType index_type, bool concatenated) {
  const Case c = make_case();
  const int64_t steps = 5, batch = static_cast<int64_t>(c.input_lengths.size()), labels = 4, blank = 2, max_target = 3;
  // log_probs laid out [N, T, C] and viewed as [T, N, C]: strides (C, T C, 1).
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  std::vector<T> lp(static_cast<size_t>(batch * steps * labels));
  std::vector<std::vector<double>> probs(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    probs[b].resize(static_cast<size_t>(steps * labels));
    for (int64_t t = 0; t < steps; ++t) {
      double sum = 0;
      for (int64_t k = 0; k < labels; ++k) sum += probs[b][t * labels + k] = u(gen);
      for (int64_t k = 0; k < labels; ++k) {
        probs[b][t * labels + k] = static_cast<double>(static_cast<T>(std::log(probs[b][t * labels + k] / sum)));
        lp[(b * steps + t) * labels + k] = static_cast<T>(probs[b][t * labels + k]);
        probs[b][t * labels + k] = std::exp(probs[b][t * labels + k]);
      }
    }
  }
  std::vector<I> targets;
  int64_t batch_stride = 0;
  if (concatenated) {
    for (const auto& t : c.targets) targets.insert(targets.end(), t.begin(), t.end());
  } else {
    batch_stride = max_target;
    targets.assign(static_cast<size_t>(batch * max_target), I(1));  // padding: never read
    for (int64_t b = 0; b < batch; ++b) {
      for (size_t k = 0; k < c.targets[b].size(); ++k) targets[b * max_target + k] = static_cast<I>(c.targets[b][k]);
    }
  }
  CtcProblem p;
  p.type = type;
  p.max_input = steps;
  p.batch = batch;
  p.labels = labels;
  p.blank = blank;
  p.max_target = max_target;
  p.input_lengths = c.input_lengths.data();
  p.target_lengths = c.target_lengths.data();
  p.log_probs = lp.data();
  p.log_probs_strides[0] = labels;
  p.log_probs_strides[1] = steps * labels;
  p.log_probs_strides[2] = 1;
  p.targets = targets.data();
  p.target_type = index_type;
  p.concatenated = concatenated;
  p.target_batch_stride = batch_stride;
  p.target_stride = 1;
  std::vector<T> nll(static_cast<size_t>(batch)), alpha(static_cast<size_t>(batch * steps * (2 * max_target + 1)));
  ASSERT_TRUE(ctc_loss_forward(p, nll.data(), alpha.data()).ok);
  const std::vector<T> grad_out = {T(1), T(0.5), T(-2), T(1), T(3), T(0.25)};
  for (bool zero_infinity : {false, true}) {
    std::vector<T> grad(static_cast<size_t>(steps * batch * labels), T(123));
    ASSERT_TRUE(ctc_loss_backward(p, grad_out.data(), 1, nll.data(), alpha.data(), zero_infinity, grad.data()).ok);
    const double tol = std::is_same_v<T, double> ? 1e-10 : 2e-5;
    for (int64_t b = 0; b < batch; ++b) {
      const BruteForce r = enumerate(probs[b], c.input_lengths[b], labels, blank, c.targets[b]);
      if (r.p == 0) {
        EXPECT_EQ(nll[b], std::numeric_limits<T>::infinity()) << "item " << b;
      } else {
        EXPECT_NEAR(nll[b], -std::log(r.p), tol * (1 + std::abs(std::log(r.p)))) << "item " << b;
      }
      for (int64_t t = 0; t < steps; ++t) {
        for (int64_t k = 0; k < labels; ++k) {
          double want = 0;
          const bool zeroed = zero_infinity && r.p == 0;
          if (t < c.input_lengths[b] && !zeroed) {
            const double share = r.p == 0 ? 0 : r.through[t * labels + k] / r.p;
            want = (probs[b][t * labels + k] - share) * static_cast<double>(grad_out[b]);
          }
          const T got = grad[(t * batch + b) * labels + k];
          if (r.p == 0 && !zeroed && t < c.input_lengths[b]) {
            EXPECT_TRUE(std::isnan(got)) << "item " << b << " t " << t;  // exp(-inf + inf): the CPU's NaN
          } else {
            EXPECT_NEAR(got, want, tol * 4) << "item " << b << " t " << t << " label " << k;
          }
        }
      }
    }
  }
}

TEST(Ctc, MatchesEveryAlignmentSummed) {
  set_num_threads(2);
  check_against_brute_force<double, int64_t>(ScalarType::Float64, ScalarType::Int64, false);
  check_against_brute_force<double, int32_t>(ScalarType::Float64, ScalarType::Int32, true);
  check_against_brute_force<float, int64_t>(ScalarType::Float32, ScalarType::Int64, true);
  check_against_brute_force<float, int32_t>(ScalarType::Float32, ScalarType::Int32, false);
}

TEST(Ctc, LabelOutOfRangeIsReported) {
  const int64_t steps = 3, labels = 3;
  std::vector<float> lp(steps * labels, std::log(1.f / 3));
  const std::vector<int64_t> input_lengths = {3}, target_lengths = {2}, targets = {1, 7};
  CtcProblem p;
  p.max_input = steps;
  p.batch = 1;
  p.labels = labels;
  p.max_target = 2;
  p.input_lengths = input_lengths.data();
  p.target_lengths = target_lengths.data();
  p.log_probs = lp.data();
  p.log_probs_strides[0] = labels;
  p.log_probs_strides[1] = steps * labels;
  p.log_probs_strides[2] = 1;
  p.targets = targets.data();
  p.concatenated = true;
  std::vector<float> nll(1), alpha(steps * 5);
  const IndexCheck check = ctc_loss_forward(p, nll.data(), alpha.data());
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.bad_index, 7);
}

}  // namespace
}  // namespace mlu::kernels
