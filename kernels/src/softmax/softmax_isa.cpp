// Softmax rows for one instruction set (compiled once per ISA, like
// pointwise_isa.cpp): exp and log on SLEEF through vector_math.h, the max and
// the sums in 16 independent lanes so they vectorise (a single accumulator
// would not: float addition does not reassociate).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../common/native_lanes.h"
#include "../pointwise/vector_math.h"
#include "softmax_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

constexpr int kLanes = 16;

// A log_softmax sum or log-sum rounded as `rounding` says (softmax_table.h).
template <class T>
T round_log_sum(T v, detail::LogSumRounding rounding) {
  if constexpr (std::is_same_v<T, float>) {
    if (rounding == detail::LogSumRounding::Half) return to_float(half_from_float(v));
    if (rounding == detail::LogSumRounding::BFloat16) return to_float(bfloat16_from_float(v));
  }
  return v;
}

// The row's maximum; NaN if any element is NaN. Written on GCC vector
// types: GCC does not vectorise the NaN-aware select from scalar code. Four
// independent accumulators: with one, every compare-and-select waited for the
// previous one (softmax of 1024 x 1024 bfloat16 spent half its time here).
// One register wide: Note [Folds in register-wide vectors].
template <class T>
T row_max(const T* x, int64_t len) {
  using Lanes = typename Native<T>::V;
  constexpr int kWidth = Native<T>::kWidth, kParts = 4;
  constexpr T kLowest = -std::numeric_limits<T>::infinity();
  auto keep_max = [](Lanes a, Lanes v) { return ((v != v) | (v > a)) ? v : a; };
  Lanes part[kParts];
  for (Lanes& p : part) {
    for (int l = 0; l < kWidth; ++l) p[l] = kLowest;
  }
  int64_t i = 0;
  for (; i + kParts * kWidth <= len; i += kParts * kWidth) {
    for (int k = 0; k < kParts; ++k) {
      Lanes v;
      std::memcpy(&v, x + i + k * kWidth, sizeof v);
      part[k] = keep_max(part[k], v);
    }
  }
  for (; i + kWidth <= len; i += kWidth) {
    Lanes v;
    std::memcpy(&v, x + i, sizeof v);
    part[0] = keep_max(part[0], v);
  }
  for (int k = 1; k < kParts; ++k) part[0] = keep_max(part[0], part[k]);
  T result = fold_halves<T, sizeof(Lanes)>(part[0], MaxLanesKeepingNaN{});
  for (; i < len; ++i) result = (x[i] != x[i] || x[i] > result) ? x[i] : result;
  return result;
}

template <class T>
T lane_sum(const T* lanes) {
  T s = 0;
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  return s;
}

// Sum of exp(x - max) over the row, one vector at a time (subtract, exp,
// accumulate and store fused: the block-wise form made four passes over
// each block and spent a tenth of bfloat16 softmax copying blocks out); with
// `keep`, the exponentials are stored to out (which may be x: each vector is
// read first). The tail is padded with -inf, whose exp adds 0.
template <class T>
T exp_sum(T* out, const T* x, int64_t len, T max, bool keep) {
  using VT = Vec<T>;
  constexpr int W = VT::W;
  const typename VT::V shift = typename VT::V{} + max;  // max in every lane
  typename VT::V acc{};
  int64_t i = 0;
  for (; i + W <= len; i += W) {
    const typename VT::V e = Exp<T>::fn(VT::load(x + i) - shift);
    acc += e;
    if (keep) VT::store(out + i, e);
  }
  if (i < len) {
    std::array<T, W> pad;
    pad.fill(-std::numeric_limits<T>::infinity());
    for (int64_t k = i; k < len; ++k) pad[k - i] = x[k] - max;
    const typename VT::V e = Exp<T>::fn(VT::load(pad.data()));
    acc += e;
    VT::store(pad.data(), e);
    if (keep) std::copy_n(pad.data(), len - i, out + i);
  }
  std::array<T, W> lanes;
  VT::store(lanes.data(), acc);
  T sum = 0;
  for (int l = 0; l < W; ++l) sum += lanes[l];
  return sum;
}

template <class T>
void forward(T* out, const T* in, int64_t len, bool log, detail::LogSumRounding rounding) {
  const T max = row_max(in, len);
  if (log) {
    const T sum = round_log_sum(exp_sum(out, in, len, max, false), rounding);
    const T log_sum = round_log_sum(std::log(sum), rounding);
    for (int64_t i = 0; i < len; ++i) out[i] = in[i] - max - log_sum;
  } else {
    const T inverse = T(1) / exp_sum(out, in, len, max, true);
    for (int64_t i = 0; i < len; ++i) out[i] *= inverse;
  }
}

template <class T>
void backward(T* grad_input, const T* grad, const T* output, int64_t len, bool log) {
  T acc[kLanes] = {};
  T tail = 0;
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += log ? grad[i + l] : grad[i + l] * output[i + l];
  }
  for (; i < len; ++i) tail += log ? grad[i] : grad[i] * output[i];
  const T sum = lane_sum(acc) + tail;
  if (!log) {
    for (int64_t k = 0; k < len; ++k) grad_input[k] = output[k] * (grad[k] - sum);
    return;
  }
  T block[kBlock];
  for (int64_t b = 0; b < len; b += kBlock) {
    const int64_t n = std::min<int64_t>(kBlock, len - b);
    map1<T, Exp<T>::fn>(n, block, output + b);
    for (int64_t k = 0; k < n; ++k) grad_input[b + k] = grad[b + k] - block[k] * sum;
  }
}

