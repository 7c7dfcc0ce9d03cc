// One expandable segment of the mlu caching allocator (Note [Expandable
// segments] in MLUCachingAllocator.cpp): a reservation of device address space
// (mlu_runtime/virtual_memory.h) for one stream and pool, whose pages are
// mapped as its blocks grow into them and unmapped when empty_cache (or an
// out-of-memory retry) gives cached memory back.
//
// Invariant: mapped_bytes() is the sum of the mapped pages; every range map()
// and unmap() take and return is page-aligned relative to ptr().
#pragma once

#include <cstddef>
#include <memory>

#include <mlu_runtime/queue.h>

namespace torch_mlu {

class ExpandableSegment {
 public:
  struct Range {
    char* ptr;
    size_t size;  // 0: nothing
  };

  // Reserves `size` bytes (a multiple of `page`) of `device`'s address space;
  // nullptr when the device or the host has no address space left.
  static std::unique_ptr<ExpandableSegment> reserve(int device, size_t size, size_t page);
  ~ExpandableSegment();  // unmaps what is mapped and gives the range back
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  char* ptr() const { return base_; }
  size_t size() const { return size_; }
  size_t page() const { return page_; }
  size_t mapped_bytes() const { return mapped_; }

  // Maps the pages covering `range` (rounded outwards). Returns what was
  // mapped, or an empty range when the device is full (nothing changes then).
  Range map(Range range);
  // Unmaps the whole pages inside `range` (rounded inwards), once the work
  // queued on `stream`, the only queue that may still use them, is done (Note
  // [Unmapping without the device] in mlu_runtime/virtual_memory.h). Returns
  // what was unmapped (possibly nothing).
  Range unmap(Range range, mlu::mluQueue_t stream);

 private:
  ExpandableSegment(int device, char* base, size_t size, size_t page)
      : device_(device), base_(base), size_(size), page_(page) {}
  size_t down(size_t offset) const { return offset / page_ * page_; }
  size_t up(size_t offset) const { return (offset + page_ - 1) / page_ * page_; }

  const int device_;
  char* const base_;
  const size_t size_;
  const size_t page_;
  size_t mapped_ = 0;
};

}  // namespace torch_mlu
