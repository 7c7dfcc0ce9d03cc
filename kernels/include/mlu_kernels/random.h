// Random distributions that fill a strided output view, on Philox4x32-10.
//
// Determinism rule: the element with row-major logical index i over `shape`
// (whatever the strides) draws only from u = philox4x32(seed, /*subsequence=*/i,
// /*offset=*/offset). So one (seed, offset) gives the same logical values for
// every layout of dst and any split of the work that keeps each element's
// global index, and the caller advances `offset` by one between calls (every
// kernel uses at most one 128-bit block per element) to get fresh numbers.
//
// Uniform draws from u (exact, no rounding):
//   x24(w)    = (w >> 8) * 2^-24                          in [0, 1), a float
//   x53(a, b) = (((uint64)a << 32 | b) >> 11) * 2^-53     in [0, 1), a double
// "Float kernels" compute in the accumulation type A (float for Float16,
// BFloat16 and Float32, double for Float64), with x = x24(u[0]) (second draw
// x24(u[1])) for A = float and x = x53(u[0], u[1]) (second draw x53(u[2], u[3]))
// for A = double, and round once into dtype at the end as `copy` would (16-bit:
// float -> round to nearest even). Double parameters are cast to A first.
//
// Common preconditions (unchecked): dst points at the view's element [0, ..., 0]
// and every addressed element lies in memory the caller owns; dst has no
// stride-0 dims; dtype is one the kernel lists (others are a precondition
// violation; today they write nothing). Results that overflow a 16-bit or float
// dtype become inf, as in PyTorch. Each optimised kernel coalesces the view and
// runs a linear loop when it is contiguous, a strided row loop otherwise; each
// *_ref is a plain loop over logical indices that unravels each one. Both give
// bit-identical results.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// Float16, BFloat16, Float32, Float64. With f = (dtype)from, t = (dtype)to and
// range = (dtype)(t - f) (as PyTorch's CUDA kernel): v = (dtype)(x * range + f)
// in A, and v == t (reachable by rounding) gives f, so the result is in [f, t).
// Requires from <= to and t - f finite.
void uniform(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
             uint64_t seed, uint64_t offset, double from, double to);
void uniform_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                 uint64_t seed, uint64_t offset, double from, double to);

// Float16, BFloat16, Float32, Float64. Box-Muller in A:
// z = sqrt(-2 log(1 - x)) * cos(2 pi x'), value = mean + std * z. Requires std >= 0.
void normal(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
            uint64_t seed, uint64_t offset, double mean, double std);
void normal_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double mean, double std);

// Float16, BFloat16, Float32, Float64: exp(mean + std * z), z as in normal.
void log_normal(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double mean, double std);
void log_normal_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                    uint64_t seed, uint64_t offset, double mean, double std);

// Float16, BFloat16, Float32, Float64: (-1 / lambda) * log1p(-x) in A, which is
// finite and >= +0 for every x in [0, 1). Requires lambda > 0.
void exponential(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                 uint64_t seed, uint64_t offset, double lambda);
void exponential_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                     uint64_t seed, uint64_t offset, double lambda);

// Float16, BFloat16, Float32, Float64: median + sigma * tan(pi * (x - 0.5)) in A.
void cauchy(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
            uint64_t seed, uint64_t offset, double median, double sigma);
void cauchy_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double median, double sigma);

// UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64.
// Always in double, whatever dtype: k = max(1, ceil(log1p(-x) / log1p(-p))) with
// x = x53(u[0], u[1]), so k >= 1 and is an integer. Integer dtypes saturate at
// their maximum (PyTorch leaves that overflow undefined). Requires 0 < p <= 1.
void geometric(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
               uint64_t seed, uint64_t offset, double p);
void geometric_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                   uint64_t seed, uint64_t offset, double p);

// All 12 dtypes: 1 when u[0] * 2^-32 < p (in double), else 0, written as the
// dtype's 1 / 0 (Bool true / false, complex (1, 0) / (0, 0)). p <= 0 gives
// only 0 and p >= 1 only 1; p is meant to be in [0, 1].
void bernoulli_scalar(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                      uint64_t seed, uint64_t offset, double p);
void bernoulli_scalar_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                          uint64_t seed, uint64_t offset, double p);

// As bernoulli_scalar, with each element's p read (and widened to double) from
// a view of the same shape: p points at its element [0, ..., 0], p_dtype is
// Float16, BFloat16, Float32 or Float64, and p_strides may be 0 (broadcast) or
// negative. p must not overlap dst.
void bernoulli_tensor(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                      uint64_t seed, uint64_t offset, const void* p, ScalarType p_dtype,
                      const Strides& p_strides);
void bernoulli_tensor_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                          uint64_t seed, uint64_t offset, const void* p, ScalarType p_dtype,
                          const Strides& p_strides);

// Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64.
// r = u[0] when 0 < range < 2^32, else r = (uint64)u[0] << 32 | u[1];
// v = from + (range == 0 ? r : r % range) in int64 with two's-complement wrap
// (range 0 is the full 64-bit range), then converted to dtype like `copy`
// (integers wrap, floats round, Bool is v != 0). So v is in [from, from + range)
// when that interval fits the dtype, as PyTorch's random_(from, to) with
// range = to - from (it checks the fit; nothing is checked here).
void random_from_to(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                    uint64_t seed, uint64_t offset, int64_t from, uint64_t range);
void random_from_to_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                        uint64_t seed, uint64_t offset, int64_t from, uint64_t range);

}  // namespace mlu::kernels
