// Half / BFloat16 conversions: exhaustive over all 16-bit patterns, hand-computed
// rounding cases, and an independent round-to-nearest-even oracle (exact double
// arithmetic over the sorted table of representable values) on many floats.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "mlu_kernels/half.h"

namespace mlu::kernels {
namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// Exact magnitude of a finite binary16 / bfloat16 pattern (sign bit ignored),
// decoded from the IEEE definition.
double half_magnitude(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  return exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
}

double bfloat16_magnitude(uint16_t b) {
  const int exponent = (b >> 7) & 0xFF;
  const int mantissa = b & 0x7F;
  return exponent == 0 ? std::ldexp(mantissa, -133) : std::ldexp(128 + mantissa, exponent - 134);
}

// Round-to-nearest-even of a non-NaN float into a 16-bit format whose positive
// finite patterns [0, max_finite] are ordered by value; inf_bits = max_finite + 1
// stands for the next power of two (IEEE's unbounded-exponent overflow rule).
uint16_t nearest_even(float f, uint16_t max_finite, double (*magnitude)(uint16_t)) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const uint16_t inf_bits = max_finite + 1;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | inf_bits;
  uint16_t lo = 0, hi = max_finite;  // largest pattern with magnitude <= a
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (magnitude(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  const double below = magnitude(lo);
  const double above = lo == max_finite ? 2 * magnitude(max_finite) - magnitude(max_finite - 1)
                                        : magnitude(static_cast<uint16_t>(lo + 1));
  const double down = a - below, up = above - a;
  const bool round_up = up < down || (up == down && (lo & 1));
  return sign | static_cast<uint16_t>(round_up ? lo + 1 : lo);
}

uint16_t half_bits(float f) { return half_from_float(f).x; }
uint16_t bf16_bits(float f) { return bfloat16_from_float(f).x; }

TEST(Half, ToFloatExhaustive) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = to_float(Half{static_cast<uint16_t>(h)});
    const bool negative = (h & 0x8000) != 0;
    const bool special = ((h >> 10) & 0x1F) == 0x1F;
    ASSERT_EQ(std::signbit(f), negative) << std::hex << h;
    if (special && (h & 0x3FF)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
    } else if (special) {
      ASSERT_TRUE(std::isinf(f)) << std::hex << h;
    } else {
      ASSERT_EQ(std::fabs(f), half_magnitude(static_cast<uint16_t>(h))) << std::hex << h;
    }
  }
}

TEST(Half, RoundTripExhaustive) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = half_bits(to_float(Half{bits}));
    const bool nan = (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF);
    if (nan) {
      ASSERT_EQ(back, bits | 0x0200) << std::hex << h;  // quieted, payload kept
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

TEST(Half, FromFloatHandComputed) {
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f), 0x3C00);
  EXPECT_EQ(half_bits(-2.0f), 0xC000);
  EXPECT_EQ(half_bits(0.1f), 0x2E66);
  // Ties to even between 1 and 1 + 2^-10 (even: 1), and 1 + 2^-10 / + 2^-9 (even: 0x3C02).
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(half_bits(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to 0; 3 * 2^-25 ties to 2.
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);
  EXPECT_EQ(half_bits(0x1p-25f * 1.0001f), 0x0001);
  EXPECT_EQ(half_bits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(half_bits(-0x1p-24f), 0x8001);
  EXPECT_EQ(half_bits(1023 * 0x1p-24f), 0x03FF);          // largest subnormal
  EXPECT_EQ(half_bits(1023.5f * 0x1p-24f), 0x0400);       // ties up to the smallest normal
  EXPECT_EQ(half_bits(0x1p-14f), 0x0400);
  EXPECT_EQ(half_bits(1e-30f), 0x0000);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Overflow: 65504 is the largest half; 65520 is the tie with 2^16, which is even -> inf.
  EXPECT_EQ(half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(half_bits(65519.996f), 0x7BFF);
  EXPECT_EQ(half_bits(65520.0f), 0x7C00);
  EXPECT_EQ(half_bits(-1e6f), 0xFC00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
  // NaN stays NaN, quieted, the payload's top 10 bits kept (as F16C does).
  EXPECT_EQ(half_bits(from_bits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(half_bits(from_bits(0x7F800001)), 0x7E00);
  EXPECT_EQ(half_bits(from_bits(0x7FF00000)), 0x7F80);
  EXPECT_EQ(half_bits(from_bits(0xFFA02000)), 0xFF01);
  EXPECT_EQ(half_bits(from_bits(0xFFC00000)), 0xFE00);
}

// Floats spread over all bit patterns, plus every tie point between adjacent
// halves (and its two float neighbours), against the oracle.
TEST(Half, FromFloatMatchesOracle) {
  auto check = [](float f) {
    if (std::isnan(f)) return;
    ASSERT_EQ(half_bits(f), nearest_even(f, 0x7BFF, half_magnitude)) << std::hexfloat << f;
  };
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 4093) check(from_bits(static_cast<uint32_t>(u)));
  for (uint16_t p = 0; p < 0x7BFF; ++p) {
    const float tie = static_cast<float>((half_magnitude(p) + half_magnitude(p + 1)) / 2);
    for (float f : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1e9f)}) {
      check(f);
      check(-f);
    }
  }
}

TEST(BFloat16, ToFloatIsHighHalf) {
  EXPECT_EQ(to_float(BFloat16{0x3F80}), 1.0f);
  EXPECT_EQ(to_float(BFloat16{0xC040}), -3.0f);
  EXPECT_EQ(to_float(BFloat16{0x0001}), 0x1p-133f);
  EXPECT_TRUE(std::isinf(to_float(BFloat16{0xFF80})));
  EXPECT_TRUE(std::isnan(to_float(BFloat16{0x7FC0})));
}

TEST(BFloat16, RoundTripExhaustive) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const uint16_t back = bf16_bits(to_float(BFloat16{bits}));
    const bool nan = (bits & 0x7F80) == 0x7F80 && (bits & 0x7F);
    ASSERT_EQ(back, nan ? 0x7FC0 : bits) << std::hex << b;
  }
}

TEST(BFloat16, FromFloatHandComputed) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(from_bits(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf16_bits(from_bits(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf16_bits(from_bits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(bf16_bits(from_bits(0x3F807FFF)), 0x3F80);  // below the tie
  EXPECT_EQ(bf16_bits(from_bits(0x00008000)), 0x0000);  // subnormal tie to 0
  EXPECT_EQ(bf16_bits(from_bits(0x00018000)), 0x0002);  // subnormal tie to even
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // overflows to inf
  EXPECT_EQ(bf16_bits(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(bf16_bits(from_bits(0x7FC00001)), 0x7FC0);
  EXPECT_EQ(bf16_bits(from_bits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(bf16_bits(from_bits(0xFFC00000)), 0x7FC0);  // sign dropped, as in c10
}

TEST(BFloat16, FromFloatMatchesOracle) {
  auto check = [](float f) {
    if (std::isnan(f)) return;
    ASSERT_EQ(bf16_bits(f), nearest_even(f, 0x7F7F, bfloat16_magnitude)) << std::hexfloat << f;
  };
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 4093) check(from_bits(static_cast<uint32_t>(u)));
  for (uint32_t p = 0; p < 0x7F7F; ++p) {
    const uint32_t tie = (p << 16) | 0x8000;  // exactly between p and p + 1
    for (uint32_t u : {tie - 1, tie, tie + 1}) {
      check(from_bits(u));
      check(from_bits(u | 0x80000000u));
    }
  }
}

}  // namespace
}  // namespace mlu::kernels
