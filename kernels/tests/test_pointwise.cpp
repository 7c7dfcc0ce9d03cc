// The optimised pointwise kernels of every ISA against the scalar reference,
// for every op of the catalogue, over random shapes, strides and dtypes.
#include "mlu_kernels/pointwise.h"

#include <cxxabi.h>
#include <gtest/gtest.h>

#include <complex>
#include <cstdlib>
#include <random>

#include <bit>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using testutil::Buffer;
using testutil::Rng;

constexpr PointwiseOp kAllOps[] = {
#define MLU_POINTWISE_ALL(name, arity, kinds) PointwiseOp::name,
    MLU_POINTWISE_OPS(MLU_POINTWISE_ALL)
#undef MLU_POINTWISE_ALL
};

constexpr ScalarType kComputeTypes[] = {
    ScalarType::Bool,  ScalarType::UInt8,   ScalarType::Int8,    ScalarType::Int16,
    ScalarType::Int32, ScalarType::Int64,   ScalarType::Float16, ScalarType::BFloat16,
    ScalarType::Float32, ScalarType::Float64,
};

bool is_floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}


// The ops whose optimised body is SLEEF's vector math (vector_math.h) while
// the reference uses libm: the two may differ by an ulp or two, at overflow
// thresholds (SLEEF overflows to inf slightly early, as CPU PyTorch does), in
// cancellations, and on signaling NaN inputs.
bool uses_vector_math(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::Exp: case PointwiseOp::Exp2: case PointwiseOp::Expm1:
    case PointwiseOp::Log: case PointwiseOp::Log2: case PointwiseOp::Log10:
    case PointwiseOp::Log1p: case PointwiseOp::Sin: case PointwiseOp::Cos:
    case PointwiseOp::Tan: case PointwiseOp::Asin: case PointwiseOp::Acos:
    case PointwiseOp::Atan: case PointwiseOp::Sinh: case PointwiseOp::Cosh:
    case PointwiseOp::Tanh:
    case PointwiseOp::Atanh: case PointwiseOp::Erf: case PointwiseOp::Erfc:
    case PointwiseOp::Lgamma: case PointwiseOp::Pow: case PointwiseOp::Atan2: case PointwiseOp::PowScalar:
    case PointwiseOp::Sigmoid: case PointwiseOp::Silu: case PointwiseOp::Gelu:
    case PointwiseOp::GeluTanh: case PointwiseOp::Mish: case PointwiseOp::Softplus:
    case PointwiseOp::Elu: case PointwiseOp::SiluBackward: case PointwiseOp::GeluBackward:
    case PointwiseOp::GeluTanhBackward:
      return true;
    default:
      return false;
  }
}

// Equal bits or both NaN; for vector-math ops, also within a few ulps of the
// less precise of compute and output type (or an absolute tolerance, or
// both beyond 1e38, or a NaN input's answer).
// Ops whose ISA variants round differently from the reference (built for the
// baseline ISA) because they contract to fused multiply-adds where the ISA has
// them, as the CPU's PyTorch does: add/sub with alpha (ops.h add_scaled) and
// the special functions (Note [Special functions contract to FMA]).
bool rounds_with_fma(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::Add: case PointwiseOp::Sub: case PointwiseOp::I0: case PointwiseOp::I0e:
    case PointwiseOp::I1: case PointwiseOp::I1e: case PointwiseOp::Ndtri: case PointwiseOp::Erfcx:
    case PointwiseOp::AiryAi: case PointwiseOp::BesselJ0: case PointwiseOp::BesselJ1:
    case PointwiseOp::BesselY0: case PointwiseOp::BesselY1: case PointwiseOp::ModifiedBesselI0:
    case PointwiseOp::ModifiedBesselI1: case PointwiseOp::ModifiedBesselK0:
    case PointwiseOp::ModifiedBesselK1: case PointwiseOp::ScaledModifiedBesselK0:
    case PointwiseOp::ScaledModifiedBesselK1: case PointwiseOp::SphericalBesselJ0:
    case PointwiseOp::Igamma: case PointwiseOp::Igammac:
      return true;
    default:
      return false;
  }
}

