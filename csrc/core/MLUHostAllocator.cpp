#include "csrc/core/MLUHostAllocator.h"

#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include <c10/util/Logging.h>

#include "csrc/core/MLUException.h"

namespace torch_mlu {
namespace {

void free_pinned(void* ptr) {
  if (mlu::mluFreeHost(ptr) != mlu::mluSuccess) {
    LOG(WARNING) << "torch_mlu: freeing pinned memory failed: " << mlu::mluGetLastErrorDetail();
  }
}

class MLUHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    void* ptr = nullptr;
    MLU_CHECK(mlu::mluHostMalloc(&ptr, size));
    return c10::DataPtr(ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

MLUHostAllocator g_host_allocator;

}  // namespace

c10::Allocator* getMLUHostAllocator() { return &g_host_allocator; }

bool isPinnedPtr(const void* ptr) {
  mlu::mluPointerAttributes attributes{};
  if (mlu::mluPointerGetAttributes(&attributes, ptr) != mlu::mluSuccess) return false;
  return attributes.type == mlu::mluMemoryTypeHost;
}

}  // namespace torch_mlu
