// fill: writes one value into every element of a strided view.
// dst points at the view's element [0, ..., 0]; value points at ONE element
// already of dtype (its bytes are copied, never converted). Preconditions
// (unchecked): every addressed element lies in memory the caller owns, value
// does not point into the view, and Bool values are the bytes 0 or 1.
#pragma once

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// Optimised: coalesces the view, then memset / a vectorisable loop when the
// view is contiguous, and a strided row loop otherwise.
void fill(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
          const void* value);

// Scalar reference: visits each element by linear index and unravels it.
void fill_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
              const void* value);

}  // namespace mlu::kernels
