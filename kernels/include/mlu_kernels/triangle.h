// tril / triu: the lower or upper triangle of the last two dims of a view,
// the other elements zeroed.
//
// For every matrix of `shape` (ndim >= 2) and element (i, j) of it:
//   out[..., i, j] = keep ? in[..., i, j] : 0,
//   keep = j - i <= diagonal (lower) or j - i >= diagonal (upper).
// out and in have the same dtype; out may be in itself (tril_), otherwise
// they do not overlap. Rows are split over the compute threads.
#pragma once

#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

void triangle(const Shape& shape, const Operand& out, const Operand& in, int64_t diagonal, bool lower);
// The scalar reference: element by element (src/triangle/triangle_ref.cpp).
void triangle_ref(const Shape& shape, const Operand& out, const Operand& in, int64_t diagonal, bool lower);

}  // namespace mlu::kernels
