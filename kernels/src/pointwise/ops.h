// The pointwise ops as scalar functors: `f(params, inputs...)` in the compute
// type T (float, double, an integer type or bool). They define the semantics
// (PyTorch CPU's, case by case) for the reference and for the optimised
// kernels, which run the same functors over blocks unless vector_math.h gives
// a vectorised body. Ops whose result is bool set kBoolResult.
// Parameters (OpParams index) are named in a comment per op.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "mlu_kernels/half.h"
#include "mlu_kernels/pointwise.h"
#include "integer_division.h"
#include "../common/isa_variants.h"

namespace mlu::kernels::ops {
inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

using detail::integer_div;
using detail::integer_rem;

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

template <class T>
inline T param(const OpParams& p, int k) {
  if constexpr (is_float_v<T>) {
    return static_cast<T>(p.f[k]);
  } else {
    return static_cast<T>(p.i[k]);
  }
}

template <class T>
inline bool is_nan(T v) {
  if constexpr (is_float_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// max/min that propagate NaN from either side (torch.maximum, clamp).
template <class T>
inline T max_nan(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a > b ? a : b;
}
template <class T>
inline T min_nan(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a < b ? a : b;
}

#define MLU_UNARY(Name, expr)                                        \
  struct Name {                                                      \
    template <class T>                                               \
    static T f([[maybe_unused]] const OpParams& p, T a) { return expr; } \
  };
#define MLU_UNARY_BOOL(Name, expr)                                   \
  struct Name {                                                      \
    static constexpr bool kBoolResult = true;                        \
    template <class T>                                               \
    static bool f([[maybe_unused]] const OpParams& p, T a) { return expr; } \
  };
#define MLU_BINARY(Name, expr)                                       \
  struct Name {                                                      \
    template <class T>                                               \
    static T f([[maybe_unused]] const OpParams& p, T a, T b) { return expr; } \
  };
#define MLU_BINARY_BOOL(Name, expr)                                  \
  struct Name {                                                      \
    static constexpr bool kBoolResult = true;                        \
    template <class T>                                               \
    static bool f([[maybe_unused]] const OpParams& p, T a, T b) { return expr; } \
  };

// ---- unary, any type ----
// The identity: with the engine's converting loads and stores, a dtype
// conversion (copy.cpp routes converting copies here).
MLU_UNARY(Copy, a)
MLU_UNARY(Neg, static_cast<T>(-a))
struct Abs {
  template <class T>
  static T f(const OpParams&, T a) {
    if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      return a;
    } else if constexpr (is_float_v<T>) {
      return std::abs(a);
    } else {
      return static_cast<T>(a < 0 ? -a : a);
    }
  }
};
struct Sign {
  template <class T>
  static T f(const OpParams&, T a) {
    if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      return static_cast<T>(a > 0);
    } else {
      return static_cast<T>((T(0) < a) - (a < T(0)));
    }
  }
};
struct Signbit {
  static constexpr bool kBoolResult = true;
  template <class T>
  static bool f(const OpParams&, T a) {
    if constexpr (is_float_v<T>) {
      return std::signbit(a);
    } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      return false;
    } else {
      return a < 0;
    }
  }
};
// Rounding is the identity on integers (PyTorch copies them).
#define MLU_ROUNDING(Name, fn)                                       \
  struct Name {                                                      \
    template <class T>                                               \
    static T f(const OpParams&, T a) {                               \
      if constexpr (is_float_v<T>) {                                 \
        return fn(a);                                                \
      } else {                                                       \
        return a;                                                    \
      }                                                              \
    }                                                                \
  };
