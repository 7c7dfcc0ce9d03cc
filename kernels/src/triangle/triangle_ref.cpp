// The scalar reference of triangle.h: element by element, in row-major order.
#include <cstdint>
#include <cstring>

#include "../common/unravel.h"
#include "mlu_kernels/triangle.h"

namespace mlu::kernels {

void triangle_ref(const Shape& shape, const Operand& out, const Operand& in, int64_t diagonal, bool lower) {
  const size_t size = element_size(out.dtype);
  const int64_t rows = shape.sizes[shape.ndim - 2], cols = shape.sizes[shape.ndim - 1];
  for (int64_t e = 0, n = numel(shape); e < n; ++e) {
    const int64_t i = e / cols % rows, j = e % cols;
    const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
    char* d = static_cast<char*>(out.data) + detail::unravel_offset(e, shape, out.strides) * static_cast<int64_t>(size);
    if (keep) {
      const char* s =
          static_cast<const char*>(in.data) + detail::unravel_offset(e, shape, in.strides) * static_cast<int64_t>(size);
      std::memmove(d, s, size);
    } else {
      std::memset(d, 0, size);  // zero bits: 0 (and +0.0) in every dtype
    }
  }
}

}  // namespace mlu::kernels
