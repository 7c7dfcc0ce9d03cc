// The RNG kernels: Philox4x32-10 known answers; every kernel against its
// reference on random views for every accepted dtype; the determinism rule
// (values follow the logical index, not the layout); exact formulas for a few
// kernels; value ranges; and moments of 100k samples. Every seed is fixed, so
// the statistical checks are deterministic and cannot flake.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlu_kernels/philox.h"
#include "mlu_kernels/random.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;
using Block = std::array<uint32_t, 4>;

constexpr ScalarType kFloatTypes[] = {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                                      ScalarType::Float64};

// ---------------------------------------------------------------- Philox

// Random123's kat_vectors for philox4x32_10 (counter words, key words, output).
static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0}) == Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
static_assert(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
              Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
static_assert(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
              Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});

TEST(Philox, KnownAnswersThroughSeedSubsequenceOffset) {
  EXPECT_EQ(philox4x32(0, 0, 0), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32(~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  // counter (lo, lo >> 32, hi, hi >> 32) and key (seed, seed >> 32).
  EXPECT_EQ(philox4x32(UINT64_C(0x299f31d0a4093822), UINT64_C(0x0370734413198a2e),
                       UINT64_C(0x85a308d3243f6a88)),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  EXPECT_EQ(philox4x32(PhiloxKey{UINT64_C(0x299f31d0a4093822)}, UINT64_C(0x0370734413198a2e),
                       UINT64_C(0x85a308d3243f6a88)),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, WordOrder) {
  const uint64_t seed = UINT64_C(0x0123456789abcdef);
  const uint64_t hi = UINT64_C(0xfedcba9876543210);
  const uint64_t lo = UINT64_C(0x0f1e2d3c4b5a6978);
  EXPECT_EQ(philox4x32(seed, hi, lo),
            philox4x32_10({0x4b5a6978, 0x0f1e2d3c, 0x76543210, 0xfedcba98}, {0x89abcdef, 0x01234567}));
  // Every input word matters.
  EXPECT_NE(philox4x32(seed, hi, lo), philox4x32(seed ^ (UINT64_C(1) << 40), hi, lo));
  EXPECT_NE(philox4x32(seed, hi, lo), philox4x32(seed, hi ^ (UINT64_C(1) << 40), lo));
  EXPECT_NE(philox4x32(seed, hi, lo), philox4x32(seed, hi, lo ^ (UINT64_C(1) << 40)));
}

// ---------------------------------------------------------------- helpers


// A kernel call with its distribution parameters bound.
using Call = std::function<void(void* dst, ScalarType, const Shape&, const Strides&, uint64_t seed,
                                uint64_t offset)>;

struct Calls {
  Call optimised, reference;
};

template <class... P>
Calls bind_params(void (*optimised)(void*, ScalarType, const Shape&, const Strides&, uint64_t, uint64_t, P...),
           void (*reference)(void*, ScalarType, const Shape&, const Strides&, uint64_t, uint64_t, P...),
           std::type_identity_t<P>... params) {
  return {[=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
            optimised(d, t, s, st, seed, offset, params...);
          },
          [=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
            reference(d, t, s, st, seed, offset, params...);
          }};
}

// bernoulli_tensor with a p view of `shape` (broadcast dims allowed) that
// the calls own; p values in [0, 1], exact 0 and 1 included.
Calls bind_bernoulli_tensor(Rng& rng, const Shape& shape, ScalarType p_type) {
  const ViewLayout layout = random_layout(shape, rng, true);
  auto p = std::make_shared<Buffer>(p_type, layout.span);
  for (int64_t i = 0; i < p->count(); ++i) {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng);
    const double v = chance(rng, 0.1) ? 0.0 : chance(rng, 0.1) ? 1.0 : r;
    switch (p_type) {
      case ScalarType::Float16: { const Half h = half_from_float(static_cast<float>(v)); std::memcpy(p->element(i), &h, 2); break; }
      case ScalarType::BFloat16: { const BFloat16 b = bfloat16_from_float(static_cast<float>(v)); std::memcpy(p->element(i), &b, 2); break; }
      case ScalarType::Float32: { const float f = static_cast<float>(v); std::memcpy(p->element(i), &f, 4); break; }
      default: std::memcpy(p->element(i), &v, 8); break;
    }
  }
  const void* base = p->element(layout.offset);
  const Strides strides = layout.strides;
  return {[=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
            (void)p;  // keeps the buffer alive
            bernoulli_tensor(d, t, s, st, seed, offset, base, p_type, strides);
          },
          [=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
            (void)p;
            bernoulli_tensor_ref(d, t, s, st, seed, offset, base, p_type, strides);
          }};
}

double real_in(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

struct Kernel {
  const char* name;
  std::vector<ScalarType> types;
  // Random parameters for one trial (the shape is for bernoulli_tensor's p).
  std::function<Calls(Rng&, ScalarType, const Shape&)> random_params;
  // Fixed parameters under which two independent draws usually differ.
  std::function<Calls(Rng&, ScalarType, const Shape&)> typical_params;
};

const std::vector<Kernel>& kernels() {
  using T = ScalarType;
  static const std::vector<ScalarType> floats(std::begin(kFloatTypes), std::end(kFloatTypes));
  static const std::vector<Kernel> list = {
      {"uniform", floats,
       [](Rng& rng, ScalarType, const Shape&) {
         // Sometimes far from 0, where 16-bit rounding reaches `to`.
         const double from = chance(rng, 0.3) ? real_in(rng, 100, 3000) : real_in(rng, -10, 10);
         const double to = from + (chance(rng, 0.1) ? 0.0 : real_in(rng, 0, 20));
         return bind_params(uniform, uniform_ref, from, to);
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(uniform, uniform_ref, -1.0, 2.0); }},
      {"normal", floats,
       [](Rng& rng, ScalarType, const Shape&) {
         return bind_params(normal, normal_ref, real_in(rng, -5, 5), chance(rng, 0.1) ? 0.0 : real_in(rng, 0, 3));
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(normal, normal_ref, 0.0, 1.0); }},
      {"log_normal", floats,
       [](Rng& rng, ScalarType, const Shape&) {
         return bind_params(log_normal, log_normal_ref, real_in(rng, -2, 2), real_in(rng, 0, 2));
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(log_normal, log_normal_ref, 0.0, 1.0); }},
      {"exponential", floats,
       [](Rng& rng, ScalarType, const Shape&) {
         return bind_params(exponential, exponential_ref, std::exp(real_in(rng, -5, 5)));
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(exponential, exponential_ref, 1.0); }},
      {"cauchy", floats,
       [](Rng& rng, ScalarType, const Shape&) {
         return bind_params(cauchy, cauchy_ref, real_in(rng, -5, 5), real_in(rng, 0, 3));
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(cauchy, cauchy_ref, 0.0, 1.0); }},
      {"geometric",
       {T::UInt8, T::Int8, T::Int16, T::Int32, T::Int64, T::Float16, T::BFloat16, T::Float32, T::Float64},
       [](Rng& rng, ScalarType, const Shape&) {
         static constexpr double kP[] = {1.0, 0.5, 1e-3, 1e-9, 1e-15};
         const double p = chance(rng, 0.5) ? kP[uniform(rng, 0, 4)] : real_in(rng, 1e-6, 1);
         return bind_params(geometric, geometric_ref, p);
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(geometric, geometric_ref, 0.3); }},
      {"bernoulli_scalar", std::vector<ScalarType>(std::begin(kAllTypes), std::end(kAllTypes)),
       [](Rng& rng, ScalarType, const Shape&) {
         const double p = chance(rng, 0.1) ? 0.0 : chance(rng, 0.1) ? 1.0 : real_in(rng, 0, 1);
         return bind_params(bernoulli_scalar, bernoulli_scalar_ref, p);
       },
       [](Rng&, ScalarType, const Shape&) { return bind_params(bernoulli_scalar, bernoulli_scalar_ref, 0.5); }},
      {"bernoulli_tensor", std::vector<ScalarType>(std::begin(kAllTypes), std::end(kAllTypes)),
       [](Rng& rng, ScalarType, const Shape& shape) {
         return bind_bernoulli_tensor(rng, shape, kFloatTypes[uniform(rng, 0, 3)]);
       },
       [](Rng&, ScalarType, const Shape&) {
         const double half = 0.5;
         Strides zero{};
         return Calls{
             [=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
               bernoulli_tensor(d, t, s, st, seed, offset, &half, ScalarType::Float64, zero);
             },
             [=](void* d, ScalarType t, const Shape& s, const Strides& st, uint64_t seed, uint64_t offset) {
               bernoulli_tensor_ref(d, t, s, st, seed, offset, &half, ScalarType::Float64, zero);
             }};
       }},
      {"random_from_to",
       {T::Bool, T::UInt8, T::Int8, T::Int16, T::Int32, T::Int64, T::Float16, T::BFloat16, T::Float32,
        T::Float64},
       [](Rng& rng, ScalarType, const Shape&) {
         static constexpr uint64_t kRange[] = {0, 1, 2, 256, 0xffffffff, UINT64_C(1) << 32,
                                               (UINT64_C(1) << 40) + 3, UINT64_C(1) << 63};
         const int64_t from = chance(rng, 0.2)   ? std::numeric_limits<int64_t>::min()
                              : chance(rng, 0.5) ? uniform(rng, -300, 300)
                                                 : static_cast<int64_t>(rng());
         const uint64_t range = chance(rng, 0.7) ? kRange[uniform(rng, 0, 7)] : rng() >> uniform(rng, 0, 63);
         return bind_params(random_from_to, random_from_to_ref, from, range);
       },
       [](Rng&, ScalarType, const Shape&) {
         return bind_params(random_from_to, random_from_to_ref, int64_t{0}, uint64_t{2});
       }},
  };
  return list;
}

const Kernel& kernel(const std::string& name) {
  for (const Kernel& k : kernels()) {
    if (name == k.name) return k;
  }
  ADD_FAILURE() << "no kernel " << name;
  return kernels().front();
}

// ---------------------------------------------------------------- optimised == reference

void check_matches_reference(const Kernel& k) {
  for (ScalarType type : k.types) {
    SCOPED_TRACE(std::string(k.name) + " " + scalar_type_name(type));
    Rng rng(std::hash<std::string>{}(k.name) + static_cast<uint64_t>(type));
    for (int trial = 0; trial < 150; ++trial) {
      const Shape shape = random_shape(rng);
      const ViewLayout layout = random_layout(shape, rng, false);
      const Calls calls = k.random_params(rng, type, shape);
      const uint64_t seed = chance(rng, 0.2) ? 0 : rng();
      const uint64_t offset = chance(rng, 0.5) ? static_cast<uint64_t>(uniform(rng, 0, 10)) : rng();
      Buffer actual(type, layout.span);
      fill_random(actual, rng, false);
      Buffer expected = actual;
      calls.optimised(actual.element(layout.offset), type, shape, layout.strides, seed, offset);
      calls.reference(expected.element(layout.offset), type, shape, layout.strides, seed, offset);
      ASSERT_TRUE(same_buffers(actual, expected)) << describe(shape, layout.strides);
    }
  }
}

TEST(Random, UniformMatchesReference) { check_matches_reference(kernel("uniform")); }
TEST(Random, NormalMatchesReference) { check_matches_reference(kernel("normal")); }
TEST(Random, LogNormalMatchesReference) { check_matches_reference(kernel("log_normal")); }
TEST(Random, ExponentialMatchesReference) { check_matches_reference(kernel("exponential")); }
TEST(Random, CauchyMatchesReference) { check_matches_reference(kernel("cauchy")); }
TEST(Random, GeometricMatchesReference) { check_matches_reference(kernel("geometric")); }
TEST(Random, BernoulliScalarMatchesReference) { check_matches_reference(kernel("bernoulli_scalar")); }
TEST(Random, BernoulliTensorMatchesReference) { check_matches_reference(kernel("bernoulli_tensor")); }
TEST(Random, RandomFromToMatchesReference) { check_matches_reference(kernel("random_from_to")); }

// ---------------------------------------------------------------- determinism rule

Shape make_shape(std::initializer_list<int64_t> sizes) {
  Shape shape;
  for (int64_t s : sizes) shape.sizes[shape.ndim++] = s;
  return shape;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides{};
  int64_t running = 1;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    strides.v[d] = running;
    running *= shape.sizes[d];
  }
  return strides;
}

// Element i (logical) of a view, as bytes.
std::vector<unsigned char> logical_bytes(Buffer& buffer, const ViewLayout& layout, const Shape& shape,
                                         int64_t i) {
  int64_t at = layout.offset;
  int64_t rest = i;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    at += (rest % shape.sizes[d]) * layout.strides.v[d];
    rest /= shape.sizes[d];
  }
  const size_t size = element_size(buffer.type());
  return {buffer.element(at), buffer.element(at) + size};
}

TEST(Random, SameValuesForEveryLayoutAndFreshValuesForAnotherOffset) {
  const Shape shape = make_shape({3, 1, 5, 7});
  const int64_t n = numel(shape);
  ViewLayout contiguous;
  contiguous.strides = contiguous_strides(shape);
  contiguous.span = n;
  for (const Kernel& k : kernels()) {
    for (ScalarType type : k.types) {
      SCOPED_TRACE(std::string(k.name) + " " + scalar_type_name(type));
      Rng rng(7);
      const Calls calls = k.typical_params(rng, type, shape);
      const uint64_t seed = 12345, offset = 42;
      Buffer base(type, n);
      calls.optimised(base.data(), type, shape, contiguous.strides, seed, offset);
      for (int trial = 0; trial < 20; ++trial) {
        ViewLayout layout = random_layout(shape, rng, false);
        if (trial == 0) {  // the last two dims transposed in memory
          layout.strides = Strides{{35, 35, 1, 5}};
          layout.offset = 0;
          layout.span = n;
        }
        Buffer actual(type, layout.span), expected(type, layout.span);
        calls.optimised(actual.element(layout.offset), type, shape, layout.strides, seed, offset);
        calls.reference(expected.element(layout.offset), type, shape, layout.strides, seed, offset);
        for (int64_t i = 0; i < n; ++i) {
          const auto want = logical_bytes(base, contiguous, shape, i);
          ASSERT_EQ(logical_bytes(actual, layout, shape, i), want) << "element " << i << " " << describe(shape, layout.strides);
          ASSERT_EQ(logical_bytes(expected, layout, shape, i), want) << "element " << i;
        }
      }
      // Another offset or seed: mostly different values.
      for (const auto& [other_seed, other_offset] : {std::pair<uint64_t, uint64_t>{seed, offset + 1},
                                                     {seed + 1, offset}}) {
        Buffer other(type, n);
        calls.optimised(other.data(), type, shape, contiguous.strides, other_seed, other_offset);
        int64_t differ = 0;
        for (int64_t i = 0; i < n; ++i) differ += std::memcmp(other.element(i), base.element(i), element_size(type)) != 0;
        EXPECT_GT(differ, n / 5) << "seed " << other_seed << " offset " << other_offset;
      }
    }
  }
}

// The logical index, not the memory order, picks the subsequence: element
// [r][c] of a 2-d view equals element r * cols + c of a 1-d contiguous run.
TEST(Random, SubsequenceIsTheLogicalIndex) {
  const Shape flat = make_shape({12});
  const Shape grid = make_shape({3, 4});
  float line[12], transposed[12];
  uniform(line, ScalarType::Float32, flat, contiguous_strides(flat), 9, 3, 0.0, 1.0);
  const Strides column_major{{1, 3}};
  uniform(transposed, ScalarType::Float32, grid, column_major, 9, 3, 0.0, 1.0);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(transposed[c * 3 + r], line[r * 4 + c]) << r << "," << c;
  }
}

// ---------------------------------------------------------------- exact formulas

TEST(Random, UniformFormula) {
  const Shape shape = make_shape({64});
  const uint64_t seed = 0xabcdef, offset = 5;
  float f32[64];
  double f64[64];
  uniform(f32, ScalarType::Float32, shape, contiguous_strides(shape), seed, offset, -1.0, 3.0);
  uniform(f64, ScalarType::Float64, shape, contiguous_strides(shape), seed, offset, -1.0, 3.0);
  for (uint64_t i = 0; i < 64; ++i) {
    const Block u = philox4x32(seed, i, offset);
    const float x24 = static_cast<float>(u[0] >> 8) * 0x1.0p-24f;
    EXPECT_EQ(f32[i], x24 * 4.0f + -1.0f) << i;
    const double x53 = static_cast<double>(((uint64_t{u[0]} << 32) | u[1]) >> 11) * 0x1.0p-53;
    EXPECT_EQ(f64[i], x53 * 4.0 + -1.0) << i;
  }
}

TEST(Random, NormalFormulaFloat64) {
  const Shape shape = make_shape({32});
  double out[32];
  normal(out, ScalarType::Float64, shape, contiguous_strides(shape), 77, 0, 1.5, 2.0);
  for (uint64_t i = 0; i < 32; ++i) {
    const Block u = philox4x32(77, i, 0);
    const double x1 = static_cast<double>(((uint64_t{u[0]} << 32) | u[1]) >> 11) * 0x1.0p-53;
    const double x2 = static_cast<double>(((uint64_t{u[2]} << 32) | u[3]) >> 11) * 0x1.0p-53;
    const double z = std::sqrt(-2.0 * std::log(1.0 - x1)) * std::cos(2 * std::numbers::pi * x2);
    EXPECT_EQ(out[i], 1.5 + 2.0 * z) << i;
  }
}

TEST(Random, BernoulliAndRandomFromToFormulas) {
  const Shape shape = make_shape({64});
  const Strides strides = contiguous_strides(shape);
  uint8_t coin[64];
  int64_t small[64], wide[64], full[64];
  bernoulli_scalar(coin, ScalarType::UInt8, shape, strides, 3, 1, 0.3);
  random_from_to(small, ScalarType::Int64, shape, strides, 3, 1, -10, 1000);
  random_from_to(wide, ScalarType::Int64, shape, strides, 3, 1, -10, UINT64_C(1) << 40);
  random_from_to(full, ScalarType::Int64, shape, strides, 3, 1, 5, 0);
  for (uint64_t i = 0; i < 64; ++i) {
    const Block u = philox4x32(3, i, 1);
    const uint64_t r64 = (uint64_t{u[0]} << 32) | u[1];
    EXPECT_EQ(coin[i], static_cast<double>(u[0]) * 0x1.0p-32 < 0.3 ? 1 : 0) << i;
    EXPECT_EQ(small[i], -10 + static_cast<int64_t>(u[0] % 1000)) << i;
    EXPECT_EQ(wide[i], -10 + static_cast<int64_t>(r64 % (UINT64_C(1) << 40))) << i;
    EXPECT_EQ(full[i], static_cast<int64_t>(r64 + 5)) << i;
  }
}

// ---------------------------------------------------------------- ranges

constexpr int64_t kSamples = 100000;

// kSamples values of `type` from a contiguous 1-d call, as doubles.
std::vector<double> sample(ScalarType type, const std::function<void(void*, const Shape&, const Strides&)>& call) {
  const Shape shape = make_shape({kSamples});
  Buffer buffer(type, kSamples);
  call(buffer.data(), shape, contiguous_strides(shape));
  std::vector<double> values(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) values[static_cast<size_t>(i)] = testutil::element_value(type, buffer.element(i));
  return values;
}

TEST(Random, UniformStaysBelowTo) {
  // (1, 2) in BFloat16 rounds 1/256 of the draws up to 2; (0, 1) in Half rounds
  // the top draws to 1. Both must come back as `from`.
  const std::pair<double, double> intervals[] = {{0, 1}, {1, 2}, {-3.5, -1.25}, {100, 1000}};
  for (ScalarType type : kFloatTypes) {
    for (const auto& [from, to] : intervals) {
      SCOPED_TRACE(std::string(scalar_type_name(type)) + " [" + std::to_string(from) + ", " + std::to_string(to) + ")");
      const auto v = sample(type, [&](void* d, const Shape& s, const Strides& st) {
        uniform(d, type, s, st, 2024, 0, from, to);
      });
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      EXPECT_GE(*lo, from);
      EXPECT_LT(*hi, to);
    }
  }
}

TEST(Random, BernoulliIsExactlyZeroOrOne) {
  for (ScalarType type : kAllTypes) {
    SCOPED_TRACE(scalar_type_name(type));
    const size_t size = element_size(type);
    Buffer one(type, 1), zero(type, 1);
    const Shape scalar{};
    bernoulli_scalar(one.data(), type, scalar, Strides{}, 1, 0, 1.0);
    bernoulli_scalar(zero.data(), type, scalar, Strides{}, 1, 0, 0.0);
    EXPECT_EQ(testutil::element_value(type, one.data()), 1.0);
    EXPECT_EQ(testutil::element_value(type, zero.data()), 0.0);
    if (type == ScalarType::ComplexFloat || type == ScalarType::ComplexDouble) {
      EXPECT_EQ(std::memcmp(one.data() + size / 2, zero.data(), size / 2), 0) << "imaginary part is 0";
    }
    const Shape shape = make_shape({1000});
    Buffer out(type, 1000);
    bernoulli_scalar(out.data(), type, shape, contiguous_strides(shape), 5, 0, 0.5);
    int64_t ones = 0;
    for (int64_t i = 0; i < 1000; ++i) {
      const bool is_one = std::memcmp(out.element(i), one.data(), size) == 0;
      ASSERT_TRUE(is_one || std::memcmp(out.element(i), zero.data(), size) == 0) << "element " << i;
      ones += is_one;
    }
    EXPECT_GT(ones, 400);
    EXPECT_LT(ones, 600);
    // A p tensor of exact 0s and 1s decides every element.
    double p[1000];
    for (int i = 0; i < 1000; ++i) p[i] = (i % 3 == 0) ? 1.0 : 0.0;
    bernoulli_tensor(out.data(), type, shape, contiguous_strides(shape), 5, 0, p, ScalarType::Float64,
                     contiguous_strides(shape));
    for (int64_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(std::memcmp(out.element(i), (i % 3 == 0 ? one : zero).data(), size), 0) << "element " << i;
    }
  }
}

TEST(Random, RandomFromToStaysInRange) {
  struct Case {
    ScalarType type;
    int64_t from;
    uint64_t range;
  };
  const Case cases[] = {
      {ScalarType::Int64, -5, 10},
      {ScalarType::Int64, -(INT64_C(1) << 40), UINT64_C(1) << 41},
      {ScalarType::Int64, 7, (UINT64_C(1) << 32) + 1},
      {ScalarType::Int32, -1000, 3},
      {ScalarType::Int16, -32768, 65536},
      {ScalarType::Int8, -128, 256},
      {ScalarType::UInt8, 0, 256},
      {ScalarType::UInt8, 10, 5},
      {ScalarType::Bool, 0, 2},
      {ScalarType::Float16, -3, 7},
      {ScalarType::BFloat16, 0, 256},
      {ScalarType::Float32, -3, 7},
      {ScalarType::Float32, 0, UINT64_C(1) << 24},
      {ScalarType::Float64, -(INT64_C(1) << 52), UINT64_C(1) << 53},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(scalar_type_name(c.type)) + " from " + std::to_string(c.from) + " range " +
                 std::to_string(c.range));
    const auto v = sample(c.type, [&](void* d, const Shape& s, const Strides& st) {
      random_from_to(d, c.type, s, st, 99, 4, c.from, c.range);
    });
    const double lo = static_cast<double>(c.from);
    const double hi = static_cast<double>(c.from) + static_cast<double>(c.range);
    std::set<double> distinct;
    for (double x : v) {
      ASSERT_GE(x, lo);
      ASSERT_LT(x, hi);
      ASSERT_EQ(x, std::floor(x));
      if (distinct.size() < 300) distinct.insert(x);
    }
    // Small ranges are covered completely; large ones are not constant.
    EXPECT_EQ(distinct.size(), std::min<uint64_t>(c.range, 300));
  }
}