bool close_element(PointwiseOp op, ScalarType type, ScalarType compute, const unsigned char* a,
                   const unsigned char* b) {
  if (testutil::same_element(type, a, b)) return true;
  if (!is_floating(type) || !(uses_vector_math(op) || rounds_with_fma(op))) return false;
  const double x = testutil::element_value(type, a), y = testutil::element_value(type, b);
  // Fused, an intermediate that overflows unfused (inf - inf: NaN) stays finite.
  if (std::isnan(x) != std::isnan(y)) {
    return op == PointwiseOp::Pow || op == PointwiseOp::PowScalar || rounds_with_fma(op);
  }
  if (std::abs(x) >= 1e38 && std::abs(y) >= 1e38 && (x > 0) == (y > 0)) return true;
  // SLEEF's log1p/asinh/acosh overflow to inf for inputs beyond ~1e38, as
  // CPU PyTorch (also SLEEF) does; libm stays finite.
  if (std::isinf(x) && !std::isinf(y)) return true;
  if (std::isinf(x) || std::isinf(y)) return false;
  auto rtol_of = [](ScalarType t) {
    return t == ScalarType::Float64 ? 1e-13 : (t == ScalarType::Float16 || t == ScalarType::BFloat16) ? 1e-2 : 2e-6;
  };
  const double rtol = std::max(rtol_of(type), is_floating(compute) ? rtol_of(compute) : 0.0);
  // Backward formulas cancel (cdf + x * pdf): an ulp of SLEEF vs libm in a
  // term becomes a larger relative error of the sum.
  const bool cancels = op == PointwiseOp::GeluBackward || op == PointwiseOp::SiluBackward ||
                       op == PointwiseOp::GeluTanhBackward;
  const double atol = rtol * 8;
  if (cancels) return std::abs(x - y) <= 1e-4 * std::max(std::abs(x), std::abs(y)) + atol;
  return std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + atol;
}

// Fills params with the values an op is typically called with (and some it is not).
OpParams random_params(Rng& rng) {
  OpParams p;
  for (int k = 0; k < 4; ++k) {
    p.f[k] = testutil::chance(rng, 0.2) ? -1.0 : std::uniform_real_distribution<double>(-3, 3)(rng);
    p.i[k] = testutil::uniform(rng, -3, 3);
  }
  p.i[3] = testutil::uniform(rng, 0, 1);
  return p;
}

struct Case {
  PointwiseOp op;
  Isa isa;
};

class PointwiseTest : public ::testing::TestWithParam<Case> {};

// The orthogonal polynomials take their degree as a float operand that the
// CPU's formula converts to an integer (undefined behaviour out of range) and
// loops over: random operands make them slow and compiler-dependent. Their
// values are checked against PyTorch's CPU in tests/test_special.py instead.
bool takes_degree(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::ChebyshevT: case PointwiseOp::ChebyshevU: case PointwiseOp::ChebyshevV:
    case PointwiseOp::ChebyshevW: case PointwiseOp::ShiftedChebyshevT: case PointwiseOp::ShiftedChebyshevU:
    case PointwiseOp::ShiftedChebyshevV: case PointwiseOp::ShiftedChebyshevW: case PointwiseOp::HermiteH:
    case PointwiseOp::HermiteHe: case PointwiseOp::LaguerreL: case PointwiseOp::LegendreP:
      return true;
    default:
      return false;
  }
}

// Zeta and Polygamma (through zeta) sum upstream's Cephes series one term at a
// time from q up past 9: a negative non-integer q costs about |q| pow calls,
// and the random magnitudes (up to 1e8) made these cases most of the suite's
// time. Their finite operands are folded into (-1000, 1000); NaN, inf, zeros,
// integers and subnormals keep their meaning.
bool series_length_grows_with_operand(PointwiseOp op) {
  return op == PointwiseOp::Zeta || op == PointwiseOp::Polygamma;
}

void fold_magnitudes(Buffer& buffer) {
  if (!is_floating(buffer.type())) return;
  for (int64_t i = 0; i < buffer.count(); ++i) {
    const double v = testutil::element_value(buffer.type(), buffer.element(i));
    if (std::isfinite(v) && std::fabs(v) >= 1000) testutil::put_real(buffer.type(), buffer.element(i), std::fmod(v, 1000.0));
  }
}

TEST_P(PointwiseTest, MatchesReferenceOnRandomViews) {
  const auto [op, isa] = GetParam();
  if (takes_degree(op)) GTEST_SKIP() << pointwise_name(op) << ": see takes_degree";
  set_isa(isa);
  Rng rng(1234 + static_cast<int>(op));
  const int n_inputs = arity(op);
  int checked = 0;
  for (ScalarType compute : kComputeTypes) {
    if (!pointwise_supports(op, compute)) continue;
    for (int iter = 0; iter < 25; ++iter) {
      const Shape shape = testutil::random_shape(rng);
      Operand operands[4];
      std::vector<Buffer> inputs;
      inputs.reserve(3);
      for (int k = 0; k < n_inputs; ++k) {
        // Mostly the compute type itself; sometimes another dtype to convert from.
        const ScalarType type = testutil::chance(rng, 0.7)
                                    ? compute
                                    : kComputeTypes[testutil::uniform(rng, 0, 9)];
        const auto layout = testutil::random_layout(shape, rng, /*allow_broadcast=*/true);
        inputs.emplace_back(type, layout.span);
        testutil::fill_random(inputs.back(), rng, !is_floating(compute));
        if (series_length_grows_with_operand(op)) fold_magnitudes(inputs.back());
        operands[k + 1] = {inputs.back().element(layout.offset), type, layout.strides};
      }
      const ScalarType out_type = testutil::chance(rng, 0.8) ? compute : ScalarType::Float64;
      const auto out_layout = testutil::random_layout(shape, rng, /*allow_broadcast=*/false);
      Buffer actual(out_type, out_layout.span);
      Buffer expected(out_type, out_layout.span);
      const OpParams params = random_params(rng);
      operands[0] = {actual.element(out_layout.offset), out_type, out_layout.strides};
      pointwise(op, compute, shape, operands, params);
      operands[0].data = expected.element(out_layout.offset);
      pointwise_ref(op, compute, shape, operands, params);
      for (int64_t i = 0; i < actual.count(); ++i) {
        ASSERT_TRUE(close_element(op, out_type, compute, actual.element(i), expected.element(i)))
            << pointwise_name(op) << " compute " << scalar_type_name(compute) << " out "
            << scalar_type_name(out_type) << " element " << i << ": "
            << testutil::hex(actual.element(i), element_size(out_type)) << " vs "
            << testutil::hex(expected.element(i), element_size(out_type));
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << pointwise_name(op) << " supports no compute type";
  set_isa(detected_isa());
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
    for (PointwiseOp op : kAllOps) {
      // Complex-only ops (Conj, Sgn, ...) have no real kernel to compare; ComplexPointwise checks them.
      bool real_kernel = false;
      for (ScalarType compute : kComputeTypes) real_kernel = real_kernel || pointwise_supports(op, compute);
      if (real_kernel) cases.push_back({op, isa});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllOps, PointwiseTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           return std::string(pointwise_name(info.param.op)) + "_" +
                                  isa_name(info.param.isa);
                         });

// A large contiguous and a large strided tensor go through several threads
// and many blocks; results must equal the reference exactly (no SLEEF op).
// Each op's name is its kernel's name in profiler tables, which demangle
// every name longer than one character (torch.autograd.profiler_util's
// StringTable): "Gt" read as "unsigned short _Imaginary". No name may parse
// as a mangled C++ type or symbol.
TEST(Pointwise, OpNamesReadAsThemselvesWhenDemangled) {
  const char* names[] = {
#define MLU_POINTWISE_NAME(name, arity, kinds) #name,
      MLU_POINTWISE_OPS(MLU_POINTWISE_NAME)
#undef MLU_POINTWISE_NAME
  };
  for (const char* name : names) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    const std::string read = status == 0 && demangled != nullptr ? demangled : name;
    std::free(demangled);
    EXPECT_EQ(read, name) << name << " demangles to " << read;
  }
}

TEST(Pointwise, LargeTensorsSplitAcrossThreads) {
  const int saved = num_threads();
  set_num_threads(4);
  const int64_t n = 1 << 20;
  std::vector<float> a(n), b(n), out(2 * n), ref(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000) * 0.25f - 100;
    b[i] = static_cast<float>(i % 77) - 30;
  }
  OpParams p;
  p.f[0] = 2.5;
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = n;
  Strides unit{}, two{};
  unit.v[0] = 1;
  two.v[0] = 2;
  for (const Strides& out_strides : {unit, two}) {
    Operand ops[3] = {{out.data(), ScalarType::Float32, out_strides},
                      {a.data(), ScalarType::Float32, unit},
                      {b.data(), ScalarType::Float32, unit}};
    pointwise(PointwiseOp::Add, ScalarType::Float32, shape, ops, p);
    ops[0].data = ref.data();
    pointwise_ref(PointwiseOp::Add, ScalarType::Float32, shape, ops, p);
    ASSERT_EQ(out, ref);
  }
  set_num_threads(saved);
}

// y = op(x) for float x on the kernels of `isa` (the caller checks the CPU has it).
std::vector<float> run_float(Isa isa, PointwiseOp op, const std::vector<float>& x) {
  const Isa saved = active_isa();
  set_isa(isa);
  std::vector<float> y(x.size());
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = static_cast<int64_t>(x.size());
  Strides unit{};
  unit.v[0] = 1;
  Operand ops[2] = {{y.data(), ScalarType::Float32, unit}, {const_cast<float*>(x.data()), ScalarType::Float32, unit}};
  pointwise(op, ScalarType::Float32, shape, ops, OpParams{});
  set_isa(saved);
  return y;
}

// Note [Fast float exp] (AVX-512 and AVX2 forms): every 61st float from -104 to 89, and the
// special values, against exp in double: at most 2 ulp of the float result
// (denormal results: 2 units of the smallest denormal), 0 and inf where exp
// underflows and overflows, NaN for NaN.
TEST(Pointwise, FastFloatExpWithinTwoUlps) {
  if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "CPU lacks AVX2";
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 61) {
    const float v = std::bit_cast<float>(bits);
    if (v <= 89.0f) x.push_back(v);
    if (v <= 104.0f) x.push_back(-v);
  }
  for (float v : {0.0f, -0.0f, 88.72283f, 88.72284f, -87.33654f, -103.97f, -104.0f, -104.5f, -200.0f, -1e30f, INFINITY,
                  -INFINITY, NAN}) {
    x.push_back(v);
  }
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (detected_isa() < isa) continue;
    SCOPED_TRACE(isa_name(isa));
    const std::vector<float> y = run_float(isa, PointwiseOp::Exp, x);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double exact = std::exp(static_cast<double>(x[i]));
      if (std::isnan(x[i])) {
        ASSERT_TRUE(std::isnan(y[i]));
      } else if (exact > 3.4028234663852886e38) {
        ASSERT_EQ(y[i], INFINITY) << x[i];
      } else if (x[i] <= -104.0f) {  // Note [exp to zero]: below 2^-150, rounded to 0
        ASSERT_EQ(y[i], 0.0f) << x[i];
      } else {
        const float rounded = static_cast<float>(exact);
        const double ulp = std::max(static_cast<double>(std::nextafter(rounded, INFINITY) - rounded), 1.401298464e-45);
        const double error = std::abs(y[i] - exact) / ulp;
        worst = std::max(worst, error);
        ASSERT_LE(error, 2.0) << "exp(" << x[i] << ") = " << y[i] << ", exact " << exact;
      }
    }
    RecordProperty(std::string("worst_ulp_") + isa_name(isa), std::to_string(worst));
  }
}

