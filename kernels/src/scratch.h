// Per-thread scratch buffers: grown as needed and kept between calls (a fresh
// allocation per call would page-fault its way through megabytes every time).
// The caller owns the (usually thread_local) vector; nothing is zeroed.
#pragma once

#include <cstdint>
#include <vector>

namespace mlu::kernels::detail {

// buffer's data with room for at least `size` elements.
template <class T>
T* grow(std::vector<T>& buffer, int64_t size) {
  if (buffer.size() < static_cast<size_t>(size)) buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

}  // namespace mlu::kernels::detail
