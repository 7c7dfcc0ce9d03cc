// copy against copy_ref on random views for all 144 dtype pairs, plus known
// conversions that pin PyTorch's semantics.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "mlu_kernels/copy.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/isa.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

bool is_integer_type(ScalarType t) {
  return t == ScalarType::UInt8 || t == ScalarType::Int8 || t == ScalarType::Int16 ||
         t == ScalarType::Int32 || t == ScalarType::Int64;
}

class CopyTest : public ::testing::TestWithParam<std::tuple<ScalarType, ScalarType>> {};

TEST_P(CopyTest, MatchesReferenceOnRandomViews) {
  const auto [dst_type, src_type] = GetParam();
  Rng rng(static_cast<uint64_t>(dst_type) * 16 + static_cast<uint64_t>(src_type) + 1);
  for (int trial = 0; trial < 200; ++trial) {
    const Shape shape = random_shape(rng);
    const ViewLayout src_layout = random_layout(shape, rng, true);
    const ViewLayout dst_layout = random_layout(shape, rng, false);
    Buffer src(src_type, src_layout.span);
    fill_random(src, rng, is_integer_type(dst_type));
    Buffer actual(dst_type, dst_layout.span);
    fill_random(actual, rng, false);
    Buffer expected = actual;
    copy(actual.element(dst_layout.offset), dst_type, dst_layout.strides,
         src.element(src_layout.offset), src_type, src_layout.strides, shape);
    copy_ref(expected.element(dst_layout.offset), dst_type, dst_layout.strides,
             src.element(src_layout.offset), src_type, src_layout.strides, shape);
    ASSERT_TRUE(same_buffers(actual, expected))
        << "dst " << describe(shape, dst_layout.strides) << " src "
        << describe(shape, src_layout.strides);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPairs, CopyTest, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kAllTypes)),
    [](const auto& info) {
      return std::string(scalar_type_name(std::get<1>(info.param))) + "_to_" +
             scalar_type_name(std::get<0>(info.param));
    });

// The storage-only types to and from every type, and among themselves.
constexpr auto kPairName = [](const auto& info) {
  return std::string(scalar_type_name(std::get<1>(info.param))) + "_to_" + scalar_type_name(std::get<0>(info.param));
};
INSTANTIATE_TEST_SUITE_P(ToFloat8, CopyTest,
                         ::testing::Combine(::testing::ValuesIn(kFloat8Types), ::testing::ValuesIn(kAllTypes)),
                         kPairName);
INSTANTIATE_TEST_SUITE_P(FromFloat8, CopyTest,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kFloat8Types)),
                         kPairName);
INSTANTIATE_TEST_SUITE_P(AmongFloat8, CopyTest,
                         ::testing::Combine(::testing::ValuesIn(kFloat8Types), ::testing::ValuesIn(kFloat8Types)),
                         kPairName);

// Converts one value through copy on a 0-dim shape, checking copy_ref agrees.
template <class To, class From>
To convert_one(ScalarType to, ScalarType from, From value) {
  To out{}, out_ref{};
  copy(&out, to, Strides{}, &value, from, Strides{}, Shape{});
  copy_ref(&out_ref, to, Strides{}, &value, from, Strides{}, Shape{});
  EXPECT_EQ(std::memcmp(&out, &out_ref, sizeof(To)), 0);
  return out;
}

using ST = ScalarType;
using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

TEST(Copy, FloatToIntegerTruncates) {
  EXPECT_EQ((convert_one<int32_t>(ST::Int32, ST::Float32, 2.7f)), 2);
  EXPECT_EQ((convert_one<int32_t>(ST::Int32, ST::Float32, -2.7f)), -2);
  EXPECT_EQ((convert_one<int8_t>(ST::Int8, ST::Float32, -1.5f)), -1);
  EXPECT_EQ((convert_one<int64_t>(ST::Int64, ST::Float64, 1e15 + 0.5)), 1000000000000000);
}

TEST(Copy, ToUInt8GoesThroughInt64) {
  EXPECT_EQ((convert_one<uint8_t>(ST::UInt8, ST::Float32, 300.0f)), 44);
  EXPECT_EQ((convert_one<uint8_t>(ST::UInt8, ST::Float64, 300.9)), 44);
  EXPECT_EQ((convert_one<uint8_t>(ST::UInt8, ST::Float32, -1.0f)), 255);
  EXPECT_EQ((convert_one<uint8_t>(ST::UInt8, ST::Float16, half_from_float(-2.5f))), 254);
  EXPECT_EQ((convert_one<uint8_t>(ST::UInt8, ST::Int32, -1)), 255);
}

TEST(Copy, IntegerToIntegerWraps) {
  EXPECT_EQ((convert_one<int8_t>(ST::Int8, ST::Int32, 300)), 44);
  EXPECT_EQ((convert_one<int8_t>(ST::Int8, ST::UInt8, uint8_t{200})), -56);
  EXPECT_EQ((convert_one<int16_t>(ST::Int16, ST::Int64, int64_t{-65537})), -1);
}

