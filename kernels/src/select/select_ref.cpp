// The scalar references of select.h: one pass over the elements in row-major
// order, each element's truth read as convert<bool> (Bool as a byte != 0).
#include <cstdint>
#include <cstring>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/unravel.h"
#include "mlu_kernels/select.h"

namespace mlu::kernels {
namespace {

bool truth(const Operand& op, int64_t offset) {
  bool value = false;
  detail::dispatch(op.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      value = static_cast<const uint8_t*>(op.data)[offset] != 0;
    } else {
      value = detail::convert<bool>(static_cast<const T*>(op.data)[offset]);
    }
  });
  return value;
}

}  // namespace

int64_t count_nonzero_ref(const Shape& shape, const Operand& in) {
  int64_t total = 0;
  for (int64_t i = 0, n = numel(shape); i < n; ++i) total += truth(in, detail::unravel_offset(i, shape, in.strides));
  return total;
}

void nonzero_ref(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col) {
  int64_t row = 0;
  for (int64_t i = 0, n = numel(shape); i < n; ++i) {
    if (!truth(in, detail::unravel_offset(i, shape, in.strides))) continue;
    int64_t rest = i;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      out[row * out_row + d * out_col] = rest % shape.sizes[d];
      rest /= shape.sizes[d];
    }
    ++row;
  }
}

void masked_select_ref(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out) {
  const size_t size = element_size(in.dtype);
  int64_t written = 0;
  for (int64_t i = 0, n = numel(shape); i < n; ++i) {
    if (!truth(mask, detail::unravel_offset(i, shape, mask.strides))) continue;
    std::memcpy(
        static_cast<char*>(out.data) + written * out.strides.v[0] * static_cast<int64_t>(size),
        static_cast<const char*>(in.data) + detail::unravel_offset(i, shape, in.strides) * static_cast<int64_t>(size),
        size);
    ++written;
  }
}

}  // namespace mlu::kernels
