// The fused optimizer steps against their double references
// (optimizer_ref.cpp): Adam / AdamW (amsgrad, maximize, weight decay, bias
// correction on and off, first and later steps), SGD (momentum, dampening,
// nesterov, first step), Adagrad (lr decay), each with and without a
// grad_scale (the unscaled gradient is stored back), on lengths 0, 1, odd
// ones and one of three thread chunks (grain 16384; a few variants only, to
// keep the file fast), every floating dtype.
// Every state the step writes is compared. Tolerance: ref_compare.h's per
// dtype (Float32 1e-5: a handful of float roundings per element; 16-bit one
// ulp: both round the same value once), relative to the largest element of
// that state.
#include "mlu_kernels/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class OptimizerTest : public ::testing::TestWithParam<ScalarType> {};

constexpr int64_t kLengths[] = {0, 1, 7, 15, 17, 33, 40000};

// The state of one step: the kernel's buffers and the reference's copies.
struct State {
  std::vector<Buffer> kernel, ref;
  std::vector<std::string> names;
  void add(const std::string& name, Buffer b) {
    ref.push_back(clone(b));
    kernel.push_back(std::move(b));
    names.push_back(name);
  }
  void* k(size_t i) { return kernel[i].data(); }
  void* r(size_t i) { return ref[i].data(); }
  ::testing::AssertionResult compare() const {
    for (size_t i = 0; i < kernel.size(); ++i) {
      const auto result = near_buffers(kernel[i], ref[i], tolerance(ref[i].type(), max_abs(ref[i])));
      if (!result) return ::testing::AssertionFailure() << names[i] << ": " << result.message();
    }
    return ::testing::AssertionSuccess();
  }
};

// param, grad (times `grad_scale`, as a scaler leaves it), then the states.
State make_state(ScalarType type, int64_t n, Rng& rng, float grad_scale) {
  State st;
  st.add("param", normal_buffer(type, n, rng));
  st.add("grad", normal_buffer(type, n, rng, grad_scale));
  return st;
}

TEST_P(OptimizerTest, AdamMatchesReference) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(127 + static_cast<int>(type));
  for (const int64_t n : kLengths) {
    for (int variant = 0; variant < 16; variant += n > 1000 ? 5 : 1) {  // the long length: a few variants
      AdamStep s{};
      s.lr = 1e-2, s.beta1 = 0.9, s.beta2 = 0.999, s.eps = 1e-8;
      s.amsgrad = variant & 1;
      s.maximize = variant & 2;
      s.decoupled_weight_decay = variant & 4;
      s.weight_decay = variant & 8 ? 0.05 : 0.0;
      s.step = variant % 3 == 0 ? 1 : 7;
      s.bias_correction = variant != 5;
      const float scale = variant % 5 == 1 ? 1024.0f : 1.0f;
      const float* grad_scale = variant % 5 == 1 ? &scale : nullptr;
      const std::string what = std::string(scalar_type_name(type)) + " n " + std::to_string(n) + " variant " +
                               std::to_string(variant);
      State st = make_state(type, n, rng, scale);
      st.add("exp_avg", normal_buffer(type, n, rng, 0.1));
      st.add("exp_avg_sq", abs_buffer(normal_buffer(type, n, rng, 0.01)));
      st.add("max_exp_avg_sq", abs_buffer(normal_buffer(type, n, rng, 0.01)));
      adam_step(s, type, n, st.k(0), st.k(1), st.k(2), st.k(3), s.amsgrad ? st.k(4) : nullptr, grad_scale);
      adam_step_ref(s, type, n, st.r(0), st.r(1), st.r(2), st.r(3), s.amsgrad ? st.r(4) : nullptr, grad_scale);
      ASSERT_TRUE(st.compare()) << what;
    }
  }
}

TEST_P(OptimizerTest, SgdMatchesReference) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(131 + static_cast<int>(type));
  for (const int64_t n : kLengths) {
    for (int variant = 0; variant < 16; variant += n > 1000 ? 5 : 1) {  // the long length: a few variants
      SgdStep s{};
      s.lr = 0.1;
      s.momentum = variant & 1 ? 0.9 : 0.0;
      s.dampening = variant & 2 ? 0.1 : 0.0;
      s.nesterov = (variant & 4) && s.dampening == 0;
      s.maximize = variant & 8;
      s.weight_decay = variant % 3 == 0 ? 1e-2 : 0.0;
      s.first_step = variant % 5 == 0;
      const float scale = variant % 3 == 1 ? 0.5f : 1.0f;
      const float* grad_scale = variant % 3 == 1 ? &scale : nullptr;
      const std::string what = std::string(scalar_type_name(type)) + " n " + std::to_string(n) + " variant " +
                               std::to_string(variant);
      State st = make_state(type, n, rng, scale);
      st.add("momentum_buffer", normal_buffer(type, n, rng));
      void* buf = s.momentum != 0 ? st.k(2) : nullptr;
      void* buf_ref = s.momentum != 0 ? st.r(2) : nullptr;
      sgd_step(s, type, n, st.k(0), st.k(1), buf, grad_scale);
      sgd_step_ref(s, type, n, st.r(0), st.r(1), buf_ref, grad_scale);
      ASSERT_TRUE(st.compare()) << what;
    }
  }
}

TEST_P(OptimizerTest, AdagradMatchesReference) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(137 + static_cast<int>(type));
  for (const int64_t n : kLengths) {
    for (int variant = 0; variant < 8; variant += n > 1000 ? 3 : 1) {
      AdagradStep s{};
      s.lr = 0.1;
      s.eps = 1e-10;
      s.lr_decay = variant & 1 ? 0.01 : 0.0;
      s.weight_decay = variant & 2 ? 0.1 : 0.0;
      s.maximize = variant & 4;
      s.step = variant % 3 == 0 ? 1 : 4;
      const float scale = variant % 3 == 2 ? 8.0f : 1.0f;
      const float* grad_scale = variant % 3 == 2 ? &scale : nullptr;
      const std::string what = std::string(scalar_type_name(type)) + " n " + std::to_string(n) + " variant " +
                               std::to_string(variant);
      State st = make_state(type, n, rng, scale);
      st.add("state_sum", abs_buffer(normal_buffer(type, n, rng)));
      adagrad_step(s, type, n, st.k(0), st.k(1), st.k(2), grad_scale);
      adagrad_step_ref(s, type, n, st.r(0), st.r(1), st.r(2), grad_scale);
      ASSERT_TRUE(st.compare()) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OptimizerTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
