// The Float8 conversions (float8.h, convert.h through copy) at the values
// where c10's rounding decides: the saturating or NaN overflow of each
// format, round-to-even at the largest values, subnormals, -0, NaN, the
// infinities, and float64's rounding through float. The expected bytes are
// the CPU's (torch 2.13: torch.tensor(values).to(dtype).view(torch.uint8)).
// The Python tests compare every float32 high half and all 256 codes with
// the CPU; the exhaustive sweep was run once against c10's headers.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "mlu_kernels/copy.h"
#include "mlu_kernels/float8.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::array<double, 20> kValues = {
    464.0,   479.9,   480.0,  448.0,   -500.0,    247.0, 248.0,        240.0, 61439.0, 61440.0,
    57344.0, 65536.0, 0x1p-9, 0x1p-10, 0x1.8p-10, -0.0,  std::nan(""), kInf,  -kInf,   1.0625 + 0x1p-30};

struct Expected {
  ScalarType type;
  std::array<uint8_t, kValues.size()> bytes;
};

constexpr Expected kExpected[] = {
    {ScalarType::Float8_e4m3fn, {0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x77, 0x78, 0x77, 0x7E, 0x7E,
                                 0x7E, 0x7E, 0x01, 0x00, 0x01, 0x80, 0x7F, 0x7E, 0xFE, 0x38}},
    {ScalarType::Float8_e5m2, {0x5F, 0x5F, 0x60, 0x5F, 0xE0, 0x5C, 0x5C, 0x5C, 0x7B, 0x7C,
                               0x7B, 0x7C, 0x18, 0x14, 0x16, 0x80, 0x7F, 0x7C, 0xFC, 0x3C}},
    {ScalarType::Float8_e4m3fnuz, {0x80, 0x80, 0x80, 0x80, 0x80, 0x7F, 0x80, 0x7F, 0x80, 0x80,
                                   0x80, 0x80, 0x02, 0x01, 0x02, 0x00, 0x80, 0x80, 0x80, 0x40}},
    {ScalarType::Float8_e5m2fnuz, {0x63, 0x63, 0x64, 0x63, 0xE4, 0x60, 0x60, 0x60, 0x7F, 0x80,
                                   0x7F, 0x80, 0x1C, 0x18, 0x1A, 0x00, 0x80, 0x80, 0x80, 0x40}},
};

template <class From>
std::array<uint8_t, kValues.size()> convert_all(ScalarType to, ScalarType from, int64_t stride) {
  std::array<From, kValues.size() * 2> src{};
  for (size_t i = 0; i < kValues.size(); ++i) src[i * stride] = static_cast<From>(kValues[i]);
  std::array<uint8_t, kValues.size()> out{};
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = kValues.size();
  Strides dst_strides{}, src_strides{};
  dst_strides.v[0] = 1;
  src_strides.v[0] = stride;
  copy(out.data(), to, dst_strides, src.data(), from, src_strides, shape);
  return out;
}

TEST(Float8, FromFloatAndDoubleRoundAsTheCpu) {
  for (const Expected& e : kExpected) {
    for (int64_t stride : {1, 2}) {
      EXPECT_EQ(convert_all<float>(e.type, ScalarType::Float32, stride), e.bytes) << scalar_type_name(e.type);
      // float64 rounds to float first: 1.0625 + 2^-30 lands on the tie, then to even (1.0).
      EXPECT_EQ(convert_all<double>(e.type, ScalarType::Float64, stride), e.bytes) << scalar_type_name(e.type);
    }
  }
}

TEST(Float8, ToFloatIsExactWithTheCpuNaNs) {
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e4m3fn{0x7E})), std::bit_cast<uint32_t>(448.0f));
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e4m3fn{0x01})), std::bit_cast<uint32_t>(0x1p-9f));
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e4m3fn{0x7F})), 0x7FF00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e4m3fn{0xFF})), 0xFFF00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e5m2{0x7C})), 0x7F800000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e5m2{0x7D})), 0x7FE00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e5m2{0x7E})), 0x7FC00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e5m2{0x80})), 0x80000000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e4m3fnuz{0x80})), 0x7F800001u);
  EXPECT_EQ(std::bit_cast<uint32_t>(to_float(Float8_e5m2fnuz{0x80})), 0x7F800001u);
  EXPECT_EQ(to_float(Float8_e4m3fnuz{0x7F}), 240.0f);
  EXPECT_EQ(to_float(Float8_e5m2fnuz{0x7F}), 57344.0f);
  EXPECT_EQ(to_float(Float8_e5m2fnuz{0x01}), 0x1p-17f);
}

TEST(Float8, EveryCodeRoundTripsThroughFloat) {
  for (ScalarType type : testutil::kFloat8Types) {
    std::array<uint8_t, 256> codes{}, back{};
    std::array<float, 256> floats{};
    for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
    Shape shape;
    shape.ndim = 1;
    shape.sizes[0] = 256;
    Strides unit{};
    unit.v[0] = 1;
    copy(floats.data(), ScalarType::Float32, unit, codes.data(), type, unit, shape);
    copy(back.data(), type, unit, floats.data(), ScalarType::Float32, unit, shape);
    for (int i = 0; i < 256; ++i) {
      // Exact, but e5m2's three NaN payloads all come back as sign | 0x7F
      // (a float NaN becomes the one NaN code per sign).
      const bool e5m2_nan = type == ScalarType::Float8_e5m2 && std::isnan(floats[i]);
      EXPECT_EQ(back[i], e5m2_nan ? (codes[i] & 0x80) | 0x7F : codes[i]) << scalar_type_name(type) << " code " << i;
    }
  }
}

}  // namespace
}  // namespace mlu::kernels
