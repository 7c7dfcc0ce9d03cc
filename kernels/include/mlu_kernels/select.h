// Stream compaction: the non-zero elements of a view, in row-major order.
// The caller first learns the output size (count_nonzero, or a sum of the
// mask), allocates, then writes:
//   nonzero:       the coordinates of every non-zero element of `in`, one row
//                  of `ndim` int64 values each (out_row / out_col strides)
//   masked_select: in[p] for every p where mask[p] != 0, into a 1-D output
// All three split the elements over the compute threads in two passes (Note
// [Two-pass compaction] in select.cpp); the output order is row-major.
// Preconditions: outputs are large enough and overlap no input.
#pragma once

#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

int64_t count_nonzero(const Shape& shape, const Operand& in);
void nonzero(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col);
void masked_select(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out);

// The scalar references: one serial pass in row-major order (src/select/select_ref.cpp).
int64_t count_nonzero_ref(const Shape& shape, const Operand& in);
void nonzero_ref(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col);
void masked_select_ref(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out);

}  // namespace mlu::kernels
