// Sharing mlu storages between processes (torch.multiprocessing).
//
// Note [Sharing mlu storages between processes]
// The runtime shares device memory through shareable allocations (mlu_runtime/
// ipc.h): pages in a shared-memory file another process maps onto its device.
// share_storage() makes a storage shareable in place: the first time, after
// every queue of its device has drained, its bytes move into a shareable
// allocation and the storage's DataPtr is swapped for it, so every tensor
// viewing the storage follows, and the old block goes back to the caching
// allocator (which thus never hands out memory another process maps). The
// storage stops being resizable, like a shared CPU storage. The consumer's
// storage over the same pages comes from open_shared_storage(). Each side's
// pages live until its storage dies; a shareable allocation counts against
// the device that made it, an opened one against none; neither is part of the
// caching allocator's statistics.
#pragma once

#include <cstddef>

#include <c10/core/Storage.h>

namespace torch_mlu {

struct SharedStorageHandle {
  int fd;  // owned by the storage's allocation: valid while the storage lives
  size_t nbytes;
  c10::DeviceIndex device;
};

// Makes `storage` (on mlu, nbytes > 0) shareable if it is not yet; its handle.
SharedStorageHandle share_storage(const c10::Storage& storage);

// A storage on `device` over the pages of another process's shareable
// allocation; `fd` is a descriptor of this process (the runtime duplicates it).
c10::Storage open_shared_storage(int fd, size_t nbytes, c10::DeviceIndex device);

}  // namespace torch_mlu