// An odd function's AVX-512 float kernel over every 61st float below `limit`
// in magnitude, both signs, plus `extra` values: NaN stays NaN, the sign
// follows the input's (so -0 stays -0), and every result is within 2 ulp of
// `exact` in double. Records the worst error.
void expect_odd_within_two_ulps(PointwiseOp op, double (*exact_fn)(double), uint32_t limit,
                                std::initializer_list<float> extra) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < limit; bits += 61) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  x.insert(x.end(), extra);
  for (float v : {0.0f, -0.0f, 1e-40f, -1e-40f, 20.0f, -1e30f, INFINITY, -INFINITY, NAN}) x.push_back(v);
  const std::vector<float> y = run_float(Isa::Avx512, op, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ASSERT_TRUE(std::isnan(y[i]));
      continue;
    }
    const double exact = exact_fn(static_cast<double>(x[i]));
    const float rounded = static_cast<float>(exact);
    const double ulp = std::max(static_cast<double>(std::nextafter(std::abs(rounded), INFINITY) - std::abs(rounded)),
                                1.401298464e-45);
    const double error = std::abs(y[i] - exact) / ulp;
    worst = std::max(worst, error);
    ASSERT_LE(error, 2.0) << pointwise_name(op) << "(" << x[i] << ") = " << y[i] << ", exact " << exact;
    ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << x[i];
  }
  ::testing::Test::RecordProperty("worst_ulp", std::to_string(worst));
}

