// Complex pointwise arithmetic (complex.h).
//
// Note [Complex pointwise]
// An op computed in a complex type reads every operand as std::complex<R>
// (a real operand with imaginary part 0, a bool as 0 or 1), applies the op in
// that type and writes the result converted to the output's dtype: the real
// part for a real output (abs and angle compute |z| and arg z as complex
// numbers with imaginary part 0), `re != 0 || im != 0` for a bool one
// (predicates give 1 or 0). The formulas are c10::complex's, which PyTorch's
// CPU kernels use: plain products (ac - bd, ad + bc), the scaled division of
// c10/util/complex.h, and the C++ library's elementary functions (c10's
// complex math forwards to them), so results agree with the CPU to rounding.
// The loop is scalar, split over the compute threads by element ranges:
// inputs of the compute type or its real type are read directly (with the
// output in the compute type, its real type or bool), other mixes through a
// load or store function chosen once per operand dtype.
#include "complex.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels::detail {
namespace {

using Op = PointwiseOp;

// c10::complex's operator/ (numpy's algorithm: scale by the larger part of
// the divisor; 0 / 0 gives NaN parts and x / 0 infinities, as on the CPU),
// its two cases written with selects rather than a branch on the data.
template <class R>
[[gnu::always_inline]] inline std::complex<R> divide(std::complex<R> x, std::complex<R> y) {
  const R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  const R abs_c = std::abs(c), abs_d = std::abs(d);
  if (abs_c == R(0) && abs_d == R(0)) return {a / abs_c, b / abs_d};
  const bool c_big = abs_c >= abs_d;
  const R big = c_big ? c : d, small = c_big ? d : c;
  const R rat = small / big;
  const R scl = R(1) / (big + small * rat);
  // c_big: ((a + b rat), (b - a rat)); else: ((b + a rat), -(a - b rat)).
  const R p = c_big ? a : b, q = c_big ? b : a;
  const R sign = c_big ? R(1) : R(-1);
  return {(p + q * rat) * scl, sign * (q - p * rat) * scl};
}

// c10::complex's operator* (no C99 Annex G NaN recovery).
template <class R>
[[gnu::always_inline]] inline std::complex<R> multiply(std::complex<R> x, std::complex<R> y) {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}

// |z| as std::abs (hypot) gives it. For float parts: the square root of the
// sum of squares in double, where the squares are exact and nothing
// overflows, as glibc's hypotf computes it (inlined; a call to hypotf per
// element cost sgn and abs eight times the CPU's time); an infinite part
// makes |z| infinite even beside a NaN, as hypot's does.
template <class R>
[[gnu::always_inline]] inline R magnitude(std::complex<R> z) {
  if constexpr (std::is_same_v<R, float>) {
    const double re = z.real(), im = z.imag();
    const float m = static_cast<float>(std::sqrt(re * re + im * im));
    return std::isinf(re) || std::isinf(im) ? std::numeric_limits<float>::infinity() : m;
  } else {
    return std::abs(z);
  }
}

template <class R>
std::complex<R> truth(bool v) {
  return {v ? R(1) : R(0), R(0)};
}

template <class R>
bool nonzero(std::complex<R> v) {
  return v.real() != R(0) || v.imag() != R(0);
}

template <class R>
bool is_nan(std::complex<R> v) {
  return std::isnan(v.real()) || std::isnan(v.imag());
}

// The op on one element; p: the op's scalar parameters, complex.
template <Op op, class R>
std::complex<R> apply(const OpParams& p, std::complex<R> a, std::complex<R> b, std::complex<R> c) {
  using C = std::complex<R>;
  const C value0{static_cast<R>(p.f[0]), static_cast<R>(p.f_imag[0])};
  if constexpr (op == Op::Copy) return a;
  if constexpr (op == Op::Neg) return -a;
  if constexpr (op == Op::Conj) return std::conj(a);
  if constexpr (op == Op::Abs) return {magnitude(a), R(0)};
  if constexpr (op == Op::Angle) return {std::arg(a), R(0)};
  if constexpr (op == Op::Sgn) return a == C(0) ? C(0) : a / magnitude(a);
  if constexpr (op == Op::Reciprocal) return divide(C(1), a);
  if constexpr (op == Op::Sqrt) return std::sqrt(a);
  if constexpr (op == Op::Rsqrt) return divide(C(1), std::sqrt(a));
  if constexpr (op == Op::Exp) return std::exp(a);
  if constexpr (op == Op::Log) return std::log(a);
  if constexpr (op == Op::Log2) return std::log(a) / std::log(R(2));  // the real divisor of the CPU's vectorised log2
  if constexpr (op == Op::Log10) return std::log10(a);
  if constexpr (op == Op::Sin) return std::sin(a);
  if constexpr (op == Op::Cos) return std::cos(a);
  if constexpr (op == Op::Tan) return std::tan(a);
  if constexpr (op == Op::Sinh) return std::sinh(a);
  if constexpr (op == Op::Cosh) return std::cosh(a);
  if constexpr (op == Op::Tanh) return std::tanh(a);
  if constexpr (op == Op::Asin) return std::asin(a);
  if constexpr (op == Op::Acos) return std::acos(a);
  if constexpr (op == Op::Atan) return std::atan(a);
  if constexpr (op == Op::Asinh) return std::asinh(a);
  if constexpr (op == Op::Acosh) return std::acosh(a);
  if constexpr (op == Op::Atanh) return std::atanh(a);
  if constexpr (op == Op::Sigmoid) return divide(C(1), C(1) + std::exp(-a));
  if constexpr (op == Op::IsNan) return truth<R>(is_nan(a));
  if constexpr (op == Op::IsInf) return truth<R>(std::isinf(a.real()) || std::isinf(a.imag()));
  if constexpr (op == Op::IsFinite) return truth<R>(std::isfinite(a.real()) && std::isfinite(a.imag()));
  if constexpr (op == Op::LogicalNot) return truth<R>(!nonzero(a));
  // PowScalar: p[0] = exponent; binary; Add, Sub: p[0] = alpha
  if constexpr (op == Op::Add) return a + multiply(value0, b);
  if constexpr (op == Op::Sub) return a - multiply(value0, b);
  if constexpr (op == Op::Mul) return multiply(a, b);
  if constexpr (op == Op::Div) return divide(a, b);
  if constexpr (op == Op::Pow) return std::pow(a, b);
  if constexpr (op == Op::PowScalar) {
    // The CPU's special exponents (pow_tensor_scalar_kernel), then std::pow.
    if (value0 == C(0.5)) return std::sqrt(a);
    if (value0 == C(-0.5)) return divide(C(1), std::sqrt(a));
    if (value0 == C(-1)) return divide(C(1), a);
    if (value0 == C(2)) return multiply(a, a);
    if (value0 == C(3)) return multiply(multiply(a, a), a);
    if (value0 == C(-2)) return divide(C(1), multiply(a, a));
    return std::pow(a, value0);
  }
  // (grad, result): the CPU's complex backward conjugates the derivative.
  if constexpr (op == Op::SigmoidBackward) return multiply(a, std::conj(multiply(C(1) - b, b)));
  if constexpr (op == Op::TanhBackward) return multiply(a, std::conj(C(1) - multiply(b, b)));
  if constexpr (op == Op::Eq) return truth<R>(a == b);
  if constexpr (op == Op::Ne) return truth<R>(a != b);
  if constexpr (op == Op::LogicalAnd) return truth<R>(nonzero(a) && nonzero(b));
  if constexpr (op == Op::LogicalOr) return truth<R>(nonzero(a) || nonzero(b));
  if constexpr (op == Op::LogicalXor) return truth<R>(nonzero(a) != nonzero(b));
  if constexpr (op == Op::MakeComplex) return {a.real(), b.real()};
  if constexpr (op == Op::Polar) return {a.real() * std::cos(b.real()), a.real() * std::sin(b.real())};
  // ternary; Addcmul, Addcdiv: p[0] = value
  if constexpr (op == Op::Where) return nonzero(a) ? b : c;
  if constexpr (op == Op::Addcmul) return a + multiply(multiply(value0, b), c);
  if constexpr (op == Op::Addcdiv) return a + multiply(value0, divide(b, c));
  return a;
}

#define MLU_COMPLEX_OPS(X)                                                                                 \
  X(Copy) X(Neg) X(Conj) X(Abs) X(Angle) X(Sgn) X(Reciprocal) X(Sqrt) X(Rsqrt) X(Exp) X(Log) X(Log2)     \
  X(Log10) X(Sin) X(Cos) X(Tan) X(Sinh) X(Cosh) X(Tanh) X(Asin) X(Acos) X(Atan) X(Asinh) X(Acosh)         \
  X(Atanh) X(Sigmoid) X(IsNan) X(IsInf) X(IsFinite) X(LogicalNot) X(PowScalar) X(Add) X(Sub) X(Mul) X(Div) \
  X(Pow) X(SigmoidBackward) X(TanhBackward)                                                               \
  X(Eq) X(Ne) X(LogicalAnd) X(LogicalOr) X(LogicalXor) X(MakeComplex) X(Polar) X(Where) X(Addcmul)       \
  X(Addcdiv)

template <class C>
using LoadFn = C (*)(const char* base, int64_t offset);
template <class C>
using StoreFn = void (*)(char* base, int64_t offset, C value);

template <class C, class S>
C load_as(const char* base, int64_t offset) {
  return convert<C>(reinterpret_cast<const S*>(base)[offset]);
}
template <class C, class D>
void store_as(char* base, int64_t offset, C value) {
  reinterpret_cast<D*>(base)[offset] = convert<D>(value);
}

template <class C>
LoadFn<C> loader(ScalarType type) {
  LoadFn<C> fn = nullptr;
  dispatch(type, [&](auto tag) { fn = &load_as<C, typename decltype(tag)::type>; });
  return fn;
}
template <class C>
StoreFn<C> storer(ScalarType type) {
  StoreFn<C> fn = nullptr;
  dispatch(type, [&](auto tag) { fn = &store_as<C, typename decltype(tag)::type>; });
  return fn;
}

// Below this many elements one thread runs the op.
constexpr int64_t kGrain = 8192;

// Elements [lo, hi) of the row-major iteration space, row by row: body(row
// offsets of every operand, first j, last j) over the innermost dim.
template <class Body>
void for_each_row_piece(const Shape& shape, const Operand* operands, int n_operands, int64_t lo, int64_t hi,
                        Body&& body) {
  const int ndim = shape.ndim;
  const int64_t inner = shape.sizes[ndim - 1];
  for (int64_t at = lo; at < hi;) {
    const int64_t row = at / inner, j0 = at % inner, j1 = std::min(inner, j0 + (hi - at));
    int64_t offset[4] = {};
    int64_t rest = row;
    for (int d = ndim - 2; d >= 0; --d) {
      const int64_t i = rest % shape.sizes[d];
      rest /= shape.sizes[d];
      for (int k = 0; k < n_operands; ++k) offset[k] += i * operands[k].strides.v[d];
    }
    body(offset, j0, j1);
    at += j1 - j0;
  }
}

// Note [Complex magnitudes in rows]
// abs and sgn of complex float (the STFT losses' forward and backward) over a
// unit-stride row: the element loop as plain float lanes, magnitude() itself
// and selects in place of apply()'s branch, so the compiler vectorises it.
// Same values as apply()'s: a zero magnitude happens only for z == 0 (a
// float's square is never below double's range).
template <Op op, class D>
void magnitude_row(const float* z, D* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float re = z[2 * j], im = z[2 * j + 1];
    const float m = magnitude(std::complex<float>(re, im));
    if constexpr (op == Op::Abs && std::is_same_v<D, float>) {
      dst[j] = m;
    } else if constexpr (op == Op::Abs) {
      dst[j] = D(m, 0.0f);
    } else {
      const bool zero = re == 0.0f && im == 0.0f;
      dst[j] = D(zero ? 0.0f : re / m, zero ? 0.0f : im / m);
    }
  }
}

