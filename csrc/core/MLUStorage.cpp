#include "csrc/core/MLUStorage.h"

#include <algorithm>

#include <c10/core/DeviceGuard.h>
#include <c10/core/CachingDeviceAllocator.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceGuard guard(storage.device());
  c10::DeviceAllocator* allocator = getMLUDeviceAllocator();
  c10::DataPtr fresh = new_bytes != 0 ? allocator->allocate(new_bytes)
                                      : c10::DataPtr(nullptr, storage.device());
  size_t keep = std::min(new_bytes, storage.nbytes());
  if (keep > 0 && storage.data() != nullptr) {
    allocator->copy_data(fresh.get(), storage.data(), keep);
    allocator->recordStream(storage.data_ptr(), getCurrentMLUStream());
  }
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(new_bytes);
}

}  // namespace torch_mlu