TEST(Random, GeometricIsAPositiveInteger) {
  for (ScalarType type : kernel("geometric").types) {
    SCOPED_TRACE(scalar_type_name(type));
    for (double p : {0.25, 0.9}) {
      const auto v = sample(type, [&](void* d, const Shape& s, const Strides& st) {
        geometric(d, type, s, st, 31, 0, p);
      });
      for (double x : v) {
        ASSERT_GE(x, 1.0);
        ASSERT_EQ(x, std::floor(x));
      }
    }
    const auto ones = sample(type, [&](void* d, const Shape& s, const Strides& st) {
      geometric(d, type, s, st, 31, 0, 1.0);
    });
    for (double x : ones) ASSERT_EQ(x, 1.0);
  }
  // A tiny p saturates integer dtypes instead of overflowing.
  const auto v = sample(ScalarType::Int8, [&](void* d, const Shape& s, const Strides& st) {
    geometric(d, ScalarType::Int8, s, st, 31, 0, 1e-9);
  });
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 127.0);
}

TEST(Random, ExponentialAndCauchyAreFinite) {
  for (ScalarType type : {ScalarType::Float32, ScalarType::Float64}) {
    SCOPED_TRACE(scalar_type_name(type));
    const auto e = sample(type, [&](void* d, const Shape& s, const Strides& st) {
      exponential(d, type, s, st, 8, 0, 3.0);
    });
    for (double x : e) {
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_FALSE(std::signbit(x)) << x;
    }
    const auto c = sample(type, [&](void* d, const Shape& s, const Strides& st) {
      cauchy(d, type, s, st, 8, 0, 0.0, 1.0);
    });
    for (double x : c) ASSERT_TRUE(std::isfinite(x));
  }
}

