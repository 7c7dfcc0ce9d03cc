// The gradient of Tensor.unfold(dim, size, step) for overlapping windows
// (step < size): the overlap-add behind istft and fold-like ops.
//
// With the unfolded dim at the middle of grad_in (outer, length, inner) and
// grad laid out (outer, windows, inner, size), both contiguous, every
// position p of grad_in's middle dim receives the sum, over the windows i
// that cover it (i * step <= p < i * step + size), of grad[o, i, q, p - i *
// step], added in increasing i in the compute type (float for 16-bit types)
// and written once. Elements no window covers are set to zero. Types: every
// floating and complex type (not Bool or integers).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

void unfold_backward(ScalarType type, void* grad_in, const void* grad, int64_t outer, int64_t length, int64_t inner,
                     int64_t windows, int64_t size, int64_t step);
// The scalar reference: each position of grad_in on its own, the same sums in
// the same order (src/unfold/unfold_ref.cpp).
void unfold_backward_ref(ScalarType type, void* grad_in, const void* grad, int64_t outer, int64_t length, int64_t inner,
                         int64_t windows, int64_t size, int64_t step);

}  // namespace mlu::kernels
