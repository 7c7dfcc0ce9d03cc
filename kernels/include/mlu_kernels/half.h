// Half (IEEE binary16) and BFloat16 (the top 16 bits of a binary32): storage
// types holding raw bits, with no arithmetic of their own. All maths happens in
// float. The conversions are bit-identical to c10::Half / c10::BFloat16 on CPU:
// float -> 16 bit rounds to nearest even, with subnormals and overflow to inf;
// a NaN stays NaN (Half: quieted, the payload's top bits kept, as F16C's
// vcvtps2ph and the CPU's tensor copies do; BFloat16: always 0x7FC0).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace mlu::kernels {

namespace detail {

// Branch-free choice between two bit patterns: loops over the conversions
// below then vectorise (GCC will not if-convert the equivalent ?:).
inline uint32_t select_bits(bool condition, uint32_t if_true, uint32_t if_false) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (if_true & mask) | (if_false & ~mask);
}

}  // namespace detail

struct Half {
  uint16_t x;
};

struct BFloat16 {
  uint16_t x;
};

// Exact: every Half is a float. The algorithm is the one c10 uses (from the
// FP16 library); it relies on float arithmetic only for exact operations.
inline float to_float(Half h) {
  const uint32_t w = static_cast<uint32_t>(h.x) << 16;
  const uint32_t sign = w & UINT32_C(0x80000000);
  const uint32_t two_w = w + w;
  // Normal, inf and NaN: rebias the exponent by 2^112 and scale back.
  const float normalized =
      std::bit_cast<float>((two_w >> 4) + (UINT32_C(0xE0) << 23)) * 0x1.0p-112f;
  // Subnormal: place the mantissa under the exponent of 0.5 and subtract 0.5.
  const float denormalized =
      std::bit_cast<float>((two_w >> 17) | (UINT32_C(126) << 23)) - 0.5f;
  const uint32_t magnitude = detail::select_bits(two_w < (UINT32_C(1) << 27),
                                                 std::bit_cast<uint32_t>(denormalized),
                                                 std::bit_cast<uint32_t>(normalized));
  return std::bit_cast<float>(sign | magnitude);
}

// Round to nearest even (as c10). Needs the default FP rounding mode and no
// -ffast-math reassociation, like c10's own implementation.
inline Half half_from_float(float f) {
  // Scaling by 2^112 then 2^-110 overflows to inf exactly when f rounds to inf.
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & UINT32_C(0x80000000);
  const uint32_t bias = std::max(shl1_w & UINT32_C(0xFF000000), UINT32_C(0x71000000));
  // Adding a power of two aligned to the half ulp makes the FPU do the rounding.
  base = std::bit_cast<float>((bias >> 1) + UINT32_C(0x07800000)) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
  const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
  const uint32_t nan_bits = UINT32_C(0x7E00) | ((w >> 13) & UINT32_C(0x3FF));
  const uint32_t nonsign = detail::select_bits(shl1_w > UINT32_C(0xFF000000), nan_bits, exp_bits + mantissa_bits);
  return Half{static_cast<uint16_t>((sign >> 16) | nonsign)};
}

// Exact: a BFloat16 is the high half of a float.
inline float to_float(BFloat16 b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b.x) << 16);
}

// Round to nearest even (as c10::detail::round_to_nearest_even); NaN -> 0x7FC0.
// Branch-free, so loops of it vectorise.
inline BFloat16 bfloat16_from_float(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounding_bias = ((u >> 16) & 1) + UINT32_C(0x7FFF);
  const uint32_t rounded = (u + rounding_bias) >> 16;
  const bool nan = (u & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000);
  return BFloat16{static_cast<uint16_t>(detail::select_bits(nan, UINT32_C(0x7FC0), rounded))};
}

}  // namespace mlu::kernels
