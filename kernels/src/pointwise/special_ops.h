// The special functions of torch.special (and i0, igamma, polygamma) as
// pointwise functors: each evaluates what the CPU's kernel evaluates, from
// kernels/third_party/aten_math (PyTorch's Math.h, ported). Included by ops.h.
// 16-bit types compute in float as everywhere (T is float or double); which
// of these the CPU also defines for Float16 / BFloat16 is the glue's business.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mlu_kernels/pointwise.h"
#include "../../third_party/aten_math/aten_math.h"
#include "../common/isa_variants.h"

namespace mlu::kernels::ops {
inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

#define MLU_SPECIAL_UNARY(Name, fn)                      \
  struct Name {                                          \
    template <class T>                                   \
    static T f(const OpParams&, T x) {                   \
      return special::fn(x);                             \
    }                                                    \
  };
// A polynomial of degree n (the second operand, a float that the CPU
// truncates to an integer).
#define MLU_SPECIAL_BINARY(Name, fn)                     \
  struct Name {                                          \
    template <class T>                                   \
    static T f(const OpParams&, T x, T y) {              \
      return special::fn(x, y);                          \
    }                                                    \
  };

MLU_SPECIAL_UNARY(I0, calc_i0)
MLU_SPECIAL_UNARY(I1, calc_i1)
MLU_SPECIAL_UNARY(I1e, calc_i1e)
MLU_SPECIAL_UNARY(Ndtri, calc_ndtri)
MLU_SPECIAL_UNARY(LogNdtr, calc_log_ndtr)
MLU_SPECIAL_UNARY(Erfcx, calc_erfcx)
MLU_SPECIAL_UNARY(AiryAi, airy_ai_forward)
MLU_SPECIAL_UNARY(BesselJ0, bessel_j0_forward)
MLU_SPECIAL_UNARY(BesselJ1, bessel_j1_forward)
MLU_SPECIAL_UNARY(BesselY0, bessel_y0_forward)
MLU_SPECIAL_UNARY(BesselY1, bessel_y1_forward)
MLU_SPECIAL_UNARY(ModifiedBesselI0, modified_bessel_i0_forward)
MLU_SPECIAL_UNARY(ModifiedBesselI1, modified_bessel_i1_forward)
MLU_SPECIAL_UNARY(ModifiedBesselK0, modified_bessel_k0_forward)
MLU_SPECIAL_UNARY(ModifiedBesselK1, modified_bessel_k1_forward)
MLU_SPECIAL_UNARY(ScaledModifiedBesselK0, scaled_modified_bessel_k0_forward)
MLU_SPECIAL_UNARY(ScaledModifiedBesselK1, scaled_modified_bessel_k1_forward)
MLU_SPECIAL_UNARY(SphericalBesselJ0, spherical_bessel_j0_forward)
MLU_SPECIAL_BINARY(Igamma, calc_igamma)
MLU_SPECIAL_BINARY(Igammac, calc_igammac)
MLU_SPECIAL_BINARY(Zeta, zeta)
MLU_SPECIAL_BINARY(ChebyshevT, chebyshev_polynomial_t_forward)
MLU_SPECIAL_BINARY(ChebyshevU, chebyshev_polynomial_u_forward)
MLU_SPECIAL_BINARY(ChebyshevV, chebyshev_polynomial_v_forward)
MLU_SPECIAL_BINARY(ChebyshevW, chebyshev_polynomial_w_forward)
MLU_SPECIAL_BINARY(ShiftedChebyshevT, shifted_chebyshev_polynomial_t_forward)
MLU_SPECIAL_BINARY(ShiftedChebyshevU, shifted_chebyshev_polynomial_u_forward)
MLU_SPECIAL_BINARY(ShiftedChebyshevV, shifted_chebyshev_polynomial_v_forward)
MLU_SPECIAL_BINARY(ShiftedChebyshevW, shifted_chebyshev_polynomial_w_forward)
MLU_SPECIAL_BINARY(HermiteH, hermite_polynomial_h_forward)
MLU_SPECIAL_BINARY(HermiteHe, hermite_polynomial_he_forward)
MLU_SPECIAL_BINARY(LaguerreL, laguerre_polynomial_l_forward)
MLU_SPECIAL_BINARY(LegendreP, legendre_polynomial_p_forward)

#undef MLU_SPECIAL_UNARY
#undef MLU_SPECIAL_BINARY

// Note [i0e in 16 bits]
// The CPU's i0e_kernel rounds Float16 / BFloat16 two ways. Its vector body
// (Vectorized<T>::i0e) converts to float and evaluates calc_i0e<float>,
// rounding once: special::calc_i0e below. Its scalar loop calls Math.h's
// calc_i0e<T> on the 16-bit type itself (Math.h has no Half / BFloat16
// overload of i0e, unlike i0, i1 and i1e): the coefficients, the argument
// and every multiply, add and subtract of chbevl round to T (c10's
// operators); only the last division, by std::sqrt(x), is in float (Math.h
// sees no 16-bit sqrt), rounded with the result. With i[0] kStorageHalf /
// kStorageBFloat16 the functor evaluates the scalar loop's way; which
// elements take which is the glue's business (Note [i0e's scalar loop] in
// csrc/aten/ops/SpecialOps.cpp). Checked against the CPU's scalar loop on
// all 65536 values of each type.
template <class T>
T i0e_in_storage(const OpParams& p, T x_in) {
  const auto r = [&](T v) { return round_to_storage(p, v); };
  const auto chbevl = [&](T y, const T* array, size_t len) {
    T b0 = r(array[0]), b1 = T(0), b2 = T(0);
    for (size_t i = 1; i < len; ++i) {
      b2 = b1;
      b1 = b0;
      b0 = r(r(r(y * b1) - b2) + r(array[i]));
    }
    return r(T(0.5) * r(b0 - b2));
  };
  const T x = std::fabs(x_in);
  if (x <= T(8)) {
    const auto [a, len] = special::chebyshev_coefficients_i0e_A<T>();
    return chbevl(r(r(x / T(2)) - T(2)), a, len);
  }
  const auto [b, len] = special::chebyshev_coefficients_i0e_B<T>();
  return chbevl(r(r(T(32) / x) - T(2)), b, len) / std::sqrt(x);
}

// i[0]: 0, or the storage type of a 16-bit input whose CPU scalar loop is
// reproduced (Note [i0e in 16 bits]).
struct I0e {
  template <class T>
  static T f(const OpParams& p, T x) {
    if constexpr (std::is_same_v<T, float>) {
      if (p.i[0] == kStorageHalf || p.i[0] == kStorageBFloat16) return i0e_in_storage(p, x);
    }
    return special::calc_i0e(x);
  }
};

// The CPU's entr_kernel. For 16-bit types it takes c10's log of a Half /
// BFloat16, which returns one (i[0]: kStorageHalf / kStorageBFloat16, see
// round_to_storage), and multiplies the two 16-bit values.
struct Entr {
  template <class T>
  static T f(const OpParams& p, T x) {
    if (std::isnan(x)) return x;
    if (x > T(0)) return -x * round_to_storage(p, std::log(x));
    if (x == T(0)) return T(0);
    return -std::numeric_limits<T>::infinity();
  }
};

// The CPU's xlog1py_kernel. As for xlogy (Note [xlogy in 16 bits] in
// ops.h), a Float16 / BFloat16 computation (i[0]: kStorageHalf /
// kStorageBFloat16) takes log1p(y) rounded to the storage type, as c10's
// 16-bit std::log1p returns it, before the product.
struct Xlog1py {
  template <class T>
  static T f(const OpParams& p, T x, T y) {
    if (std::isnan(y)) return std::numeric_limits<T>::quiet_NaN();
    if (x == T(0)) return T(0);
    return x * round_to_storage(p, std::log1p(y));
  }
};

// polygamma for n >= 1 (n = 0 is Digamma): i[0] = n. The CPU's
// trigamma_kernel for n = 1 (in float for 16-bit types too), calc_polygamma
// otherwise.
struct Polygamma {
  template <class T>
  static T f(const OpParams& p, T x) {
    const int64_t n = p.i[0];
    if (n == 1) return special::trigamma(x);
    return special::calc_polygamma(x, static_cast<int>(n));
  }
};

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::ops
