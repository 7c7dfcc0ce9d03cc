// convert<To>(from): one element's dtype conversion with PyTorch's semantics
// (c10::convert / static_cast_with_inter_type). Half and BFloat16 go through
// float; the Float8 types go through float both ways (float64 sources
// round twice, as on the CPU); complex -> real takes the real part; -> Bool is x != 0 (complex: either
// part); -> UInt8 goes through int64 like c10. A floating value that is NaN or
// out of the integer destination's range is undefined, as in C++ and PyTorch.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "mlu_kernels/float8.h"
#include "mlu_kernels/half.h"
#include "isa_variants.h"

namespace mlu::kernels::detail {
inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

template <class T>
inline constexpr bool is_complex_v = false;
template <class V>
inline constexpr bool is_complex_v<std::complex<V>> = true;

// The real floating element types: float, double, Half, BFloat16.
template <class T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type arithmetic happens in: float for the 16-bit storage types.
inline float widen(Half v) { return to_float(v); }
inline float widen(BFloat16 v) { return to_float(v); }
inline float widen(Float8_e4m3fn v) { return to_float(v); }
inline float widen(Float8_e5m2 v) { return to_float(v); }
inline float widen(Float8_e4m3fnuz v) { return to_float(v); }
inline float widen(Float8_e5m2fnuz v) { return to_float(v); }
template <class T>
inline T widen(T v) { return v; }
// The type a floating T computes in: float for the 16-bit types, else T.
template <class T>
using compute_t = decltype(widen(std::declval<T>()));

template <class T>
inline auto real_part(T v) {
  if constexpr (is_complex_v<T>) {
    return v.real();
  } else {
    return v;
  }
}

template <class To, class From>
inline To convert(From from) {
  if constexpr (std::is_same_v<To, From>) {
    return from;
  } else {
    const auto v = widen(from);
    using V = std::remove_cv_t<decltype(v)>;
    if constexpr (std::is_same_v<To, bool>) {
      if constexpr (is_complex_v<V>) {
        return v.real() != 0 || v.imag() != 0;
      } else {
        return v != 0;
      }
    } else if constexpr (is_complex_v<To>) {
      using R = typename To::value_type;
      if constexpr (is_complex_v<V>) {
        return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
      } else {
        return To(static_cast<R>(v), R(0));
      }
    } else if constexpr (std::is_same_v<To, Half>) {
      return half_from_float(static_cast<float>(real_part(v)));
    } else if constexpr (std::is_same_v<To, BFloat16>) {
      return bfloat16_from_float(static_cast<float>(real_part(v)));
    } else if constexpr (is_float8_v<To>) {
      return float8_from_float<To>(static_cast<float>(real_part(v)));
    } else if constexpr (std::is_same_v<To, uint8_t>) {
      return static_cast<uint8_t>(static_cast<int64_t>(real_part(v)));
    } else {
      return static_cast<To>(real_part(v));
    }
  }
}

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::detail
