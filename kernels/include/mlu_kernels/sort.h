// Sorting along the last dim of `shape`, row by row (rows in parallel).
//
// sort: values and int64 indices of every row in ascending (or descending)
// order; NaN sorts as larger than every number, like PyTorch. `stable` keeps
// equal elements in their input order; otherwise they come out in the order
// the CPU's sort leaves them (Note [The CPU's order among equal keys]).
// topk: the k largest (or smallest) of each row, sorted if `sorted`, equal
// elements as the CPU's topk leaves them.
// kth_smallest: the k-th smallest (1-based, NaN largest) of each row and its
// index, the one the CPU's kthvalue picks among equal elements.
// Outputs have the shape with the last dim replaced by the count written.
// Preconditions: outputs do not overlap the input; 1 <= k <= row length
// (0 <= k for topk).
#pragma once

#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

void sort(const Shape& shape, const Operand& values, const Operand& indices, const Operand& in, bool descending,
          bool stable);
void topk(const Shape& shape, int64_t k, const Operand& values, const Operand& indices, const Operand& in,
          bool largest, bool sorted);
void kth_smallest(const Shape& shape, int64_t k, const Operand& value, const Operand& index, const Operand& in);

}  // namespace mlu::kernels