TEST(Copy, ToBoolIsNonZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::Float32, nan)));
  EXPECT_FALSE((convert_one<bool>(ST::Bool, ST::Float32, -0.0f)));
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::Float32, 0.25f)));
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::Float16, Half{0x7E00})));
  EXPECT_FALSE((convert_one<bool>(ST::Bool, ST::Float16, Half{0x8000})));
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::BFloat16, BFloat16{0x0001})));  // subnormal
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::Int64, int64_t{1} << 40)));
  EXPECT_FALSE((convert_one<bool>(ST::Bool, ST::Int8, int8_t{0})));
  EXPECT_TRUE((convert_one<bool>(ST::Bool, ST::ComplexFloat, cfloat(0, 1))));
  EXPECT_FALSE((convert_one<bool>(ST::Bool, ST::ComplexDouble, cdouble(0, -0.0))));
}

TEST(Copy, FromBoolIsZeroOrOne) {
  EXPECT_EQ((convert_one<float>(ST::Float32, ST::Bool, true)), 1.0f);
  EXPECT_EQ((convert_one<int64_t>(ST::Int64, ST::Bool, true)), 1);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Bool, true)).x, 0x3C00);
  EXPECT_EQ((convert_one<cfloat>(ST::ComplexFloat, ST::Bool, true)), cfloat(1, 0));
  EXPECT_EQ((convert_one<double>(ST::Float64, ST::Bool, false)), 0.0);
}

TEST(Copy, ComplexRules) {
  const cdouble z(3.5, -2.0);
  EXPECT_EQ((convert_one<float>(ST::Float32, ST::ComplexDouble, z)), 3.5f);
  EXPECT_EQ((convert_one<int32_t>(ST::Int32, ST::ComplexDouble, z)), 3);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::ComplexDouble, z)).x, 0x4300);
  EXPECT_EQ((convert_one<cdouble>(ST::ComplexDouble, ST::Float32, 1.5f)), cdouble(1.5, 0));
  EXPECT_EQ((convert_one<cdouble>(ST::ComplexDouble, ST::ComplexFloat, cfloat(1.5f, -2.25f))),
            cdouble(1.5, -2.25));
  EXPECT_EQ((convert_one<cfloat>(ST::ComplexFloat, ST::ComplexDouble, cdouble(0.1, -2.5))),
            cfloat(0.1f, -2.5f));
  EXPECT_EQ((convert_one<cfloat>(ST::ComplexFloat, ST::Float16, Half{0xC000})), cfloat(-2, 0));
}

TEST(Copy, HalfAndBFloat16GoThroughFloat) {
  EXPECT_EQ((convert_one<float>(ST::Float32, ST::Float16, Half{0x0001})), 0x1p-24f);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Float32, 0x1p-24f)).x, 0x0001);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Float64, 1e-7)).x, 0x0002);  // subnormal
  // Double rounding through float, as c10: 1 + 2^-11 + 2^-40 is 1 + 2^-11 as a
  // float, a tie that rounds to even (1.0) instead of up to 1 + 2^-10.
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Float64, 1.0 + 0x1p-11 + 0x1p-40)).x, 0x3C00);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::BFloat16, BFloat16{0x3FC0})).x, 0x3E00);
  EXPECT_EQ((convert_one<BFloat16>(ST::BFloat16, ST::Float16, Half{0x7C01})).x, 0x7FC0);
  EXPECT_EQ((convert_one<BFloat16>(ST::BFloat16, ST::Int32, 257)).x, 0x4380);  // 256, tie to even
  EXPECT_EQ((convert_one<int16_t>(ST::Int16, ST::BFloat16, BFloat16{0xC2F7})), -123);
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Int64, int64_t{70000})).x, 0x7C00);
}

// Float -> bfloat16 blocks take vcvtneps2bf16 where the CPU has AVX512-BF16;
// the instruction flushes denormal inputs, which must still round as c10
// does, in whatever lane of a 16-wide vector they sit.
TEST(Copy, FloatToBFloat16RoundsDenormalsInEveryLane) {
  std::vector<float> src(1000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::ldexp(1.0f + static_cast<float>(i % 97) / 97, int(i % 60) - 30);
  const float specials[] = {0x1p-127f, -0x1.8p-130f, 0x1p-149f, -0x1p-149f, 0x1.fffffep-127f, 0.0f, -0.0f,
                            std::numeric_limits<float>::infinity(), 3.3961e38f, 0x1.0101p-126f};
  for (size_t i = 0; i < src.size(); i += 7) src[i] = specials[(i / 7) % std::size(specials)];
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = static_cast<int64_t>(src.size());
  Strides unit{};
  unit.v[0] = 1;
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    if (isa > detected_isa()) continue;
    set_isa(isa);
    std::vector<BFloat16> out(src.size());
    copy(out.data(), ScalarType::BFloat16, unit, src.data(), ScalarType::Float32, unit, shape);
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(out[i].x, bfloat16_from_float(src[i]).x) << "element " << i << " = " << src[i] << " on "
                                                         << isa_name(isa);
    }
  }
  set_isa(saved);
}

