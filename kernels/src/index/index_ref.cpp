// The scalar reference of index.h's gather: every position on its own, in
// row-major order.
#include <cstdint>
#include <cstring>

#include "../common/unravel.h"
#include "mlu_kernels/index.h"

namespace mlu::kernels {

IndexCheck gather_ref(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                      const Operand& index) {
  const size_t size = element_size(out.dtype);
  IndexCheck check;
  for (int64_t p = 0, n = numel(shape); p < n; ++p) {
    const int64_t at = detail::unravel_offset(p, shape, index.strides);
    const int64_t i = index.dtype == ScalarType::Int32 ? static_cast<const int32_t*>(index.data)[at]
                                                       : static_cast<const int64_t*>(index.data)[at];
    if (i < 0 || i >= dim_size) {
      check = IndexCheck{false, i};
      continue;
    }
    // q = p with q[dim] = i: p's offset in `in`, moved along dim.
    int64_t coordinate = p;
    for (int d = shape.ndim - 1; d > dim; --d) coordinate /= shape.sizes[d];
    coordinate %= shape.sizes[dim];
    const int64_t from = detail::unravel_offset(p, shape, in.strides) + (i - coordinate) * in.strides.v[dim];
    std::memcpy(
        static_cast<char*>(out.data) + detail::unravel_offset(p, shape, out.strides) * static_cast<int64_t>(size),
        static_cast<const char*>(in.data) + from * static_cast<int64_t>(size), size);
  }
  return check;
}

}  // namespace mlu::kernels