// Note [Fast float tanh] (AVX-512): up to 10 in magnitude (tanh is 1 in float
// beyond 9.1), with the interval edges (0.125, binades, 9.5 where the result
// turns to 1).
TEST(Pointwise, FastFloatTanhWithinTwoUlps) {
  if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "CPU lacks AVX-512";
  expect_odd_within_two_ulps(PointwiseOp::Tanh, [](double v) { return std::tanh(v); }, 0x41200000u,
                             {0.125f, 0.12499999f, 0.15625f, 1.0f, 0.99999994f, 8.0f, 9.5f, 9.500001f, 10.0f});
}

// Note [Fast float erf] (AVX-512): up to 4.5 in magnitude (erf is 1 in float
// from 3.92 on), with the interval edges.
TEST(Pointwise, FastFloatErfWithinTwoUlps) {
  if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "CPU lacks AVX-512";
  expect_odd_within_two_ulps(PointwiseOp::Erf, [](double v) { return std::erf(v); }, 0x40900000u,
                             {0.125f, 0.12499999f, 1.0f, 0.99999994f, 3.9999998f, 4.0f});
}

// Note [Fast float log] (AVX-512 and AVX2 forms): every 61st positive float
// (denormals included) and the special values against log in double: at most
// 2 ulp; log(0) = -inf, log(negative) = NaN, log(inf) = inf.
TEST(Pointwise, FastFloatLogWithinTwoUlps) {
  if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "CPU lacks AVX2";
  std::vector<float> x;
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 61) x.push_back(std::bit_cast<float>(bits));
  const size_t n_finite = x.size();
  for (float v : {0.0f, -0.0f, -1.0f, -1e-40f, INFINITY, -INFINITY, NAN}) x.push_back(v);
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (detected_isa() < isa) continue;
    SCOPED_TRACE(isa_name(isa));
    const std::vector<float> y = run_float(isa, PointwiseOp::Log, x);
    double worst = 0;
    for (size_t i = 0; i < n_finite; ++i) {
      const double exact = std::log(static_cast<double>(x[i]));
      const float rounded = std::abs(static_cast<float>(exact));
      const double ulp = std::max(static_cast<double>(std::nextafter(rounded, INFINITY) - rounded), 1.401298464e-45);
      const double error = std::abs(y[i] - exact) / ulp;
      worst = std::max(worst, error);
      ASSERT_LE(error, 2.0) << "log(" << x[i] << ") = " << y[i] << ", exact " << exact;
    }
    const float* special = y.data() + n_finite;
    EXPECT_EQ(special[0], -INFINITY);
    EXPECT_EQ(special[1], -INFINITY);
    EXPECT_TRUE(std::isnan(special[2]));
    EXPECT_TRUE(std::isnan(special[3]));
    EXPECT_EQ(special[4], INFINITY);
    EXPECT_TRUE(std::isnan(special[5]));
    EXPECT_TRUE(std::isnan(special[6]));
    RecordProperty(std::string("worst_ulp_") + isa_name(isa), std::to_string(worst));
  }
}

