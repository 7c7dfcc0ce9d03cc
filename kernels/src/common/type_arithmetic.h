// TypeArithmetic<T>: arithmetic in an element type's own precision, as the
// CPU's scalar code does with c10::Half / c10::BFloat16 operands: every
// + - * / is computed in float and rounded to the 16-bit type before the
// next one. For float and double it is plain arithmetic. Kernels that must
// give the CPU's bits where the CPU accumulates or steps in scalar_t
// (linspace, nll_loss's sums) use it; everywhere else the kernels compute in
// compute_t<T> and round once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "convert.h"

namespace mlu::kernels::detail {

template <class T>
struct TypeArithmetic {
  using C = compute_t<T>;
  // A double or an integer as the CPU converts it to T (16-bit: through float).
  template <class V>
  static T from(V v) {
    if constexpr (std::is_same_v<T, C>) {
      return static_cast<T>(v);
    } else {
      return convert<T>(static_cast<float>(v));
    }
  }
  static T neg(T a) { return convert<T>(static_cast<C>(-widen(a))); }
  static T add(T a, T b) { return convert<T>(static_cast<C>(widen(a) + widen(b))); }
  static T sub(T a, T b) { return convert<T>(static_cast<C>(widen(a) - widen(b))); }
  static T mul(T a, T b) { return convert<T>(static_cast<C>(widen(a) * widen(b))); }
  static T div(T a, T b) { return convert<T>(static_cast<C>(widen(a) / widen(b))); }
};

}  // namespace mlu::kernels::detail
