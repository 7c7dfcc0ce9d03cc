// Shape and Strides describe an N-d view over raw memory, row-major (the last
// dim is the fastest). Strides count ELEMENTS, not bytes; a stride may be 0
// (broadcast) and the kernels do not assume it is positive. ndim is in
// [0, kMaxDims]; ndim 0 is a single element. Only the first ndim entries of
// sizes / v are meaningful, and sizes are >= 0.
#pragma once

#include <cstdint>

namespace mlu::kernels {

constexpr int kMaxDims = 16;

struct Shape {
  int ndim = 0;
  int64_t sizes[kMaxDims];
};

struct Strides {
  int64_t v[kMaxDims];
};

// Number of elements: the product of the sizes, 1 for ndim 0.
int64_t numel(const Shape& shape);

// Rewrites shape and every operand's strides in place into the fewest dims
// that visit the same elements in the same order: drops size-1 dims, and merges
// dim i into dim i+1 when stride[i] == stride[i+1] * size[i+1] for every
// operand. A contiguous view ends as ndim 1 with stride 1 (ndim 0 if it has one
// element). operands holds n_operands non-null pointers.
void coalesce(Shape& shape, Strides* operands[], int n_operands);

// Permutes the dims (the same permutation for every operand) so that operand
// 0's strides decrease in magnitude, ties broken by the next operands: the
// innermost dim then walks memory most closely. Only for kernels whose
// result does not depend on the visiting order (copy, fill); call before
// coalesce.
void sort_dims_by_stride(Shape& shape, Strides* operands[], int n_operands);

}  // namespace mlu::kernels
