// Internal: the state of one reservation (mlu_runtime/virtual_memory.h).
//
// `mapped` has one flag per granule, guarded by `mu`; the pages of an unmapped
// granule are inaccessible (PROT_NONE, or only reachable through the trap's
// device mapping, Note [Host-access trap]) and hold no memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace mlu::detail {

struct Reservation {
  uintptr_t base = 0;
  size_t size = 0;
  int device = -1;
  size_t granularity = 0;
  bool trapped = false;  // lives in the host-access trap's window
  int fd = -1;           // the shared-memory file mapped over it (ipc.cpp), -1 when trapped or none could be made
  std::mutex mu;
  std::vector<bool> mapped;

  // Whether every granule [begin, end) overlaps is mapped.
  bool is_mapped(uintptr_t begin, uintptr_t end) {
    std::lock_guard<std::mutex> lock(mu);
    if (end <= begin) return true;
    for (size_t g = (begin - base) / granularity; g <= (end - 1 - base) / granularity; ++g) {
      if (!mapped[g]) return false;
    }
    return true;
  }
};

}  // namespace mlu::detail
