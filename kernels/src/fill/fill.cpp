#include "mlu_kernels/fill.h"

#include <algorithm>
#include <cstring>

#include "../common/dispatch.h"
#include "../common/strided_loop.h"
#include "../common/unravel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

// The byte every byte of the element equals, or -1 when they differ.
int repeated_byte(const void* value, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(value);
  const bool same = std::all_of(bytes, bytes + size, [&](unsigned char b) { return b == bytes[0]; });
  return same ? bytes[0] : -1;
}

template <class T>
void fill_contiguous(T* __restrict dst, int64_t n, T value) {
  for (int64_t i = 0; i < n; ++i) dst[i] = value;
}

template <class T>
void fill_strided(T* dst, const Shape& shape, const Strides& strides, T value) {
  const int64_t n = shape.sizes[shape.ndim - 1];
  const int64_t stride = strides.v[shape.ndim - 1];
  const Strides* operands[1] = {&strides};
  detail::for_each_row(shape, operands, [&](const int64_t* offsets) {
    T* row = dst + offsets[0];
    if (stride == 1) {
      fill_contiguous(row, n, value);
    } else {
      for (int64_t i = 0; i < n; ++i) row[i * stride] = value;
    }
  });
}

}  // namespace

void fill(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
          const void* value) {
  Shape s = shape;
  Strides st = strides;
  Strides* operands[] = {&st};
  sort_dims_by_stride(s, operands, 1);
  coalesce(s, operands, 1);
  const int64_t n = numel(s);
  if (n == 0) return;
  detail::VerboseCall call("fill", detail::VerboseCall::Nested::Quiet);
  if (call) call.describe(dtype, "n%lld", detail::lld(n));
  const size_t size = element_size(dtype);
  const bool contiguous = s.ndim == 0 || (s.ndim == 1 && st.v[0] == 1);
  const int byte = repeated_byte(value, size);
  if (contiguous && byte >= 0) {
    call.path("memset");
    std::memset(dst, byte, static_cast<size_t>(n) * size);
    return;
  }
  call.path(contiguous ? "contiguous" : "strided");
  detail::dispatch_bits(size, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, value, sizeof(T));
    if (contiguous) {
      fill_contiguous(static_cast<T*>(dst), n, v);
    } else {
      fill_strided(static_cast<T*>(dst), s, st, v);
    }
  });
}

void fill_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
              const void* value) {
  const size_t size = element_size(dtype);
  const int64_t n = numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t offset = detail::unravel_offset(i, shape, strides);
    std::memcpy(static_cast<char*>(dst) + offset * static_cast<int64_t>(size), value, size);
  }
}

}  // namespace mlu::kernels