MLU_ROUNDING(Floor, std::floor)
MLU_ROUNDING(Ceil, std::ceil)
MLU_ROUNDING(Round, std::nearbyint)  // half to even, like torch.round
MLU_ROUNDING(Trunc, std::trunc)
#undef MLU_ROUNDING
// relu = clamp_min(x, 0): NaN stays NaN.
MLU_UNARY(Relu, static_cast<T>(a < T(0) ? T(0) : a))
struct BitwiseNot {
  template <class T>
  static T f(const OpParams&, T a) {
    if constexpr (std::is_same_v<T, bool>) {
      return !a;
    } else {
      return static_cast<T>(~a);
    }
  }
};
MLU_UNARY_BOOL(LogicalNot, !static_cast<bool>(a))
MLU_UNARY_BOOL(IsNan, is_nan(a))
struct IsInf {
  static constexpr bool kBoolResult = true;
  template <class T>
  static bool f(const OpParams&, T a) {
    if constexpr (is_float_v<T>) {
      return std::isinf(a);
    } else {
      return false;
    }
  }
};
struct IsFinite {
  static constexpr bool kBoolResult = true;
  template <class T>
  static bool f(const OpParams&, T a) {
    if constexpr (is_float_v<T>) {
      return std::isfinite(a);
    } else {
      return true;
    }
  }
};
MLU_UNARY_BOOL(IsPosInf, is_float_v<T> && a == std::numeric_limits<T>::infinity())
MLU_UNARY_BOOL(IsNegInf, is_float_v<T> && std::is_signed_v<T> && a == -std::numeric_limits<T>::infinity())
// Clamp: [0] min, [1] max (min > max gives max, like PyTorch). ClampMin/Max: [0].
MLU_UNARY(Clamp, is_nan(a) ? a : std::min(std::max(a, param<T>(p, 0)), param<T>(p, 1)))
MLU_UNARY(ClampMin, is_nan(a) ? a : std::max(a, param<T>(p, 0)))
MLU_UNARY(ClampMax, is_nan(a) ? a : std::min(a, param<T>(p, 0)))
// Threshold: (x, other) -> x <= [0] threshold ? [1] value : other, the CPU's
// threshold kernel (forward passes other = x).
MLU_BINARY(Threshold, a <= param<T>(p, 0) ? param<T>(p, 1) : b)
// PowScalar: [0] exponent. Like PyTorch, exponents 2, 3, 0.5, -0.5, -1, -2
// are computed as products, square roots and reciprocals. For a BFloat16
// result the CPU multiplies in BFloat16 (i[0] of a floating compute type:
// kStorageBFloat16, Note [Division rounding in 16 bits]); the glue passes
// 16-bit results' exponents rounded to 16 bits, as the CPU reads them.
struct PowScalar {
  template <class T>
  static T f(const OpParams& p, T a);
};

// ---- unary, floating ----
MLU_UNARY(Frac, a - std::trunc(a))
// RoundDecimals: i[0] decimals.
struct RoundDecimals {
  template <class T>
  static T f(const OpParams& p, T a) {
    int64_t decimals = p.i[0];
    const bool neg = decimals < 0;
    if (neg) decimals = -decimals;
    const T ten_pow = static_cast<T>(std::pow(10, decimals));
    return neg ? std::nearbyint(a / ten_pow) * ten_pow : std::nearbyint(a * ten_pow) / ten_pow;
  }
};
MLU_UNARY(Reciprocal, T(1) / a)
MLU_UNARY(Sqrt, std::sqrt(a))
MLU_UNARY(Rsqrt, T(1) / std::sqrt(a))
MLU_UNARY(Exp, std::exp(a))
MLU_UNARY(Exp2, std::exp2(a))
MLU_UNARY(Expm1, std::expm1(a))
MLU_UNARY(Log, std::log(a))
MLU_UNARY(Log2, std::log2(a))
MLU_UNARY(Log10, std::log10(a))
MLU_UNARY(Log1p, std::log1p(a))
MLU_UNARY(Sin, std::sin(a))
MLU_UNARY(Cos, std::cos(a))
MLU_UNARY(Tan, std::tan(a))
MLU_UNARY(Asin, std::asin(a))
MLU_UNARY(Acos, std::acos(a))
MLU_UNARY(Atan, std::atan(a))
MLU_UNARY(Sinh, std::sinh(a))
MLU_UNARY(Cosh, std::cosh(a))
MLU_UNARY(Tanh, std::tanh(a))
MLU_UNARY(Asinh, std::asinh(a))
MLU_UNARY(Acosh, std::acosh(a))
MLU_UNARY(Atanh, std::atanh(a))
MLU_UNARY(Erf, std::erf(a))
MLU_UNARY(Erfc, std::erfc(a))
MLU_UNARY(Lgamma, std::lgamma(a))

