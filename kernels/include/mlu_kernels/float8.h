// The four 8-bit floating formats PyTorch has (float8_e4m3fn, float8_e5m2,
// float8_e4m3fnuz, float8_e5m2fnuz): storage types holding raw bits, with no
// arithmetic of their own, converted through float exactly as c10 converts
// them (torch/headeronly/util/Float8_*.h):
// - float -> fp8 rounds to nearest even. Overflow: e4m3fn saturates to +-448
//   (infinities too), e5m2 gives +-inf, the fnuz types give their one NaN
//   (0x80). NaN: e4m3fn and e5m2 give sign | 0x7F, fnuz 0x80. The fnuz types
//   have no -0 (a negative underflow gives 0x00).
// - fp8 -> float is exact, NaN payloads as c10 makes them (e4m3fn: sign |
//   0x7FF00000; e5m2: the float16 NaN widened and quieted; fnuz: 0x7F800001).
// Other types convert through float (double rounding for float64, as on the
// CPU): see convert.h.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "mlu_kernels/half.h"

namespace mlu::kernels {

struct Float8_e4m3fn {
  uint8_t x;
};
struct Float8_e5m2 {
  uint8_t x;
};
struct Float8_e4m3fnuz {
  uint8_t x;
};
struct Float8_e5m2fnuz {
  uint8_t x;
};

namespace detail {

// One format's bit layout: kMantissa stored mantissa bits, exponent bias
// kBias, kFnuz: no infinities, no -0, one NaN (0x80).
template <int kMantissa, int kBias, bool kFnuz>
struct Float8Format {
  static constexpr int mantissa = kMantissa;
  static constexpr int exponent = 7 - kMantissa;
  static constexpr int bias = kBias;
  static constexpr bool fnuz = kFnuz;
};

template <class T>
struct float8_format;
template <>
struct float8_format<Float8_e4m3fn> : Float8Format<3, 7, false> {};
template <>
struct float8_format<Float8_e5m2> : Float8Format<2, 15, false> {};
template <>
struct float8_format<Float8_e4m3fnuz> : Float8Format<3, 8, true> {};
template <>
struct float8_format<Float8_e5m2fnuz> : Float8Format<2, 16, true> {};

template <class T>
inline constexpr bool is_float8_v = false;
template <>
inline constexpr bool is_float8_v<Float8_e4m3fn> = true;
template <>
inline constexpr bool is_float8_v<Float8_e5m2> = true;
template <>
inline constexpr bool is_float8_v<Float8_e4m3fnuz> = true;
template <>
inline constexpr bool is_float8_v<Float8_e5m2fnuz> = true;

// The float32 bits of the fp8 value `x` (exact; the NaNs as c10 makes them).
template <class T>
constexpr uint32_t float8_to_float_bits(uint8_t x) {
  using F = float8_format<T>;
  const uint32_t sign = static_cast<uint32_t>(x & 0x80) << 24;
  const uint32_t exponent = (x >> F::mantissa) & ((1u << F::exponent) - 1);
  const uint32_t mantissa = x & ((1u << F::mantissa) - 1);
  if constexpr (F::fnuz) {
    if (x == 0x80) return UINT32_C(0x7F800001);
  } else if constexpr (F::mantissa == 3) {
    if ((x & 0x7F) == 0x7F) return sign | UINT32_C(0x7FF00000);
  } else {
    if (exponent == 31) {
      return mantissa == 0 ? sign | UINT32_C(0x7F800000) : sign | UINT32_C(0x7FC00000) | (mantissa << 21);
    }
  }
  if (exponent == 0) {
    if (mantissa == 0) return sign;
    // mantissa * 2^(1 - bias - kMantissa), exact: normalise it.
    int e = 1 - F::bias;
    uint32_t m = mantissa;
    while ((m & (1u << F::mantissa)) == 0) {
      m <<= 1;
      --e;
    }
    return sign | (static_cast<uint32_t>(e + 127) << 23) | ((m & ((1u << F::mantissa) - 1)) << (23 - F::mantissa));
  }
  return sign | ((exponent - F::bias + 127) << 23) | (mantissa << (23 - F::mantissa));
}

template <class T>
constexpr std::array<uint32_t, 256> make_float8_table() {
  std::array<uint32_t, 256> table{};
  for (int x = 0; x < 256; ++x) table[x] = float8_to_float_bits<T>(static_cast<uint8_t>(x));
  return table;
}

template <class T>
inline constexpr std::array<uint32_t, 256> kFloat8ToFloat = make_float8_table<T>();

}  // namespace detail

// float -> T, rounded to nearest even as c10 does (T: one of the four types).
// c10's algorithm, written branch-free (select_bits) so loops vectorise.
// Normal results round in integer arithmetic; subnormal ones by adding a
// power of two that puts the fp8 ulp at the float's last bit (the FPU
// rounds: needs the default rounding mode and no flush-to-zero, as c10).
template <class T>
inline T float8_from_float(float f) {
  using F = detail::float8_format<T>;
  constexpr int shift = 23 - F::mantissa;
  constexpr uint32_t min_normal = static_cast<uint32_t>(127 - F::bias + 1) << 23;
  constexpr uint32_t magic = static_cast<uint32_t>((127 - F::bias) + shift + 1) << 23;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = bits & UINT32_C(0x80000000);
  bits ^= sign;
  const uint32_t normal =
      (bits + (static_cast<uint32_t>(F::bias - 127) << 23) + ((1u << (shift - 1)) - 1) + ((bits >> shift) & 1)) >>
      shift;
  const uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(bits) + std::bit_cast<float>(magic)) - magic;
  uint32_t r = detail::select_bits(bits < min_normal, subnormal, normal) & 0xFF;
  const bool nan = bits > UINT32_C(0x7F800000);
  if constexpr (F::fnuz) {
    // Past the largest value (a round-up carrying into 0x80 included) is NaN.
    constexpr uint32_t overflow = F::mantissa == 3 ? UINT32_C(0x87) << 23 : UINT32_C(0x8F) << 23;
    r = detail::select_bits(r == 0, 0, r | (sign >> 24));
    r = detail::select_bits(bits >= overflow, 0x80, r);
  } else if constexpr (F::mantissa == 3) {
    constexpr uint32_t overflow = UINT32_C(1087) << 20;  // 480: rounds past 448
    r = detail::select_bits(r == 0x7F, 0x7E, r);
    r = detail::select_bits(bits >= overflow, detail::select_bits(nan, 0x7F, 0x7E), r) | (sign >> 24);
  } else {
    constexpr uint32_t overflow = UINT32_C(143) << 23;  // 65536: rounds past 57344
    r = detail::select_bits(bits >= overflow, detail::select_bits(nan, 0x7F, 0x7C), r) | (sign >> 24);
  }
  return T{static_cast<uint8_t>(r)};
}

inline float to_float(Float8_e4m3fn v) { return std::bit_cast<float>(detail::kFloat8ToFloat<Float8_e4m3fn>[v.x]); }
inline float to_float(Float8_e5m2 v) { return std::bit_cast<float>(detail::kFloat8ToFloat<Float8_e5m2>[v.x]); }
inline float to_float(Float8_e4m3fnuz v) { return std::bit_cast<float>(detail::kFloat8ToFloat<Float8_e4m3fnuz>[v.x]); }
inline float to_float(Float8_e5m2fnuz v) { return std::bit_cast<float>(detail::kFloat8ToFloat<Float8_e5m2fnuz>[v.x]); }

}  // namespace mlu::kernels