TEST(Copy, SameTypeKeepsBits) {
  EXPECT_EQ((convert_one<Half>(ST::Float16, ST::Float16, Half{0x7C01})).x, 0x7C01);
  const float snan = std::bit_cast<float>(uint32_t{0x7F800001});
  EXPECT_EQ(std::bit_cast<uint32_t>(convert_one<float>(ST::Float32, ST::Float32, snan)), 0x7F800001u);
  EXPECT_TRUE(std::signbit(convert_one<double>(ST::Float64, ST::Float32, -0.0f)));
}

TEST(Copy, BroadcastRowsAndEmptyShapes) {
  const int32_t src[4] = {1, 2, 3, 4};
  double dst[3][4] = {};
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = 3;
  shape.sizes[1] = 4;
  copy(dst, ST::Float64, Strides{{4, 1}}, src, ST::Int32, Strides{{0, 1}}, shape);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(dst[r][c], c + 1.0);
  }
  shape.sizes[0] = 0;
  dst[0][0] = -1;
  copy(dst, ST::Float64, Strides{{4, 1}}, src, ST::Int32, Strides{{0, 1}}, shape);
  EXPECT_EQ(dst[0][0], -1);
}

// Rows read backwards (flip of the innermost dim) take their own loop in
// copy_strided: every element size, rows of odd lengths, with and without a
// conversion, against copy_ref.
TEST(Copy, ReversedRowsMatchReference) {
  Rng rng(5);
  for (auto [to, from] : {std::pair{ST::UInt8, ST::UInt8}, {ST::Int16, ST::Int16}, {ST::Float32, ST::Float32},
                          {ST::Int64, ST::Int64}, {ST::Float64, ST::Float32}}) {
    for (int64_t len : {1, 3, 17, 100}) {
      Shape shape;
      shape.ndim = 2;
      shape.sizes[0] = 5;
      shape.sizes[1] = len;
      Buffer src(from, 5 * len), dst(to, 5 * len), ref(to, 5 * len);
      fill_random(src, rng, true);
      const Strides dst_strides{{len, 1}}, src_strides{{len, -1}};
      const unsigned char* last = src.element(len - 1);  // row 0 read from its end
      copy(dst.data(), to, dst_strides, last, from, src_strides, shape);
      copy_ref(ref.data(), to, dst_strides, last, from, src_strides, shape);
      ASSERT_EQ(std::memcmp(dst.data(), ref.data(), dst.bytes()), 0) << "len " << len;
    }
  }
}

// Copies whose unit strides are on different dims take the blocked
// transposing copy (Note [Blocked transposing copies]): every element size
// under every ISA, sizes with and without partial blocks, a batch dim, a
// source row pitch wider than its rows, and a reversed source, against
// copy_ref. Shape [batch, rows, cols]; the source holds each [rows, cols]
// matrix transposed (rows are its unit-stride dim).
TEST(Copy, TransposingCopiesMatchReference) {
  Rng rng(11);
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    if (isa > detected_isa()) continue;
    set_isa(isa);
    for (ST type : {ST::UInt8, ST::BFloat16, ST::Float32, ST::Float64, ST::ComplexDouble}) {
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{16, 16}, {64, 64}, {17, 33}, {100, 37}, {48, 130}}) {
        for (int variant = 0; variant < 3; ++variant) {  // plain, padded source pitch, reversed source
          const int64_t batch = 2, pitch = variant == 1 ? rows + 5 : rows;
          Shape shape;
          shape.ndim = 3;
          shape.sizes[0] = batch;
          shape.sizes[1] = rows;
          shape.sizes[2] = cols;
          const Strides dst_strides{{rows * cols, cols, 1}};
          Strides src_strides{{pitch * cols, 1, pitch}};
          int64_t src_offset = 0;
          if (variant == 2) {  // rows read backwards: starts at the end of each column
            src_strides.v[1] = -1;
            src_offset = rows - 1;
          }
          Buffer src(type, batch * pitch * cols), dst(type, batch * rows * cols), ref(type, batch * rows * cols);
          fill_random(src, rng, false);
          copy(dst.data(), type, dst_strides, src.element(src_offset), type, src_strides, shape);
          copy_ref(ref.data(), type, dst_strides, src.element(src_offset), type, src_strides, shape);
          ASSERT_EQ(std::memcmp(dst.data(), ref.data(), dst.bytes()), 0)
              << scalar_type_name(type) << " " << rows << " x " << cols << " variant " << variant << " "
              << isa_name(isa);
        }
      }
    }
  }
  set_isa(saved);
}

}  // namespace
}  // namespace mlu::kernels