// Note [Softmax by columns]
// Softmax over dim 0 of a contiguous matrix: every column is a softmax row,
// its elements one matrix row apart. A block of up to kColumns neighbouring
// columns is done together, each pass walking the block row by row over
// contiguous segments (vectorised across the columns), as the CPU's
// _vec_softmax does: the max, then exp(x - max) with its sum (stored for
// softmax), then the scaling. Each column sums in order, like the CPU.
//
// The storage type S is T, or BFloat16 with T = float: then elements are
// widened as they are loaded and rounded as they are stored, in the same
// loops (no converted copy of the block), and softmax keeps its
// exponentials in a per-thread float buffer, so each output is rounded once,
// as on the CPU.
template <class T, class S>
inline T load(S x) {
  if constexpr (std::is_same_v<S, T>) {
    return x;
  } else {
    return to_float(x);
  }
}

template <class S, class T>
inline S store(T x) {
  if constexpr (std::is_same_v<S, T>) {
    return x;
  } else {
    return bfloat16_from_float(x);
  }
}

template <class T, class S>
void forward_columns(S* out, int64_t out_step, const S* in, int64_t in_step, int64_t len, int64_t width, bool log,
                     detail::LogSumRounding rounding) {
  constexpr int64_t kCols = detail::kColumns;
  constexpr bool kConverted = !std::is_same_v<S, T>;
  T max[kCols], sum[kCols] = {}, e[kCols];
  for (int64_t c = 0; c < width; ++c) max[c] = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < len; ++j) {
    const S* x = in + j * in_step;
    for (int64_t c = 0; c < width; ++c) {
      const T v = load<T>(x[c]);
      max[c] = ((v != v) | (v > max[c])) ? v : max[c];
    }
  }
  // Softmax's exponentials: in the output, or for a converted output in a
  // float buffer (len rows of `width`).
  thread_local vector<T> exps;
  T* kept = nullptr;
  int64_t kept_step = 0;
  if (!log) {
    if constexpr (kConverted) {
      if (exps.size() < static_cast<size_t>(len * width)) exps.resize(static_cast<size_t>(len * width));
      kept = exps.data();
      kept_step = width;
    } else {
      kept = out;
      kept_step = out_step;
    }
  }
  for (int64_t j = 0; j < len; ++j) {
    const S* x = in + j * in_step;
    for (int64_t c = 0; c < width; ++c) e[c] = load<T>(x[c]) - max[c];
    map1<T, Exp<T>::fn>(width, e, e);
    for (int64_t c = 0; c < width; ++c) sum[c] += e[c];
    if (!log) std::copy_n(e, width, kept + j * kept_step);
  }
  if (log) {
    for (int64_t c = 0; c < width; ++c) {
      sum[c] = round_log_sum(std::log(round_log_sum(sum[c], rounding)), rounding);
    }
    for (int64_t j = 0; j < len; ++j) {
      const S* x = in + j * in_step;
      S* o = out + j * out_step;
      for (int64_t c = 0; c < width; ++c) o[c] = store<S>(load<T>(x[c]) - max[c] - sum[c]);
    }
    return;
  }
  for (int64_t c = 0; c < width; ++c) sum[c] = T(1) / sum[c];
  for (int64_t j = 0; j < len; ++j) {
    const T* k = kept + j * kept_step;
    S* o = out + j * out_step;
    for (int64_t c = 0; c < width; ++c) o[c] = store<S>(k[c] * sum[c]);
  }
}

template <class T, class S>
void backward_columns(S* grad_input, int64_t gi_step, const S* grad, int64_t grad_step, const S* output,
                      int64_t out_step, int64_t len, int64_t width, bool log) {
  constexpr int64_t kCols = detail::kColumns;
  T sum[kCols] = {}, e[kCols], o[kCols];
  for (int64_t j = 0; j < len; ++j) {
    const S* g = grad + j * grad_step;
    const S* y = output + j * out_step;
    for (int64_t c = 0; c < width; ++c) sum[c] += log ? load<T>(g[c]) : load<T>(g[c]) * load<T>(y[c]);
  }
  for (int64_t j = 0; j < len; ++j) {
    const S* g = grad + j * grad_step;
    const S* y = output + j * out_step;
    S* gi = grad_input + j * gi_step;
    for (int64_t c = 0; c < width; ++c) o[c] = load<T>(y[c]);
    if (log) {
      map1<T, Exp<T>::fn>(width, e, o);
      for (int64_t c = 0; c < width; ++c) gi[c] = store<S>(load<T>(g[c]) - e[c] * sum[c]);
    } else {
      for (int64_t c = 0; c < width; ++c) gi[c] = store<S>(o[c] * (load<T>(g[c]) - sum[c]));
    }
  }
}

}  // namespace

const detail::SoftmaxRows& softmax_rows() {
  static const detail::SoftmaxRows rows{
      {&forward<float>, &backward<float>, &forward_columns<float, float>, &backward_columns<float, float>},
      {&forward<double>, &backward<double>, &forward_columns<double, double>, &backward_columns<double, double>},
      {&forward_columns<float, BFloat16>, &backward_columns<float, BFloat16>}};
  return rows;
}

}  // namespace mlu::kernels::MLU_ISA_NS
