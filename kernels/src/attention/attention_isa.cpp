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

// Note [Score rows together]
// A row of BERT's 32 scores is two vectors: its max (a fold of log2(lanes)
// dependent steps), then its exps (a chain of ~14 dependent instructions)
// and their fold leave the core waiting on latency, one row after the other
// (perf: row max and exp sum 37% of a masked 32-key attention). Rows of the
// same length are independent, so they are taken kRowsTogether at a time,
// their steps interleaved in one loop body, and the chains overlap.
constexpr int kRowsTogether = 4;

void max_rows(const float* x, int64_t ld, int64_t rows, int64_t n, float* out) {
  using V = Native<float>::V;
  constexpr int64_t kWidth = Native<float>::kWidth;
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  int64_t r = 0;
  for (; r + kRowsTogether <= rows && n >= kWidth; r += kRowsTogether) {
    V part[kRowsTogether];
    for (V& p : part) p = V{} + kLowest;
    int64_t j = 0;
    for (; j + kWidth <= n; j += kWidth) {
      for (int k = 0; k < kRowsTogether; ++k) {
        V v;
        std::memcpy(&v, x + (r + k) * ld + j, sizeof v);
        part[k] = ((v != v) | (v > part[k])) ? v : part[k];
      }
    }
    for (int k = 0; k < kRowsTogether; ++k) {
      float result = fold_halves<float, sizeof(V)>(part[k], MaxLanesKeepingNaN{});
      const float* row = x + (r + k) * ld;
      for (int64_t t = j; t < n; ++t) result = (row[t] != row[t] || row[t] > result) ? row[t] : result;
      out[r + k] = result;
    }
  }
  for (; r < rows; ++r) out[r] = row_max(x + r * ld, n);
}

void exp_sum_rows(float* x, int64_t ld, int64_t rows, int64_t n, const float* shift, float* sum) {
  using VT = Vec<float>;
  using V = typename VT::V;
  constexpr int W = VT::W;
  int64_t r = 0;
  for (; r + kRowsTogether <= rows && n >= W; r += kRowsTogether) {
    V shift_v[kRowsTogether], acc[kRowsTogether];
    for (int k = 0; k < kRowsTogether; ++k) {
      shift_v[k] = V{} + shift[r + k];
      acc[k] = V{};
    }
    int64_t j = 0;
    for (; j + W <= n; j += W) {
      for (int k = 0; k < kRowsTogether; ++k) {
        float* row = x + (r + k) * ld;
        const V e = Exp<float>::fn(VT::load(row + j) - shift_v[k]);
        acc[k] += e;
        VT::store(row + j, e);
      }
    }
    for (int k = 0; k < kRowsTogether; ++k) {
      sum[r + k] = fold_halves<float, sizeof(V)>(acc[k], AddLanes{}) +
                   (j < n ? exp_sum(x + (r + k) * ld + j, n - j, shift[r + k]) : 0.0f);
    }
  }
  for (; r < rows; ++r) sum[r] = exp_sum(x + r * ld, n, shift[r]);
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
  static const detail::AttentionRowFns fns{row_max, exp_sum, softmax_grad, dot, max_rows, exp_sum_rows};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
