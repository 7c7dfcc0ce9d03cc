// The attention row routines for one instruction set (compiled once per ISA,
// like softmax_isa.cpp): exp on SLEEF through vector_math.h, the max and the
// sums in 16 independent lanes so they vectorise.
#include <algorithm>
#include <cstring>
#include <limits>

#include "../common/native_lanes.h"
#include "../pointwise/vector_math.h"
#include "attention_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

constexpr int kLanes = 16;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

// By reference: a 64-byte vector passed by value changes the ABI without AVX-512.
void load_lanes(Lanes& v, const float* x) { std::memcpy(&v, x, sizeof v); }

float lane_sum(const Lanes& v) {
  float s = 0;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// One register wide: Note [Folds in register-wide vectors].
float row_max(const float* x, int64_t n) {
  using V = Native<float>::V;
  constexpr int64_t kWidth = Native<float>::kWidth;
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  V part = V{} + kLowest;
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    V v;
    std::memcpy(&v, x + j, sizeof v);
    part = ((v != v) | (v > part)) ? v : part;
  }
  float result = fold_halves<float, sizeof(V)>(part, MaxLanesKeepingNaN{});
  for (; j < n; ++j) result = (x[j] != x[j] || x[j] > result) ? x[j] : result;
  return result;
}

// Subtract, exp, store and sum fused, one register-wide vector at a time (a
// pass per step over short rows cost more than the exps: BERT's 32-key rows
// spent a quarter of the attention here); the tail is padded with -inf,
// whose exp adds 0.
float exp_sum(float* x, int64_t n, float shift) {
  using VT = Vec<float>;
  using V = typename VT::V;
  constexpr int W = VT::W;
  const V shift_v = V{} + shift;
  V acc{};
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    const V e = Exp<float>::fn(VT::load(x + j) - shift_v);
    acc += e;
    VT::store(x + j, e);
  }
  if (j < n) {
    float pad[W];
    std::fill_n(pad, W, -std::numeric_limits<float>::infinity());
    for (int64_t k = j; k < n; ++k) pad[k - j] = x[k] - shift;
    const V e = Exp<float>::fn(VT::load(pad));
    acc += e;
    VT::store(pad, e);
    std::copy_n(pad, n - j, x + j);
  }
  return fold_halves<float, sizeof(V)>(acc, AddLanes{});
}

void softmax_grad(float* dp, const float* p, int64_t n, float d) {
  for (int64_t j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - d);
}

float dot(const float* a, const float* b, int64_t n) {
  Lanes acc = {};
  float tail = 0;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    Lanes x, y;
    load_lanes(x, a + j);
    load_lanes(y, b + j);
    acc += x * y;
  }
  for (; j < n; ++j) tail += a[j] * b[j];
  return lane_sum(acc) + tail;
}

}  // namespace

const detail::AttentionRowFns& attention_rows() {
  static const detail::AttentionRowFns fns{row_max, exp_sum, softmax_grad, dot};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
