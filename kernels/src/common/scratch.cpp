#include "scratch.h"

#include <cstdlib>

namespace mlu::kernels::detail {

AlignedScratch16::~AlignedScratch16() { std::free(data_); }

uint16_t* AlignedScratch16::get(size_t n) {
  if (n > size_) {
    std::free(data_);
    data_ = static_cast<uint16_t*>(std::aligned_alloc(64, (n * 2 + 63) / 64 * 64));
    size_ = n;
  }
  return data_;
}

}  // namespace mlu::kernels::detail
