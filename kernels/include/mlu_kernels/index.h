// Indexed gathers and scatters along one dim.
//
// `shape` is the iteration space (the index's shape for gather/scatter; the
// output's or source's shape, with the index broadcast, for index_select /
// index_add). For every position p, with q = p but q[dim] = index[p]:
//   gather:  out[p] = in[q]
//   scatter: self[q] = op(self[q], src[p])   (src may be a stride-0 scalar)
// Operands carry strides per dim of `shape`; `in`/`self` strides at `dim` are
// the stride of the indexed dim. Index values must lie in [0, dim_size): the
// kernels check every one and report one of the bad ones, so the caller can
// raise a device-side error; a bad one's element is skipped (scatter) or gets
// some in-range element (gather). Positions that differ in a dim other
// than `dim` never touch the same element, so scatters parallelise over
// those and stay deterministic (each row runs in order).
// Add and Mul on Float16 / BFloat16 accumulate each element in float and round
// once, as the CPU does (Note [Scatter accumulation in float] in index.cpp),
// unless round_each_update (the CPU's index_add of a 1-D tensor rounds after
// every update).
// Preconditions: out/self do not overlap in/src/index; dtypes of out and in
// (self and src) are equal; index is Int64 or Int32.
#pragma once

#include <cstdint>

#include "mlu_kernels/layout.h"
#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

struct IndexCheck {
  bool ok = true;
  int64_t bad_index = 0;  // one offending value when !ok
};

IndexCheck gather(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                  const Operand& index);
// The scalar reference: position by position (src/index/index_ref.cpp); a bad
// index leaves its element unwritten.
IndexCheck gather_ref(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                      const Operand& index);

enum class ScatterOp : uint8_t { Assign, Add, Mul, Max, Min };

// Add computes self + alpha * src (alpha = 1 for scatter_add).
IndexCheck scatter(ScatterOp op, const Shape& shape, int dim, const Operand& self, int64_t dim_size,
                   const Operand& src, const Operand& index, double alpha = 1.0, bool round_each_update = false);

}  // namespace mlu::kernels