// calc_erfinv of ATen/native/Math.h: a rational first guess, two Newton steps.
struct Erfinv {
  template <class T>
  static T f(const OpParams&, T y) {
    constexpr T a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
    constexpr T b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
    constexpr T c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
    constexpr T d[2] = {3.543889200, 1.637067800};
    const T y_abs = std::abs(y);
    if (y_abs > T(1)) return std::numeric_limits<T>::quiet_NaN();
    if (y_abs == T(1)) return std::copysign(std::numeric_limits<T>::infinity(), y);
    T x;
    if (y_abs <= T(0.7)) {
      const T z = y * y;
      const T num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
      const T dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + T(1);
      x = y * num / dem;
    } else {
      const T z = std::sqrt(-std::log((T(1) - y_abs) / T(2)));
      const T num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
      const T dem = (d[1] * z + d[0]) * z + T(1);
      x = std::copysign(num, y) / dem;
    }
    const T two_over_sqrt_pi = static_cast<T>(2.0 / std::sqrt(std::numbers::pi));
    x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
    x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
    return x;
  }
};

// calc_digamma of ATen/native/Math.h (in double).
struct Digamma {
  static double psi(double x) {
    if (x == 0) return std::copysign(INFINITY, -x);
    if (x < 0) {
      if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
      double q;
      const double r = std::modf(x, &q);
      return psi(1 - x) - std::numbers::pi / std::tan(std::numbers::pi * r);
    }
    double result = 0;
    while (x < 10) {
      result -= 1 / x;
      x += 1;
    }
    if (x == 10) return result + 2.25175258906672110764;
    constexpr double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                            7.57575757575757575758E-3, -4.16666666666666666667E-3,
                            3.96825396825396825397E-3, -8.33333333333333333333E-3,
                            8.33333333333333333333E-2};
    double y = 0;
    if (x < 1.0e17) {
      const double z = 1.0 / (x * x);
      double poly = A[0];
      for (int i = 1; i <= 6; ++i) poly = poly * z + A[i];
      y = z * poly;
    }
    return result + std::log(x) - (0.5 / x) - y;
  }
  template <class T>
  static T f(const OpParams&, T a) {
    return static_cast<T>(psi(static_cast<double>(a)));
  }
};

struct Sinc {
  template <class T>
  static T f(const OpParams&, T a) {
    if (a == T(0)) return T(1);
    const T product = static_cast<T>(std::numbers::pi) * a;
    return std::sin(product) / product;
  }
};
MLU_UNARY(Sigmoid, T(1) / (T(1) + std::exp(-a)))
// Note [ATen's float erf in gelu]: CPU PyTorch's gelu and gelu_backward
// compute erf in float with ATen's Vectorized<float>::erf (vec512_float.h /
// vec256_float.h): Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7, one exp
// and one divide. We use the same formula, operation for operation (fused
// multiply-adds where ATen has them), so float gelu tracks the CPU's to an
// ulp or two instead of differing by its approximation error, and costs what
// the CPU's costs (SLEEF's 1-ulp erf, used before, is dearer; timings in
// docs/bench_kernels.md). `exp_neg_x2` is
// exp(-(x * x)), computed by the caller (vectorised in the ISA bodies).
// Double keeps std::erf (ATen: SLEEF's 1-ulp erf). torch.erf itself does
// not use this (vector_math.h erf_block, more accurate), nor does gelu's
// forward on AVX-512 (vector_math.h, MLU_VECTOR_BODY(Gelu)).
[[gnu::always_inline]] inline float aten_float_erf(float x, float exp_neg_x2) {
  const float t = 1.0f / std::fma(0.3275911f, std::fabs(x), 1.0f);
  const float r = std::fma(std::fma(std::fma(std::fma(1.061405429f, t, -1.453152027f), t, 1.421413741f), t,
                                    -0.284496736f), t, 0.254829592f);
  return std::copysign(std::fma(-exp_neg_x2 * t, r, 1.0f), x);
}

template <class T>
inline T gelu_erf(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return aten_float_erf(x, std::exp(-(x * x)));
  } else {
    return std::erf(x);
  }
}