// ---------------------------------------------------------------- moments

struct Moments {
  double mean, variance;
};

Moments moments(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return {mean, squares / static_cast<double>(v.size() - 1)};
}

TEST(Random, MomentsOf100kSamples) {
  for (ScalarType type : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(type));
    const auto u = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      uniform(d, type, s, st, 1, 0, 0.0, 1.0);
    }));
    EXPECT_NEAR(u.mean, 0.5, 0.01);
    EXPECT_NEAR(u.variance, 1.0 / 12, 0.005);
    const auto n = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      normal(d, type, s, st, 2, 0, 0.0, 1.0);
    }));
    EXPECT_NEAR(n.mean, 0.0, 0.02);
    EXPECT_NEAR(std::sqrt(n.variance), 1.0, 0.02);
    const auto shifted = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      normal(d, type, s, st, 2, 1, 3.0, 0.5);
    }));
    EXPECT_NEAR(shifted.mean, 3.0, 0.02);
    EXPECT_NEAR(std::sqrt(shifted.variance), 0.5, 0.02);
    const auto e = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      exponential(d, type, s, st, 3, 0, 2.0);
    }));
    EXPECT_NEAR(e.mean, 0.5, 0.01);
    const auto ln = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      log_normal(d, type, s, st, 4, 0, 0.0, 0.5);
    }));
    EXPECT_NEAR(ln.mean, std::exp(0.125), 0.02);
    auto c = sample(type, [&](void* d, const Shape& s, const Strides& st) {
      cauchy(d, type, s, st, 5, 0, 1.0, 2.0);
    });
    std::nth_element(c.begin(), c.begin() + kSamples / 2, c.end());
    EXPECT_NEAR(c[kSamples / 2], 1.0, 0.05) << "median";
  }
  for (ScalarType type : kernel("geometric").types) {
    SCOPED_TRACE(scalar_type_name(type));
    const auto g = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      geometric(d, type, s, st, 6, 0, 0.25);
    }));
    EXPECT_NEAR(g.mean, 4.0, 0.1);
  }
  for (ScalarType type : kAllTypes) {
    SCOPED_TRACE(scalar_type_name(type));
    const auto b = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      bernoulli_scalar(d, type, s, st, 7, 0, 0.3);
    }));
    EXPECT_NEAR(b.mean, 0.3, 0.01);
    const float p = 0.3f;
    const Strides broadcast{};
    const auto bt = moments(sample(type, [&](void* d, const Shape& s, const Strides& st) {
      bernoulli_tensor(d, type, s, st, 7, 1, &p, ScalarType::Float32, broadcast);
    }));
    EXPECT_NEAR(bt.mean, 0.3, 0.01);
  }
}

}  // namespace
}  // namespace mlu::kernels
