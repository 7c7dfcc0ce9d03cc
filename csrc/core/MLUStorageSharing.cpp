// See Note [Sharing mlu storages between processes] in MLUStorageSharing.h.
#include "csrc/core/MLUStorageSharing.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <mlu_runtime/ipc.h>
#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

// The synchronizing release waits for the device; a deleter that runs on a
// device thread (a tensor dropped inside a task) cannot wait, and frees in
// the order of the device's default queue instead.
void free_shareable(void* ptr) {
  if (mlu::mluFree(ptr) != mlu::mluSuccess) mlu::mluFreeAsync(ptr, nullptr);
}

// Deleters cannot report errors; a failed close leaves the mapping until exit.
void close_opened(void* ptr) { (void)mlu::mluIpcCloseMemHandle(ptr); }

bool is_shared(const c10::DataPtr& data) {
  return data.get_deleter() == &free_shareable || data.get_deleter() == &close_opened;
}

}  // namespace

SharedStorageHandle share_storage(const c10::Storage& storage) {
  TORCH_CHECK(storage.device().is_privateuseone(), "share_storage: expected an mlu storage, got one on ",
              storage.device());
  TORCH_CHECK(storage.nbytes() > 0, "share_storage: an empty storage has no memory to share");
  const c10::DeviceIndex device = storage.device().index();
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  if (!is_shared(impl->data_ptr())) {
    c10::DeviceGuard guard(storage.device());
    device_synchronize(device);  // no queued task may still use the old block
    void* shareable = nullptr;
    MLU_CHECK(mlu::mluMallocShareable(&shareable, storage.nbytes()));
    c10::DataPtr moved(shareable, shareable, &free_shareable, storage.device());
    MLU_CHECK(mlu::mluMemcpy(shareable, storage.data(), storage.nbytes(), mlu::mluMemcpyDeviceToDevice));
    impl->set_data_ptr_noswap(std::move(moved));
    impl->set_resizable(false);
  }
  mlu::mluIpcMemHandle_t handle{};
  MLU_CHECK(mlu::mluIpcGetMemHandle(&handle, impl->mutable_data()));
  return {handle.fd, storage.nbytes(), device};
}

c10::Storage open_shared_storage(int fd, size_t nbytes, c10::DeviceIndex device) {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
  void* mapped = nullptr;
  MLU_CHECK(mlu::mluIpcOpenMemHandle(&mapped, {fd, nbytes}));
  c10::DataPtr data(mapped, mapped, &close_opened, c10::Device(c10::DeviceType::PrivateUse1, device));
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), /*allocator=*/nullptr,
                      /*resizable=*/false);
}

}  // namespace torch_mlu
