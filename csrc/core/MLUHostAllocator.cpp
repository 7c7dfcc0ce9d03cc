#include "csrc/core/MLUHostAllocator.h"

#include <mlu_runtime/memory.h>

#include "csrc/core/MLUEvent.h"
#include "csrc/core/MLUException.h"

namespace torch_mlu {
namespace {

struct MLUHostAllocatorImpl : public at::CachingHostAllocatorImpl<MLUStream, MLUEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override { MLU_CHECK(mlu::mluHostMalloc(ptr, size)); }
  void free_block(at::HostBlock<MLUStream>* block) override { MLU_CHECK(mlu::mluFreeHost(block->ptr_)); }
  void record_stream(std::optional<std::vector<MLUEvent>>& events, MLUStream stream) override {
    MLUEvent event;
    event.record(stream);
    events->push_back(std::move(event));
  }
  bool query_event(MLUEvent& event) override { return event.query(); }
  MLUStream get_current_stream() const override { return getCurrentMLUStream(); }
  bool stream_is_capturing(MLUStream) const override { return false; }
};

void free_pinned(void* ctx);

struct MLUCachingHostAllocator final : public at::CachingHostAllocatorInterface<MLUHostAllocatorImpl, free_pinned> {
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

MLUCachingHostAllocator g_host_allocator;

void free_pinned(void* ctx) { g_host_allocator.free(ctx); }

}  // namespace

at::HostAllocator* getMLUHostAllocator() { return &g_host_allocator; }

bool isPinnedPtr(const void* ptr) {
  mlu::mluPointerAttributes attributes{};
  if (mlu::mluPointerGetAttributes(&attributes, ptr) != mlu::mluSuccess) return false;
  return attributes.type == mlu::mluMemoryTypeHost;
}

void record_host_use(void* ptr, void* ctx, const MLUStream& stream) {
  g_host_allocator.record_event(ptr, ctx, stream.unwrap());
}

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator);

}  // namespace torch_mlu
