// A device allocator made of two C functions, usually from a shared library
// (cf. torch.cuda.memory.CUDAPluggableAllocator):
//   void* alloc(ssize_t size, int device, cnrtQueue_t queue);
//   void  free(void* ptr, ssize_t size, int device, cnrtQueue_t queue);
// It serves every mlu tensor once made current (changeCurrentAllocator, only
// before the caching allocator has handed out memory), or one MemPool's
// segments. It caches nothing and keeps no statistics: the queries the
// caching allocator answers raise, as CUDA's pluggable allocator does.
// Every pointer `alloc` returns is checked to be device memory of the device
// asked for (mluPointerGetAttributes), so a wrong allocator fails loudly.
#pragma once

#include <sys/types.h>

#include <memory>

#include <c10/core/CachingDeviceAllocator.h>

#include <mlu_runtime/cnrt.h>

namespace torch_mlu {

class MLUPluggableAllocator final : public c10::DeviceAllocator {
 public:
  using AllocFn = void* (*)(ssize_t size, int device, cnrtQueue_t queue);
  using FreeFn = void (*)(void* ptr, ssize_t size, int device, cnrtQueue_t queue);

  MLUPluggableAllocator(AllocFn alloc_fn, FreeFn free_fn) : alloc_fn_(alloc_fn), free_fn_(free_fn) {}

  // Memory for a segment of `size` bytes on `device`, ordered on `queue`.
  void* raw_alloc(size_t size, int device, cnrtQueue_t queue);
  void raw_free(void* ptr, size_t size, int device, cnrtQueue_t queue);

  c10::DataPtr allocate(size_t size) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override;
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}  // nothing is cached
  void recordStream(const c10::DataPtr&, c10::Stream) override {}  // frees are ordered on the allocating queue
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex) override;
  void resetAccumulatedStats(c10::DeviceIndex) override;
  void resetPeakStats(c10::DeviceIndex) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;

  // Raises CUDA's error for what a pluggable allocator cannot do.
  [[noreturn]] static void unsupported(const char* what);

 private:
  AllocFn alloc_fn_;
  FreeFn free_fn_;
};

// Makes `allocator` current; fails once the caching allocator has been used.
void changeCurrentAllocator(std::shared_ptr<MLUPluggableAllocator> allocator);
// The pluggable allocator in use, or nullptr while the caching one is.
MLUPluggableAllocator* currentPluggableAllocator();

}  // namespace torch_mlu
