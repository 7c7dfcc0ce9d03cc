// for_each_row: walks an N-d iteration space shared by N operands row by row.
// The last dim is the row (the caller runs it as a tight loop); the outer dims
// are stepped with a counter array, odometer style: no recursion, no heap.
// Preconditions: 1 <= shape.ndim <= kMaxDims and numel(shape) > 0.
#pragma once

#include <cstdint>

#include "mlu_kernels/layout.h"

namespace mlu::kernels::detail {

// Calls row(offsets) once per row, where offsets[k] is the element offset of
// the row's first element in operand k. Rows are visited in row-major order.
template <int N, class Row>
void for_each_row(const Shape& shape, const Strides* const (&strides)[N], Row&& row) {
  int64_t index[kMaxDims] = {};
  int64_t offsets[N] = {};
  const int outer_dims = shape.ndim - 1;
  for (;;) {
    row(static_cast<const int64_t*>(offsets));
    int d = outer_dims - 1;
    for (; d >= 0; --d) {
      for (int k = 0; k < N; ++k) offsets[k] += strides[k]->v[d];
      if (++index[d] < shape.sizes[d]) break;
      for (int k = 0; k < N; ++k) offsets[k] -= strides[k]->v[d] * shape.sizes[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace mlu::kernels::detail
