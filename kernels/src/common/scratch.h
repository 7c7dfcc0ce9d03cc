// Per-thread scratch buffers: grown as needed and kept between calls (a fresh
// allocation per call would page-fault its way through megabytes every time).
// The caller owns the (usually thread_local) vector; nothing is zeroed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlu::kernels::detail {

// buffer's data with room for at least `size` elements.
template <class T>
T* grow(std::vector<T>& buffer, int64_t size) {
  if (buffer.size() < static_cast<size_t>(size)) buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

// A growable buffer of 16-bit elements, 64-byte aligned (packed BFloat16
// panels that aligned vector loads and AMX tiles read). Defined out of line
// (scratch.cpp): the ISA-specific files that use it must not emit their own
// copies of its code (Note [Per-ISA variants]).
class AlignedScratch16 {
 public:
  AlignedScratch16() = default;
  AlignedScratch16(const AlignedScratch16&) = delete;
  AlignedScratch16& operator=(const AlignedScratch16&) = delete;
  ~AlignedScratch16();
  // Room for at least n elements; the contents are not kept when it grows.
  uint16_t* get(size_t n);

 private:
  uint16_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mlu::kernels::detail
