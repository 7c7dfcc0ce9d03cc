// Recording an out-of-range index (or label) found by any of a kernel's
// threads, for the IndexCheck the kernel returns (mlu_kernels/index.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "mlu_kernels/index.h"

namespace mlu::kernels::detail {

// Keeps the first bad value reported (threads race; which one wins is not
// specified, only that one of the bad values is kept).
struct BadIndex {
  std::atomic<bool> seen{false};
  std::atomic<int64_t> value{0};
  void report(int64_t v) {
    if (!seen.exchange(true)) value.store(v);
  }
  IndexCheck check() const { return {!seen.load(), value.load()}; }
};

}  // namespace mlu::kernels::detail