MLU_UNARY(Gelu, a * T(0.5) * (T(1) + gelu_erf(a * static_cast<T>(std::numbers::sqrt2 / 2))))
struct GeluTanh {
  template <class T>
  static T f(const OpParams&, T a) {
    const T kBeta = static_cast<T>(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
    const T inner = kBeta * (a + T(0.044715) * a * a * a);
    return T(0.5) * a * (T(1) + std::tanh(inner));
  }
};
MLU_UNARY(Silu, a / (T(1) + std::exp(-a)))
MLU_UNARY(Mish, a * std::tanh(std::log1p(std::exp(a))))
// Softplus: [0] beta, [1] threshold.
MLU_UNARY(Softplus, a * param<T>(p, 0) > param<T>(p, 1)
                        ? a
                        : std::log1p(std::exp(a * param<T>(p, 0))) / param<T>(p, 0))
// Elu: [0] alpha, [1] scale, [2] input_scale.
MLU_UNARY(Elu, a <= T(0) ? std::expm1(a * param<T>(p, 2)) * param<T>(p, 0) * param<T>(p, 1)
                         : a * param<T>(p, 1))
// LeakyRelu: [0] negative_slope.
MLU_UNARY(LeakyRelu, a > T(0) ? a : a * param<T>(p, 0))
MLU_UNARY(Hardsigmoid, std::min(std::max(a + T(3), T(0)), T(6)) / T(6))
MLU_UNARY(Hardswish, a * std::min(std::max(a + T(3), T(0)), T(6)) / T(6))
// Hardshrink, Softshrink: [0] lambda.
MLU_UNARY(Hardshrink, (a >= -param<T>(p, 0) && a <= param<T>(p, 0)) ? T(0) : a)
// NaN is outside [-lambda, lambda] and propagates, as on the CPU.
MLU_UNARY(Softshrink, (a >= -param<T>(p, 0) && a <= param<T>(p, 0)) ? T(0)
                      : a > param<T>(p, 0)                         ? a - param<T>(p, 0)
                                                                   : a + param<T>(p, 0))
// NanToNum: [0] nan, [1] posinf, [2] neginf replacements.
MLU_UNARY(NanToNum, std::isnan(a)                                  ? param<T>(p, 0)
                    : a == std::numeric_limits<T>::infinity()      ? param<T>(p, 1)
                    : a == -std::numeric_limits<T>::infinity()     ? param<T>(p, 2)
                                                                   : a)

// ---- binary ----
// Add, Sub: [0] alpha.
// Add, Sub: [0] alpha. Floating types round a + alpha * b once, with a fused
// multiply-add, where the instruction set has one: the CPU's vectorised add
// is vec::fmadd(b, alpha, a) (sub adds -alpha) in its AVX2 / AVX-512 builds,
// its baseline build multiplies and adds. Exact for alpha = 1.
template <class T>
inline T add_scaled(T a, T alpha, T b) {
  if constexpr (is_float_v<T>) {
#if defined(__FMA__)
    return std::fma(alpha, b, a);
#else
    return a + alpha * b;
#endif
  } else {
    return static_cast<T>(a + alpha * b);
  }
}
MLU_BINARY(Add, add_scaled(a, param<T>(p, 0), b))
struct Sub {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    if constexpr (is_float_v<T>) {
      return add_scaled(a, -param<T>(p, 0), b);
    } else {
      return static_cast<T>(a - param<T>(p, 0) * b);
    }
  }
};
struct Mul {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else {
      return static_cast<T>(a * b);
    }
  }
};
MLU_BINARY(Div, a / b)
// Note [Division rounding in 16 bits]: for Float16 / BFloat16 results
// (param i[0]: kStorageHalf / kStorageBFloat16) the CPU rounds the quotient to
// the storage type before truncating, and computes the floor division
// (c10::div_floor_floating) in the storage type, every step rounded; the
// float computation below does the same through round_to_storage.
template <class T>
inline T round_to_storage(const OpParams& p, T v) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.i[0] == kStorageBFloat16) return to_float(bfloat16_from_float(v));
    if (p.i[0] == kStorageHalf) return to_float(half_from_float(v));
  }
  return v;
}
// Note [logit in 16 bits]
// The CPU's logit_kernel computes in the storage type, in its vector body
// (Vectorized<Half / BFloat16>'s operators round each result) and its scalar
// loop alike: eps rounded to it, hi = 1 - eps, 1 - x and x / (1 - x) each
// rounded, then the log. Logit: f[0] eps (negative: no clamping), i[0]
// kStorageHalf / kStorageBFloat16 for a 16-bit result (the glue rounds eps).
struct Logit {
  template <class T>
  static T f(const OpParams& p, T a) {
    const auto r = [&](T v) { return round_to_storage(p, v); };
    const T eps = param<T>(p, 0);
    const T hi = r(T(1) - eps);
    const T x = eps < T(0) ? a : (a < eps ? eps : (a > hi ? hi : a));
    return std::log(r(x / r(T(1) - x)));
  }
};
struct DivTrunc {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    if constexpr (is_float_v<T>) {
      return std::trunc(round_to_storage(p, a / b));
    } else {
      return b == 0 ? T(0) : integer_div(a, b);
    }
  }
};
struct DivFloor {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    if constexpr (is_float_v<T>) {
      const auto r = [&](T v) { return round_to_storage(p, v); };
      if (b == 0) return a / b;
      const T mod = r(std::fmod(a, b));
      T div = r(r(a - mod) / b);
      if (mod != 0 && (b < 0) != (mod < 0)) div = r(div - T(1));
      if (div == 0) return std::copysign(T(0), r(a / b));
      T floordiv = std::floor(div);
      if (r(div - floordiv) > T(0.5)) floordiv = r(floordiv + T(1));
      return floordiv;
    } else {
      if (b == 0) return T(0);
      T q = integer_div(a, b);
      if constexpr (std::is_signed_v<T>) {
        if (integer_rem(a, b) != 0 && ((a < 0) != (b < 0))) --q;
      }
      return q;
    }
  }
};
struct Remainder {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    if constexpr (is_float_v<T>) {
      T mod = std::fmod(a, b);
      if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
      return mod;
    } else {
      if (b == 0) return T(0);
      T r = integer_rem(a, b);
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      }
      return r;
    }
  }
};
struct Fmod {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    if constexpr (is_float_v<T>) {
      return std::fmod(a, b);
    } else {
      return b == 0 ? T(0) : integer_rem(a, b);
    }
  }
};
struct Pow {
  template <class T>
  static T f(const OpParams&, T base, T exp) {
    if constexpr (is_float_v<T>) {
      return std::pow(base, exp);
    } else {
      // powi of ATen/native/Pow.h: negative exponents give 0 except for |base| 1.
      if constexpr (std::is_signed_v<T>) {
        if (exp < 0) {
          if (base == 1) return T(1);
          if (base == -1) return (exp % 2 == 0) ? T(1) : T(-1);
          return T(0);
        }
      }
      using U = std::make_unsigned_t<T>;
      U result = 1;
      U b = static_cast<U>(base);
      auto e = exp;
      while (e) {
        if (e & 1) result = static_cast<U>(result * b);
        e = static_cast<T>(e / 2);
        b = static_cast<U>(b * b);
      }
      return static_cast<T>(result);
    }
  }
};
template <class T>
T PowScalar::f(const OpParams& p, T a) {
  if constexpr (is_float_v<T>) {
    const T e = param<T>(p, 0);
    const auto r = [&](T v) { return round_to_storage(p, v); };
    if (e == T(2)) return a * a;
    if (e == T(3)) return r(a * a) * a;
    if (e == T(0.5)) return std::sqrt(a);
    if (e == T(-0.5)) return T(1) / std::sqrt(a);
    if (e == T(-1)) return T(1) / a;
    if (e == T(-2)) return T(1) / r(a * a);
    return std::pow(a, e);
  } else {
    return Pow::f<T>(p, a, param<T>(p, 0));
  }
}
MLU_BINARY(Maximum, max_nan(a, b))
MLU_BINARY(Minimum, min_nan(a, b))
MLU_BINARY(Fmax, std::fmax(a, b))
MLU_BINARY(Fmin, std::fmin(a, b))
MLU_BINARY(Atan2, std::atan2(a, b))
MLU_BINARY(Hypot, std::hypot(a, b))
MLU_BINARY(Copysign, std::copysign(a, b))
// Note [nextafter in 16 bits]: Float16 and BFloat16 are computed as float,
// where one float step rounds back to the input. The CPU steps in the storage
// type's own bits (c10's nextafter, musl's algorithm), so for 16-bit storage
// (param i[0]: kStorageHalf / kStorageBFloat16, set by the
// glue from the result type) the step is taken there; the float operands are
// exactly representable in that type, and so is the result.
template <class H, H (*narrow)(float)>
float nextafter_16bit(float from, float to) {
  if (std::isnan(from) || std::isnan(to)) return from + to;
  if (from == to) return to;  // equal, or zeros of either sign: `to`
  uint16_t bits = narrow(from).x;
  const uint16_t to_bits = narrow(to).x;
  constexpr uint16_t kSign = 0x8000;
  if ((bits & ~kSign) == 0) {
    bits = static_cast<uint16_t>((to_bits & kSign) | 1u);  // the smallest subnormal towards `to`
  } else if ((bits & ~kSign) > (to_bits & ~kSign) || ((bits ^ to_bits) & kSign)) {
    --bits;
  } else {
    ++bits;
  }
  return to_float(H{bits});
}
struct Nextafter {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    if constexpr (std::is_same_v<T, float>) {
      if (p.i[0] == kStorageBFloat16) return nextafter_16bit<BFloat16, bfloat16_from_float>(a, b);
      if (p.i[0] == kStorageHalf) return nextafter_16bit<Half, half_from_float>(a, b);
    }
    return std::nextafter(a, b);
  }
};
// Note [xlogy in 16 bits]: the CPU computes x * log(y) in the storage type,
// where log(y) comes back rounded to it (c10's BFloat16/Half math); a
// Float16 / BFloat16 result (param i[0]: kStorageHalf / kStorageBFloat16)
// rounds log(y) there before the product.
struct Xlogy {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    if (std::isnan(b)) return b;
    if (a == T(0)) return T(0);
    return a * round_to_storage(p, std::log(b));
  }
};
struct Logaddexp {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    if (std::isinf(a) && a == b) return a;
    const T m = std::max(a, b);
    return m + std::log1p(std::exp(-std::abs(a - b)));
  }
};
struct Logaddexp2 {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    if (std::isinf(a) && a == b) return a;
    const T m = std::max(a, b);
    return m + std::log1p(std::exp2(-std::abs(a - b))) / static_cast<T>(std::numbers::ln2);
  }
};
MLU_BINARY(Heaviside, a == T(0) ? b : static_cast<T>(a > T(0)))
MLU_BINARY_BOOL(Eq, a == b)
MLU_BINARY_BOOL(Ne, a != b)
MLU_BINARY_BOOL(Less, a < b)
MLU_BINARY_BOOL(LessEqual, a <= b)
MLU_BINARY_BOOL(Greater, a > b)
MLU_BINARY_BOOL(GreaterEqual, a >= b)
MLU_BINARY(BitwiseAnd, static_cast<T>(a & b))
MLU_BINARY(BitwiseOr, static_cast<T>(a | b))
MLU_BINARY(BitwiseXor, static_cast<T>(a ^ b))
struct LeftShift {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    using U = std::make_unsigned_t<T>;
    constexpr T bits = static_cast<T>(sizeof(T) * 8);
    if ((std::is_signed_v<T> && b < 0) || b >= bits) return T(0);
    return static_cast<T>(static_cast<U>(a) << b);
  }
};
struct RightShift {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    constexpr T bits = static_cast<T>(sizeof(T) * 8);
    if ((std::is_signed_v<T> && b < 0) || b >= bits) {
      if constexpr (std::is_signed_v<T>) {
        return static_cast<T>(a >> (bits - 1));
      } else {
        return T(0);
      }
    }
    return static_cast<T>(a >> b);
  }
};
MLU_BINARY_BOOL(LogicalAnd, static_cast<bool>(a) && static_cast<bool>(b))
MLU_BINARY_BOOL(LogicalOr, static_cast<bool>(a) || static_cast<bool>(b))
MLU_BINARY_BOOL(LogicalXor, static_cast<bool>(a) != static_cast<bool>(b))
struct Gcd {
  template <class T>
  static T f(const OpParams&, T a, T b) {
    a = Abs::f(OpParams{}, a);
    b = Abs::f(OpParams{}, b);
    while (a != 0) {
      const T c = a;
      a = integer_rem(b, a);
      b = c;
    }
    return b;
  }
};
struct Lcm {
  template <class T>
  static T f(const OpParams& p, T a, T b) {
    const T g = Gcd::f(p, a, b);
    return g == 0 ? T(0) : Abs::f(p, static_cast<T>(a / g * b));
  }
};
MLU_BINARY(ClampMinTensor, max_nan(a, b))
MLU_BINARY(ClampMaxTensor, min_nan(a, b))
// torch.lerp: weight < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w).
template <class T>
inline T lerp(T self, T end, T w) {
  return std::abs(w) < T(0.5) ? self + w * (end - self) : end - (end - self) * (T(1) - w);
}
// LerpScalar: [0] weight.
MLU_BINARY(LerpScalar, lerp(a, b, param<T>(p, 0)))