// Float -> bfloat16 stores of every ISA (the block pipeline's, from float32
// inputs, and the register path's, bfloat16 * 1) equal bfloat16_from_float bit
// for bit on the values vector instructions get wrong: denormals (AVX512-BF16
// flushes them), NaNs of either sign and any payload (0x7FC0 for all), ties,
// overflow to infinity. 37 values, twice: whole vectors and a scalar tail.
TEST(Pointwise, BFloat16StoresEqualTheScalarConversion) {
  const std::vector<uint32_t> bits = {
      0x00000001, 0x80000001, 0x00400000, 0x807fffff, 0x00008000, 0x00018000, 0x007f8000,  // denormals
      0x00800000, 0x80800000,                                                              // smallest normals
      0x7fc00000, 0xffc00000, 0x7fc00001, 0x7f800001, 0xff812345, 0x7fffffff,              // NaNs
      0x3f808000, 0x3f818000, 0x3f808001, 0xbf808000, 0x3f807fff,                          // ties and near
      0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f800000, 0xff800000, 0x00000000, 0x80000000,  // edges
      0x3f800000, 0x40490fdb, 0xc0490fdb, 0x3eaaaaab, 0x42f6e979, 0x33d6bf95, 0x4b3c614e,
      0x2f800000, 0xbe99999a, 0x501502f9};
  std::vector<float> x;
  for (int rep = 0; rep < 2; ++rep) {
    for (uint32_t b : bits) x.push_back(std::bit_cast<float>(b));
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<BFloat16> as_bf16(n), ones(n, bfloat16_from_float(1.0f)), expected(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    as_bf16[i] = BFloat16{static_cast<uint16_t>(std::bit_cast<uint32_t>(x[i]) >> 16)};
    expected[i] = bfloat16_from_float(x[i]);
  }
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = n;
  Strides unit{};
  unit.v[0] = 1;
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (isa > detected_isa()) continue;
    set_isa(isa);
    Operand copy[2] = {{out.data(), ScalarType::BFloat16, unit}, {x.data(), ScalarType::Float32, unit}};
    pointwise(PointwiseOp::Copy, ScalarType::Float32, shape, copy, OpParams{});
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i].x, expected[i].x) << isa_name(isa) << " block store of " << std::hex << std::bit_cast<uint32_t>(x[i]);
    }
    Operand mul[3] = {{out.data(), ScalarType::BFloat16, unit},
                      {as_bf16.data(), ScalarType::BFloat16, unit},
                      {ones.data(), ScalarType::BFloat16, unit}};
    pointwise(PointwiseOp::Mul, ScalarType::BFloat16, shape, mul, OpParams{});
    for (int64_t i = 0; i < n; ++i) {
      const BFloat16 want = bfloat16_from_float(to_float(as_bf16[i]) * 1.0f);
      ASSERT_EQ(out[i].x, want.x) << isa_name(isa) << " register path, " << as_bf16[i].x << " * 1";
    }
  }
  set_isa(saved);
}

TEST(Pointwise, IntegerDivisionByZeroWritesZero) {
  int32_t a[3] = {7, -7, 0}, b[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = 3;
  Strides unit{};
  unit.v[0] = 1;
  for (PointwiseOp op : {PointwiseOp::DivTrunc, PointwiseOp::DivFloor, PointwiseOp::Remainder,
                         PointwiseOp::Fmod}) {
    Operand ops[3] = {{out, ScalarType::Int32, unit}, {a, ScalarType::Int32, unit}, {b, ScalarType::Int32, unit}};
    pointwise(op, ScalarType::Int32, shape, ops, OpParams{});
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], 0);
  }
}

