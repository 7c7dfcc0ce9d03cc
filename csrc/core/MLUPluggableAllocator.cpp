#include "csrc/core/MLUPluggableAllocator.h"

#include <atomic>
#include <mutex>

#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"
#include "csrc/core/MLUTrace.h"

namespace torch_mlu {
namespace {

// What a tensor's DataPtr remembers to give its memory back.
struct PluggableBlock {
  MLUPluggableAllocator* allocator;
  void* ptr;
  size_t size;
  int device;
  cnrtQueue_t queue;
};

void free_pluggable_block(void* context) {
  auto* block = static_cast<PluggableBlock*>(context);
  trace::memory_deallocation(block->ptr);
  block->allocator->raw_free(block->ptr, block->size, block->device, block->queue);
  delete block;
}

std::mutex g_current_mu;
std::shared_ptr<MLUPluggableAllocator> g_current;  // kept alive while current
std::atomic<MLUPluggableAllocator*> g_current_ptr{nullptr};

}  // namespace

void* MLUPluggableAllocator::raw_alloc(size_t size, int device, cnrtQueue_t queue) {
  void* ptr = alloc_fn_(static_cast<ssize_t>(size), device, queue);
  TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "MLU out of memory: the pluggable allocator's alloc function "
                   "returned NULL for ", size, " bytes on mlu:", device);
  mlu::mluPointerAttributes attributes{};
  MLU_CHECK(mlu::mluPointerGetAttributes(&attributes, ptr));
  if (attributes.type != mlu::mluMemoryTypeDevice || attributes.device != device) {
    free_fn_(ptr, static_cast<ssize_t>(size), device, queue);
    TORCH_CHECK(false, "the pluggable allocator's alloc function returned ", ptr, ", which is not device memory of "
                "mlu:", device, " (allocate it with cnrtMalloc on that device)");
  }
  return ptr;
}

void MLUPluggableAllocator::raw_free(void* ptr, size_t size, int device, cnrtQueue_t queue) {
  free_fn_(ptr, static_cast<ssize_t>(size), device, queue);
}

c10::DataPtr MLUPluggableAllocator::allocate(size_t size) {
  c10::DeviceIndex device = current_device();
  c10::Device where(c10::DeviceType::PrivateUse1, device);
  if (size == 0) return c10::DataPtr(nullptr, nullptr, &free_pluggable_block, where);
  cnrtQueue_t queue = getCurrentMLUStream(device).queue();
  void* ptr = raw_alloc(size, device, queue);
  trace::memory_allocation(ptr);
  return c10::DataPtr(ptr, new PluggableBlock{this, ptr, size, device, queue}, &free_pluggable_block, where);
}

void MLUPluggableAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  MLU_CHECK(mlu::mluMemcpyAsync(dest, src, count, mlu::mluMemcpyDeviceToDevice, getCurrentMLUStream().queue()));
}

c10::CachingDeviceAllocator::DeviceStats MLUPluggableAllocator::getDeviceStats(c10::DeviceIndex) {
  unsupported("getDeviceStats");
}
void MLUPluggableAllocator::resetAccumulatedStats(c10::DeviceIndex) { unsupported("resetAccumulatedStats"); }
void MLUPluggableAllocator::resetPeakStats(c10::DeviceIndex) { unsupported("resetPeakStats"); }

void MLUPluggableAllocator::unsupported(const char* what) {
  TORCH_CHECK(false, "MLUPluggableAllocator does not yet support ", what,
              ". If you need it, please file an issue describing your use case.");
}

std::pair<size_t, size_t> MLUPluggableAllocator::getMemoryInfo(c10::DeviceIndex device) {
  return MLUCachingAllocator::get()->getMemoryInfo(device);  // the device's, whoever allocates
}

c10::DeviceAllocator* getMLUDeviceAllocator() {
  MLUPluggableAllocator* pluggable = g_current_ptr.load(std::memory_order_acquire);
  return pluggable != nullptr ? static_cast<c10::DeviceAllocator*>(pluggable) : MLUCachingAllocator::get();
}

MLUPluggableAllocator* currentPluggableAllocator() { return g_current_ptr.load(std::memory_order_acquire); }

void changeCurrentAllocator(std::shared_ptr<MLUPluggableAllocator> allocator) {
  std::lock_guard<std::mutex> lock(g_current_mu);
  TORCH_CHECK(allocator != nullptr, "change_current_allocator: no allocator given");
  TORCH_CHECK(!MLUCachingAllocator::hasAllocated(), "Can't swap an already initialized allocator: the mlu caching "
              "allocator has handed out memory. Call torch.mlu.memory.change_current_allocator before the first mlu "
              "tensor is created");
  g_current = std::move(allocator);
  g_current_ptr.store(g_current.get(), std::memory_order_release);
  c10::SetAllocator(c10::DeviceType::PrivateUse1, g_current.get(), /*priority=*/1);
}

}  // namespace torch_mlu
