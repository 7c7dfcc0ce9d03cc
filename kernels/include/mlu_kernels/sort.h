// Sorting along the last dim of `shape`, row by row (rows in parallel).
//
// sort: values and int64 indices of every row in ascending (or descending)
// order; NaN sorts as larger than every number, like PyTorch. `stable` keeps
// equal elements in their input order (the kernel is always stable).
// topk: the k largest (or smallest) of each row, sorted if `sorted`.
// Outputs have the shape with the last dim replaced by the count written.
// Preconditions: outputs do not overlap the input; 0 <= k <= row length.
#pragma once

#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

void sort(const Shape& shape, const Operand& values, const Operand& indices, const Operand& in, bool descending);
void topk(const Shape& shape, int64_t k, const Operand& values, const Operand& indices, const Operand& in,
          bool largest, bool sorted);

}  // namespace mlu::kernels