TEST(Pointwise, CatalogueQueries) {
  EXPECT_EQ(arity(PointwiseOp::Exp), 1);
  EXPECT_EQ(arity(PointwiseOp::Add), 2);
  EXPECT_EQ(arity(PointwiseOp::Where), 3);
  EXPECT_STREQ(pointwise_name(PointwiseOp::Sigmoid), "Sigmoid");
  EXPECT_TRUE(pointwise_supports(PointwiseOp::Exp, ScalarType::BFloat16));
  EXPECT_FALSE(pointwise_supports(PointwiseOp::Exp, ScalarType::Int32));
  EXPECT_TRUE(pointwise_supports(PointwiseOp::Add, ScalarType::ComplexFloat));
  EXPECT_TRUE(pointwise_supports(PointwiseOp::Conj, ScalarType::ComplexDouble));
  EXPECT_FALSE(pointwise_supports(PointwiseOp::Conj, ScalarType::Float32));
  EXPECT_FALSE(pointwise_supports(PointwiseOp::Gelu, ScalarType::ComplexFloat));
  EXPECT_TRUE(pointwise_supports(PointwiseOp::BitwiseAnd, ScalarType::Bool));
}

}  // namespace
}  // namespace mlu::kernels

namespace mlu::kernels {
namespace {

// Complex ops against std::complex computed here, on a strided 2-D view with
// a broadcast real operand and a real output where the op has one.
TEST(ComplexPointwise, MatchesStdComplexOnStridedViews) {
  using C = std::complex<double>;
  const int64_t rows = 5, cols = 7;
  std::vector<C> a(rows * cols * 2), b(rows * cols);
  std::vector<double> r(cols);
  std::mt19937 gen(3);
  std::normal_distribution<double> d;
  for (auto& v : a) v = {d(gen), d(gen)};
  for (auto& v : b) v = {d(gen), d(gen)};
  for (auto& v : r) v = d(gen) + 3.0;
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = rows;
  shape.sizes[1] = cols;
  const Strides every_other{{cols * 2, 2}}, dense{{cols, 1}}, broadcast_row{{0, 1}};
  struct Expect {
    PointwiseOp op;
    int arity;
    C (*f)(C, C, double);
    bool real_out;
  };
  const Expect cases[] = {
      {PointwiseOp::Mul, 2, [](C x, C y, double) { return x * y; }, false},
      {PointwiseOp::Div, 2, [](C x, C y, double) { return x / y; }, false},
      {PointwiseOp::Add, 2, [](C x, C y, double) { return x + 2.5 * y; }, false},
      {PointwiseOp::Conj, 1, [](C x, C, double) { return std::conj(x); }, false},
      {PointwiseOp::Exp, 1, [](C x, C, double) { return std::exp(x); }, false},
      {PointwiseOp::Sgn, 1, [](C x, C, double) { return x / std::abs(x); }, false},
      {PointwiseOp::Abs, 1, [](C x, C, double) { return C(std::abs(x)); }, true},
      {PointwiseOp::Angle, 1, [](C x, C, double) { return C(std::arg(x)); }, true},
      {PointwiseOp::MakeComplex, 2, [](C x, C, double re) { return C(x.real(), re); }, false},
      {PointwiseOp::Polar, 2, [](C x, C, double re) { return std::polar(x.real(), re); }, false},
      {PointwiseOp::Eq, 2, [](C x, C y, double) { return C(x == y ? 1.0 : 0.0); }, false},
  };
  for (const auto& c : cases) {
    const bool takes_real = c.op == PointwiseOp::MakeComplex || c.op == PointwiseOp::Polar;
    std::vector<C> out(rows * cols);
    std::vector<double> real_out(rows * cols);
    Operand operands[3];
    operands[0] = c.real_out ? Operand{real_out.data(), ScalarType::Float64, dense}
                             : Operand{out.data(), ScalarType::ComplexDouble, dense};
    operands[1] = {a.data(), ScalarType::ComplexDouble, every_other};
    operands[2] = takes_real ? Operand{r.data(), ScalarType::Float64, broadcast_row}
                             : Operand{b.data(), ScalarType::ComplexDouble, dense};
    OpParams params;
    params.f[0] = 2.5;
    pointwise(c.op, ScalarType::ComplexDouble, shape, operands, params);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const C want = c.f(a[i * cols * 2 + j * 2], b[i * cols + j], r[j]);
        const C got = c.real_out ? C(real_out[i * cols + j]) : out[i * cols + j];
        EXPECT_NEAR(std::abs(got - want), 0.0, 1e-12 * (1 + std::abs(want))) << pointwise_name(c.op) << " " << i << "," << j;
      }
    }
  }
}

