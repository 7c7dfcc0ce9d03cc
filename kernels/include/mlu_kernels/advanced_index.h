// Advanced indexing: x[i0, i1, ...] with several index tensors at once (the
// kernels behind aten::index and aten::index_put_).
//
// The caller lays the problem out the way PyTorch's TensorIterator does
// (TensorAdvancedIndexing.cpp): over one iteration space `shape`,
//   - `out`/`self` is the result (gather) or the tensor written (put);
//   - `src` (gather) is the indexed tensor restrided so its indexed dims have
//     stride 0, and `values` (put) the values broadcast to `shape`;
//   - indices[k] (Int64 or Int32) is broadcast to `shape`; its value at p picks
//     a position along indexed dim k of size dims.sizes[k], whose element
//     stride is dims.strides[k].
// For every p, with base = the restrided operand's offset at p plus
// sum_k wrap(indices[k][p]) * dims.strides[k]:
//   index_gather: out[p] = src[base]
//   index_put:    self[base] = values[p]   (or += with accumulate)
// Index values in [-size, size) wrap like Python's; any other value is
// skipped and reported (one of them, with its k) so the caller can raise a
// device-side error. index_put with accumulate runs serially, so repeated
// positions add up in a fixed order; without accumulate, which of several
// writes to one position wins is unspecified (as in PyTorch) unless
// `deterministic`: then one pass in iteration order, so the last write wins,
// as PyTorch's sort-based path under torch.use_deterministic_algorithms.
// Preconditions: out/src (self/values) have the same dtype; no output
// overlaps an input; dims.count <= kMaxDims.
#pragma once

#include <cstdint>

#include "mlu_kernels/layout.h"
#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

struct IndexedDims {
  int count = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements of the indexed tensor
};

struct AdvancedIndexCheck {
  bool ok = true;
  int dim = 0;            // which index tensor held the bad value
  int64_t bad_index = 0;  // one offending value when !ok
};

AdvancedIndexCheck index_gather(const Shape& shape, const Operand& out, const Operand& src, const Operand* indices,
                                const IndexedDims& dims);

AdvancedIndexCheck index_put(const Shape& shape, const Operand& self, const Operand& values, const Operand* indices,
                             const IndexedDims& dims, bool accumulate, bool deterministic = false);

}  // namespace mlu::kernels
