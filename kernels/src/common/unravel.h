// unravel_offset: the element offset of the linear (row-major) index `linear`
// in a strided view, by plain division. The reference kernels use it to stay
// obviously correct; optimised kernels use it at most once per row (tril/triu,
// softmax), never per element.
// Precondition: 0 <= linear < numel(shape).
#pragma once

#include <cstdint>

#include "mlu_kernels/layout.h"

namespace mlu::kernels::detail {

inline int64_t unravel_offset(int64_t linear, const Shape& shape, const Strides& strides) {
  int64_t offset = 0;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    offset += (linear % shape.sizes[d]) * strides.v[d];
    linear /= shape.sizes[d];
  }
  return offset;
}

}  // namespace mlu::kernels::detail