// Abs and Sgn of complex float take a vectorised row loop on unit strides
// (Note [Complex magnitudes in rows]) and apply() elsewhere: both must give
// hypot's magnitude, on ordinary values and on the edges (zero, subnormal and
// huge parts, infinities beside NaNs).
TEST(ComplexPointwise, FloatMagnitudesMatchHypotOnRowsAndStrides) {
  using C = std::complex<float>;
  constexpr float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float parts[] = {0.0f, -0.0f, 1e-45f, -3e-39f, 1e-20f, 1e20f, 3e38f, -3.4e38f, inf, -inf, nan, 1.5f, -2.25f};
  std::vector<C> z;
  for (float re : parts) {
    for (float im : parts) z.emplace_back(re, im);
  }
  std::mt19937 gen(5);
  std::normal_distribution<float> d;
  for (int i = 0; i < 1000; ++i) z.emplace_back(d(gen), d(gen));
  const int64_t n = static_cast<int64_t>(z.size());
  const auto same = [](float got, float want) {
    return (std::isnan(got) && std::isnan(want)) || got == want || std::abs(got - want) <= 1.2e-7f * std::abs(want);
  };
  for (const int64_t step : {int64_t{1}, int64_t{2}}) {
    Shape shape;
    shape.ndim = 1;
    shape.sizes[0] = n / step;
    const Strides in_strides{{step}}, unit{{1}};
    std::vector<float> magnitude(n);
    std::vector<C> magnitude_c(n), sign(n);
    Operand abs_real[2] = {{magnitude.data(), ScalarType::Float32, unit},
                           {z.data(), ScalarType::ComplexFloat, in_strides}};
    Operand abs_complex[2] = {{magnitude_c.data(), ScalarType::ComplexFloat, unit},
                              {z.data(), ScalarType::ComplexFloat, in_strides}};
    Operand sgn[2] = {{sign.data(), ScalarType::ComplexFloat, unit}, {z.data(), ScalarType::ComplexFloat, in_strides}};
    pointwise(PointwiseOp::Abs, ScalarType::ComplexFloat, shape, abs_real, {});
    pointwise(PointwiseOp::Abs, ScalarType::ComplexFloat, shape, abs_complex, {});
    pointwise(PointwiseOp::Sgn, ScalarType::ComplexFloat, shape, sgn, {});
    for (int64_t i = 0; i < n / step; ++i) {
      const C x = z[i * step];
      const float want = std::hypot(x.real(), x.imag());
      EXPECT_TRUE(same(magnitude[i], want)) << x << " step " << step << ": " << magnitude[i] << " vs " << want;
      EXPECT_TRUE(same(magnitude_c[i].real(), want) && magnitude_c[i].imag() == 0.0f) << x << " step " << step;
      const C want_sign = x == C(0) ? C(0) : x / want;
      EXPECT_TRUE(same(sign[i].real(), want_sign.real()) && same(sign[i].imag(), want_sign.imag()))
          << x << " step " << step << ": " << sign[i] << " vs " << want_sign;
    }
  }
}

TEST(ComplexPointwise, DivisionByZeroGivesTheCpusInfinitiesAndNaNs) {
  using C = std::complex<float>;
  C x[3] = {{1, 2}, {0, 0}, {1, 0}}, y[3] = {{0, 0}, {0, 0}, {0, 0}}, out[3];
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = 3;
  const Strides unit{{1}};
  Operand operands[3] = {{out, ScalarType::ComplexFloat, unit}, {x, ScalarType::ComplexFloat, unit},
                         {y, ScalarType::ComplexFloat, unit}};
  pointwise(PointwiseOp::Div, ScalarType::ComplexFloat, shape, operands, {});
  // c10::complex: (a / |c|, b / |d|) when both parts of the divisor are zero.
  EXPECT_TRUE(std::isinf(out[0].real()) && std::isinf(out[0].imag()));
  EXPECT_TRUE(std::isnan(out[1].real()) && std::isnan(out[1].imag()));
  EXPECT_TRUE(std::isinf(out[2].real()) && std::isnan(out[2].imag()));
}

}  // namespace
}  // namespace mlu::kernels
