// Max pooling's loops, compiled once per ISA (Note [Per-ISA variants]);
// pool.cpp splits calls over the compute threads.
//
// Note [Max pooling by window offsets]
// Every plane of a call has the same windows, so pool.cpp works them out
// once (MaxPoolPlan): each output's first position, and the offsets of the
// window's positions from it (the taps, in the window's order: depth,
// height, width). Outputs whose window lies inside the plane are computed a
// block at a time: for each tap, every output of the block compares the
// element at its first position plus the tap (one output per lane, the
// loads a gather), so short rows (pooled 8x8 maps) run as fast as long
// ones. The comparison is the scalar walk's (larger, or NaN: the first
// maximum, the last NaN), so each output's value and index are those the
// walk gives. Outputs whose window the plane clips (padding, ceil mode) are
// then walked one by one, overwriting what the block wrote for them (read
// from position 0 on: in the plane, as some window lies inside it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "pool_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

using detail::compute_t;
using detail::convert;

constexpr int64_t kBlock = 64;

// [lo, hi) by `step` of one dim's window for output o, clipped to the input.
struct Span {
  int64_t lo, hi, step;
};

inline Span span(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  int64_t lo = o * stride - pad;
  const int64_t hi = std::min(lo + (kernel - 1) * dilation + 1, in);
  while (lo < 0) lo += dilation;
  return {lo, hi, dilation};
}

// The scalar walk of one output's window (depth, height spans; width output ow).
template <class T, class A>
inline void walk(const PoolShape& s, const T* plane, const Span& sd, const Span& sh, int64_t ow, T* out,
                 int64_t* index) {
  const Span sw = span(ow, s.in[2], s.kernel[2], s.stride[2], s.pad[2], s.dilation[2]);
  int64_t best = (sd.lo * s.in[1] + sh.lo) * s.in[2] + sw.lo;
  A best_value = -std::numeric_limits<A>::infinity();
  for (int64_t d = sd.lo; d < sd.hi; d += sd.step) {
    for (int64_t h = sh.lo; h < sh.hi; h += sh.step) {
      const int64_t row = (d * s.in[1] + h) * s.in[2];
      for (int64_t x = sw.lo; x < sw.hi; x += sw.step) {
        const A v = convert<A>(plane[row + x]);
        if (v > best_value || std::isnan(v)) {
          best_value = v;
          best = row + x;
        }
      }
    }
  }
  *out = convert<T>(best_value);
  *index = best;
}

// Outputs [o0, o0 + n) of one plane, n <= kBlock, from their windows' first
// positions `first` and the window's offsets `taps` (pool.cpp's MaxPoolPlan).
template <class In, class T, class A>
inline void block_of_outputs(const In* plane, const int32_t* first, const int32_t* taps, int64_t tap_count, int64_t n,
                             T* out, int64_t* index) {
  A best[kBlock];
  int32_t at[kBlock];
  for (int64_t i = 0; i < n; ++i) {
    best[i] = -std::numeric_limits<A>::infinity();
    at[i] = first[i];
  }
  for (int64_t t = 0; t < tap_count; ++t) {
    const int32_t tap = taps[t];
    for (int64_t i = 0; i < n; ++i) {
      const int32_t position = first[i] + tap;
      const A v = convert<A>(plane[position]);
      const bool take = v > best[i] || v != v;
      best[i] = take ? v : best[i];
      at[i] = take ? position : at[i];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = convert<T>(best[i]);
    index[i] = at[i];
  }
}

template <class T>
void max_pool_planes_typed(const PoolShape& s, const detail::MaxPoolPlan& plan, int64_t lo, int64_t hi, const T* input,
                           T* output, int64_t* indices, float* wide) {
  using A = compute_t<T>;
  const int64_t ip = s.in[0] * s.in[1] * s.in[2], op = s.out[0] * s.out[1] * s.out[2];
  // 16-bit planes are widened first: a gather of 16-bit elements does not
  // vectorise (bfloat16 ran at an eighth of float's speed).
  constexpr bool widened = !std::is_same_v<T, A>;
  for (int64_t p = lo; p < hi; ++p) {
    const T* plane = input + p * ip;
    T* out = output + p * op;
    int64_t* index = indices + p * op;
    if constexpr (widened) {
      if (plan.any_inside) {
        for (int64_t j = 0; j < ip; ++j) wide[j] = convert<A>(plane[j]);
      }
    }
    for (int64_t o = 0; plan.any_inside && o < op; o += kBlock) {
      const auto* from = [&] {
        if constexpr (widened) {
          return static_cast<const A*>(wide);
        } else {
          return plane;
        }
      }();
      block_of_outputs<std::remove_cv_t<std::remove_pointer_t<decltype(from)>>, T, A>(
          from, plan.first + o, plan.taps, plan.tap_count, std::min(kBlock, op - o), out + o, index + o);
    }
    for (int64_t e = 0; e < plan.clipped_count; ++e) {
      const int64_t o = plan.clipped[e];
      const int64_t ow = o % s.out[2], oh = o / s.out[2] % s.out[1], od = o / s.out[2] / s.out[1];
      const Span sd = span(od, s.in[0], s.kernel[0], s.stride[0], s.pad[0], s.dilation[0]);
      const Span sh = span(oh, s.in[1], s.kernel[1], s.stride[1], s.pad[1], s.dilation[1]);
      walk<T, A>(s, plane, sd, sh, ow, out + o, index + o);
    }
  }
}

void max_pool_planes(const PoolShape& s, const detail::MaxPoolPlan& plan, ScalarType type, int64_t lo, int64_t hi,
                     const void* input, void* output, int64_t* indices, float* wide) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_planes_typed<T>(s, plan, lo, hi, static_cast<const T*>(input), static_cast<T*>(output), indices, wide);
  });
}

}  // namespace

const detail::PoolFns& pool_fns() {
  static const detail::PoolFns fns{max_pool_planes};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