// Inputs of the compute type or its real type (`real[k]`), the output of
// type D (the compute type, its real type, or bool): typed loads and stores
// the compiler can inline.
template <Op op, class R, class D>
void run_typed(const Shape& shape, const Operand* operands, const OpParams& params, const bool* real, int64_t lo,
               int64_t hi) {
  using C = std::complex<R>;
  const int n_operands = arity(op) + 1;
  int64_t step[4] = {};
  for (int k = 0; k < n_operands; ++k) step[k] = operands[k].strides.v[shape.ndim - 1];
  for_each_row_piece(shape, operands, n_operands, lo, hi, [&](const int64_t* offset, int64_t j0, int64_t j1) {
    const void* src[4] = {};
    for (int k = 1; k < n_operands; ++k) {
      src[k] = real[k] ? static_cast<const void*>(static_cast<const R*>(operands[k].data) + offset[k])
                       : static_cast<const void*>(static_cast<const C*>(operands[k].data) + offset[k]);
    }
    const auto load = [&](int k, int64_t j) -> C {
      if (k >= n_operands) return C();
      return real[k] ? C(static_cast<const R*>(src[k])[j * step[k]], R(0)) : static_cast<const C*>(src[k])[j * step[k]];
    };
    D* dst = static_cast<D*>(operands[0].data) + offset[0];
    if constexpr (std::is_same_v<R, float> &&
                  ((op == Op::Abs && !std::is_same_v<D, bool>) || (op == Op::Sgn && std::is_same_v<D, C>))) {
      if (!real[1] && step[0] == 1 && step[1] == 1) {
        magnitude_row<op>(static_cast<const float*>(src[1]) + 2 * j0, dst + j0, j1 - j0);
        return;
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      dst[j * step[0]] = convert<D>(apply<op, R>(params, load(1, j), load(2, j), load(3, j)));
    }
  });
}

// Any operand dtypes: each operand through a load or store function.
template <Op op, class R>
void run_converting(const Shape& shape, const Operand* operands, const OpParams& params, int64_t lo, int64_t hi) {
  using C = std::complex<R>;
  const int n_operands = arity(op) + 1;
  LoadFn<C> load[4] = {};
  const StoreFn<C> store = storer<C>(operands[0].dtype);
  for (int k = 1; k < n_operands; ++k) load[k] = loader<C>(operands[k].dtype);
  int64_t step[4] = {};
  for (int k = 0; k < n_operands; ++k) step[k] = operands[k].strides.v[shape.ndim - 1];
  for_each_row_piece(shape, operands, n_operands, lo, hi, [&](const int64_t* offset, int64_t j0, int64_t j1) {
    const char* in[4] = {};
    for (int k = 1; k < n_operands; ++k) in[k] = static_cast<const char*>(operands[k].data);
    char* out = static_cast<char*>(operands[0].data);
    for (int64_t j = j0; j < j1; ++j) {
      C v[4] = {};
      for (int k = 1; k < n_operands; ++k) v[k] = load[k](in[k], offset[k] + j * step[k]);
      store(out, offset[0] + j * step[0], apply<op, R>(params, v[1], v[2], v[3]));
    }
  });
}

template <Op op, class R>
void run(const Shape& shape, const Operand* operands, const OpParams& params) {
  const int n_operands = arity(op) + 1;
  const ScalarType type = std::is_same_v<R, float> ? ScalarType::ComplexFloat : ScalarType::ComplexDouble;
  const ScalarType real = std::is_same_v<R, float> ? ScalarType::Float32 : ScalarType::Float64;
  bool typed_inputs = true;
  bool is_real[4] = {};
  for (int k = 1; k < n_operands; ++k) {
    is_real[k] = operands[k].dtype == real;
    typed_inputs = typed_inputs && (operands[k].dtype == type || is_real[k]);
  }
  const ScalarType out = operands[0].dtype;
  parallel_for(0, numel(shape), kGrain, [&](int64_t lo, int64_t hi) {
    if (typed_inputs && out == type) {
      run_typed<op, R, std::complex<R>>(shape, operands, params, is_real, lo, hi);
    } else if (typed_inputs && out == real) {
      run_typed<op, R, R>(shape, operands, params, is_real, lo, hi);
    } else if (typed_inputs && out == ScalarType::Bool) {
      run_typed<op, R, bool>(shape, operands, params, is_real, lo, hi);
    } else {
      run_converting<op, R>(shape, operands, params, lo, hi);
    }
  });
}

}  // namespace

bool complex_supports(PointwiseOp op) {
  switch (op) {
#define MLU_COMPLEX_CASE(name) case Op::name:
    MLU_COMPLEX_OPS(MLU_COMPLEX_CASE)
#undef MLU_COMPLEX_CASE
    return true;
    default: return false;
  }
}

void complex_pointwise(PointwiseOp op, ScalarType compute, const Shape& shape, const Operand* operands,
                       const OpParams& params) {
  const bool single = compute == ScalarType::ComplexFloat;
  switch (op) {
#define MLU_COMPLEX_RUN(name)                                                   \
  case Op::name:                                                                \
    single ? run<Op::name, float>(shape, operands, params) : run<Op::name, double>(shape, operands, params); \
    break;
    MLU_COMPLEX_OPS(MLU_COMPLEX_RUN)
#undef MLU_COMPLEX_RUN
    default: break;
  }
}

}  // namespace mlu::kernels::detail
