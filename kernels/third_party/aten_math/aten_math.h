// PyTorch's special functions (ATen/native/Math.h of torch 2.13), ported
// without c10: the formulas the CPU's kernels evaluate, so that mlu's values
// are the CPU's. Changes from the original, and nothing else: c10's
// constants are std::numbers', at::acc_type (double on the CPU, for float and
// double alike) is double, the CUDA/jiterator annotations and the Half /
// BFloat16 overloads are gone (the kernels compute 16-bit types in float, as
// those overloads do), and erfinv / digamma / gcd, which ops.h has, are left
// out. The licences of the code this derives from are kept in place in the
// parts; the upstream revision and PyTorch's licence are in README.md.
//
// This header includes the parts, split by family, inside the contraction
// setting below: include it, not them.
#pragma once
#define MLU_KERNELS_ATEN_MATH_H

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <tuple>
#include <type_traits>

#include "../../src/common/isa_variants.h"

// Note [Special functions contract to FMA]
// PyTorch compiles its CPU kernels with GCC's default -ffp-contract=fast, so
// where the CPU capability has FMA (AVX2, AVX-512) these recurrences and
// polynomials round as fused multiply-adds; the kernel library is built with
// -ffp-contract=off. The same formulas contracted the same way give the
// CPU's bits (the polynomial families differ in up to a third of the
// elements otherwise), so this header turns contraction on for itself only.
#if defined(__clang__)
#pragma float_control(push)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif

#include "cephes.h"
#include "gamma.h"
#include "bessel.h"
#include "normal.h"
#include "airy.h"
#include "polynomials.h"

#if defined(__clang__)
#pragma float_control(pop)
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif
