// Softmax rows for one instruction set (compiled once per ISA, like
// pointwise_isa.cpp): exp and log on SLEEF through vector_math.h, the max and
// the sums in 16 independent lanes so they vectorise (a single accumulator
// would not: float addition does not reassociate).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "../pointwise/vector_math.h"
#include "rows.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

constexpr int kLanes = 16;

// The row's maximum; NaN if any element is NaN. Written on GCC vector
// types: GCC does not vectorise the NaN-aware select from scalar code.
template <class T>
T row_max(const T* x, int64_t len) {
  typedef T Lanes __attribute__((vector_size(64)));
  constexpr int kWidth = 64 / sizeof(T);
  constexpr T kLowest = -std::numeric_limits<T>::infinity();
  Lanes part;
  for (int l = 0; l < kWidth; ++l) part[l] = kLowest;
  int64_t i = 0;
  for (; i + kWidth <= len; i += kWidth) {
    Lanes v;
    std::memcpy(&v, x + i, sizeof v);
    part = ((v != v) | (v > part)) ? v : part;
  }
  T result = kLowest;
  for (int l = 0; l < kWidth; ++l) result = (part[l] != part[l] || part[l] > result) ? part[l] : result;
  for (; i < len; ++i) result = (x[i] != x[i] || x[i] > result) ? x[i] : result;
  return result;
}

template <class T>
T lane_sum(const T* lanes) {
  T s = 0;
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  return s;
}

// Sum of exp(x - max) over the row, block by block; with `keep`, the
// exponentials are stored to out (which may be x: each block is read first).
template <class T>
T exp_sum(T* out, const T* x, int64_t len, T max, bool keep) {
  T acc[kLanes] = {};
  T tail = 0;
  T block[kBlock];
  for (int64_t b = 0; b < len; b += kBlock) {
    const int64_t n = std::min<int64_t>(kBlock, len - b);
    for (int64_t i = 0; i < n; ++i) block[i] = x[b + i] - max;
    map1<T, Sleef<T>::exp>(n, block, block);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) acc[l] += block[i + l];
    }
    for (; i < n; ++i) tail += block[i];
    if (keep) std::copy_n(block, n, out + b);
  }
  return lane_sum(acc) + tail;
}

template <class T>
void forward(T* out, const T* in, int64_t len, bool log) {
  const T max = row_max(in, len);
  if (log) {
    const T log_sum = std::log(exp_sum(out, in, len, max, false));
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
    map1<T, Sleef<T>::exp>(n, block, output + b);
    for (int64_t k = 0; k < n; ++k) grad_input[b + k] = grad[b + k] - block[k] * sum;
  }
}

}  // namespace

const detail::SoftmaxRows& softmax_rows() {
  static const detail::SoftmaxRows rows{{&forward<float>, &backward<float>}, {&forward<double>, &backward<double>}};
  return rows;
}

}  // namespace mlu::kernels::MLU_ISA_NS