// ---- backward: (grad, input) unless noted ----
// ThresholdBackward: (input, grad), the order of PyTorch's meta; [0] threshold.
MLU_BINARY(ThresholdBackward, a <= param<T>(p, 0) ? T(0) : b)
// SigmoidBackward, TanhBackward: (grad, result).
MLU_BINARY(SigmoidBackward, a * (T(1) - b) * b)
MLU_BINARY(TanhBackward, a * (T(1) - b * b))
struct GeluBackward {
  template <class T>
  static T f(const OpParams&, T dy, T x) {
    const T kAlpha = static_cast<T>(std::numbers::sqrt2 / 2);
    const T kBeta = static_cast<T>((2 / std::sqrt(std::numbers::pi)) * (std::numbers::sqrt2 / 2) * 0.5);
    const T cdf = T(0.5) * (T(1) + gelu_erf(x * kAlpha));
    const T pdf = kBeta * std::exp(x * x * T(-0.5));
    return dy * (cdf + x * pdf);
  }
};
struct GeluTanhBackward {
  template <class T>
  static T f(const OpParams&, T dy, T x) {
    const T kBeta = static_cast<T>(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
    const T kKappa = T(0.044715);
    const T x_sq = x * x;
    const T inner = kBeta * (x + kKappa * x_sq * x);
    const T tanh_inner = std::tanh(inner);
    const T left = T(0.5) * x;
    const T right = T(1) + tanh_inner;
    const T right_derivative = left * (T(1) - tanh_inner * tanh_inner) * kBeta * (T(1) + T(3) * kKappa * x_sq);
    return dy * (T(0.5) * right + right_derivative);
  }
};
struct SiluBackward {
  template <class T>
  static T f(const OpParams&, T dy, T x) {
    const T s = T(1) / (T(1) + std::exp(-x));
    return dy * s * (T(1) + x * (T(1) - s));
  }
};
struct MishBackward {
  template <class T>
  static T f(const OpParams&, T dy, T x) {
    const T s = T(1) / (T(1) + std::exp(-x));
    const T t = std::tanh(std::log1p(std::exp(x)));
    return dy * (t + x * s * (T(1) - t * t));
  }
};
// EluBackward: [0] alpha, [1] scale, [2] input_scale, i[3] is_result (input is
// the forward's result).
struct EluBackward {
  template <class T>
  static T f(const OpParams& p, T dy, T x) {
    const T negcoef = param<T>(p, 0) * param<T>(p, 1);
    const T poscoef = param<T>(p, 1);
    const T negiptcoef = param<T>(p, 2);
    if (p.i[3] != 0) return x <= T(0) ? dy * negiptcoef * (x + negcoef) : dy * poscoef;
    return x <= T(0) ? dy * negiptcoef * negcoef * std::exp(x * negiptcoef) : dy * poscoef;
  }
};
// LeakyReluBackward: (input or result, grad), the order of PyTorch's meta;
// [0] negative_slope.
MLU_BINARY(LeakyReluBackward, a > T(0) ? b : b * param<T>(p, 0))
// HardtanhBackward: [0] min, [1] max.
MLU_BINARY(HardtanhBackward, (b <= param<T>(p, 0) || b >= param<T>(p, 1)) ? T(0) : a)
MLU_BINARY(HardsigmoidBackward, (b > T(-3) && b < T(3)) ? a / T(6) : T(0))
MLU_BINARY(HardswishBackward, b < T(-3) ? T(0) : (b <= T(3) ? a * (b / T(3) + T(0.5)) : a))
// SoftplusBackward: [0] beta, [1] threshold.
struct SoftplusBackward {
  template <class T>
  static T f(const OpParams& p, T dy, T x) {
    const T z = std::exp(x * param<T>(p, 0));
    return x * param<T>(p, 0) > param<T>(p, 1) ? dy : dy * z / (z + T(1));
  }
};
// LogitBackward: [0] eps (negative: none).
struct LogitBackward {
  template <class T>
  static T f(const OpParams& p, T dy, T x) {
    const T eps = param<T>(p, 0);
    if (eps < T(0)) {
      return (x < T(0) || x > T(1)) ? std::numeric_limits<T>::quiet_NaN() : dy / (x * (T(1) - x));
    }
    return (x < eps || x > T(1) - eps) ? T(0) : dy / (x * (T(1) - x));
  }
};
// ShrinkBackward (hardshrink and softshrink): [0] lambda.
MLU_BINARY(ShrinkBackward, (b >= -param<T>(p, 0) && b <= param<T>(p, 0)) ? T(0) : a)

// glu's (first half, second half): a * sigmoid(b) as the CPU's glu_kernel
// writes it, in the compute type (float for 16-bit types, rounded once).
MLU_BINARY(Glu, a * (T(1) / (T(1) + std::exp(-b))))

// Note [addr in 16 bits]: the CPU's addr_kernel computes beta * self +
// alpha * vec1 * vec2 in the storage type, every product and the sum rounded
// to it, the scalars too, and ignores self when beta is 0 (its NaNs do not
// propagate). Params: f[0] beta, f[1] alpha, i[0] the storage type of a
// Float16 / BFloat16 result (kStorageHalf / kStorageBFloat16), else 0.
struct Addr {
  template <class T>
  static T f(const OpParams& p, T self, T vec1, T vec2) {
    const auto round = [&](T v) { return round_to_storage(p, v); };
    const T beta = round(param<T>(p, 0)), alpha = round(param<T>(p, 1));
    const T product = round(round(alpha * vec1) * vec2);
    return beta == T(0) ? product : round(beta * self) + product;
  }
};

// ---- complex ----
// Angle of a real number (the CPU's angle_impl): NaN stays NaN, negatives
// give pi, the rest 0.
MLU_UNARY(Angle, is_nan(a) ? a : (a < T(0) ? static_cast<T>(std::numbers::pi) : T(0)))
// Complex only (kinds C): the arithmetic is in src/pointwise/complex.cpp;
// these names complete the catalogue and have no real kernel.
struct Conj {};
struct Sgn {};
struct MakeComplex {};
struct Polar {};

// ---- ternary ----
struct Where {
  template <class T>
  static T f(const OpParams&, T cond, T a, T b) {
    return static_cast<bool>(cond) ? a : b;
  }
};
struct LerpTensor {
  template <class T>
  static T f(const OpParams&, T self, T end, T w) {
    return lerp(self, end, w);
  }
};
// Addcmul, Addcdiv: [0] value.
struct Addcmul {
  template <class T>
  static T f(const OpParams& p, T self, T t1, T t2) {
    return static_cast<T>(self + param<T>(p, 0) * t1 * t2);
  }
};
struct Addcdiv {
  template <class T>
  static T f(const OpParams& p, T self, T t1, T t2) {
    return self + param<T>(p, 0) * (t1 / t2);
  }
};
struct ClampTensor {
  template <class T>
  static T f(const OpParams&, T a, T lo, T hi) {
    return min_nan(max_nan(a, lo), hi);
  }
};

#undef MLU_UNARY
#undef MLU_UNARY_BOOL
#undef MLU_BINARY
#undef MLU_BINARY_BOOL

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::ops

#include "special_ops.h"

namespace mlu::kernels::ops {
inline namespace MLU_KERNELS_ISA_TAG {

template <class Op>
constexpr bool bool_result() {
  if constexpr (requires { Op::kBoolResult; }) {
    return Op::kBoolResult;
  } else {
    return false;
  }
}

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::ops
