// The per-ISA row routines of the gather and scatter kernels (index_isa.cpp,
// Note [Per-ISA variants]): gathers along contiguous rows, and the
// contiguous-row steps of the scatters that update in their own type or
// through float rows. index.cpp plans the loops, splits the work over the
// compute threads, checks and reports indices and calls these per row or
// slice. Also the index checks and the update preparation that index.cpp
// and index_isa.cpp share.
#pragma once

#include <cstdint>

#include "../common/convert.h"
#include "../common/isa_variants.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/index.h"

namespace mlu::kernels::detail {

// d[j] = from[idx[j]] for j < len, all three contiguous, the element type as
// the table entry says; returns whether some index was out of [0, size)
// (size > 0; such an element gets from[0]).
using GatherRow = bool (*)(void* d, const void* from, const void* idx, int64_t len, int64_t size);

// One contiguous slice updated in its own type (float or double): d[q] +
// alpha * v[q] (Add) or d[q] * v[q] (Mul), rounded once per update.
template <class T>
using UpdateSlice = void (*)(T* d, const T* v, int64_t n, T alpha);

// A contiguous Half / BFloat16 destination row back from its float
// accumulators (index_isa.cpp, Note [Scatter accumulation in float]).
template <class T>
using StoreRowBack = void (*)(T* d, const float* acc, int64_t n);

// prepare_updates (below) on unit strides.
template <class I, class T>
using PrepareUpdates = bool (*)(const I* at, const T* values, int64_t len, int64_t size, float alpha,
                                float* operand);

// The float-row steps of Half / BFloat16 scatters. prepare_*[0] for Add, [1] for Mul.
template <class T>
struct FloatRowFns {
  StoreRowBack<T> store_row_back;
  PrepareUpdates<int32_t, T> prepare_int32[2];
  PrepareUpdates<int64_t, T> prepare_int64[2];
};

struct IndexKernels {
  // [log2 of the element size (1 to 16 bytes)][index type: 0 Int32, 1 Int64].
  GatherRow gather_row[5][2];
  // [0] Add, [1] Mul.
  UpdateSlice<float> update_float[2];
  UpdateSlice<double> update_double[2];
  FloatRowFns<Half> half;
  FloatRowFns<BFloat16> bfloat16;
};

inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

// Whether any of len indices (step apart) lies outside [0, size). An index x
// is out of range exactly when x or size - 1 - x (wrapping) is negative: a
// sign bit in an OR, which vectorises (an unsigned 64-bit compare does not,
// in AVX2).
template <class I>
inline bool any_out_of_range(const I* __restrict at, int64_t step, int64_t len, int64_t size) {
  uint64_t signs = 0;
  for (int64_t j = 0; j < len; ++j) {
    const auto x = static_cast<uint64_t>(static_cast<int64_t>(at[j * step]));
    signs |= x | (static_cast<uint64_t>(size) - 1 - x);
  }
  return (signs >> 63) != 0;
}

// Note [Scatter updates from a float row]
// A row's updates in float are prepared in one sequential pass that also
// checks its indices (Note [Check, then copy], index_isa.cpp): operand[j] is
// what position j adds (alpha * value) or multiplies by (value). The update
// loop (index.cpp) is then a load, an add or multiply and a store per
// position; widening bfloat16 and multiplying by alpha inside it made it much
// longer (docs/bench_kernels.md), and the separate pass vectorises. alpha *
// value rounds to float exactly as it did inside the update. Returns whether
// any index is out of range; the update loop reports those and skips them.
// index.cpp runs it on strided rows; rows with unit strides take the active
// ISA's copy (IndexKernels, compiled in index_isa.cpp).
template <ScatterOp Op, class I, class T>
inline bool prepare_updates(const I* __restrict at, int64_t step_x, const T* __restrict values, int64_t step_v,
                            int64_t len, int64_t size, float alpha, float* __restrict operand) {
  // Two loops: one mixing 8- and 2-byte loads does not vectorise.
  const bool any_bad = any_out_of_range(at, step_x, len, size);
  for (int64_t j = 0; j < len; ++j) {
    const float v = widen(values[j * step_v]);
    operand[j] = Op == ScatterOp::Add ? alpha * v : v;
  }
  return any_bad;
}

}  // namespace MLU_KERNELS_ISA_TAG

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::IndexKernels& index_kernels())
