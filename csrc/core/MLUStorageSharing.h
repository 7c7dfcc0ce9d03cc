// Sharing mlu storages between processes (torch.multiprocessing).
//
// Note [Sharing mlu storages between processes]
// Every device allocation outside the host-access trap already lives in a
// shared-memory file (Note [Shareable device memory] in runtime/src/ipc.cpp),
// so share_storage() shares a storage where it lies, like CUDA: nothing is
// copied or moved, and every pointer into it (tensors and views, captured
// MLUGraphs, DLPack aliases, extensions keeping data_ptr()) stays valid. The
// handle names the storage's bytes: the file of the allocation they lie in
// (a caching-allocator segment, say), their offset in it and their size. The
// consumer maps just those bytes (open_shared_storage), and the runtime marks
// them in use until it unmaps them, whichever process it is in.
// The producer's storage keeps its address but its DataPtr gains a wrapper
// holding the DataPtr it had (allocator_data_ptr returns that one). When the
// storage dies while another process still has its bytes open, the wrapped
// DataPtr is parked instead of freed, so the caching allocator never hands out
// memory another process maps; collect_shared_blocks frees what is no longer
// open (at every share, torch.mlu.ipc_collect, empty_cache and before an
// out-of-memory error). Meanwhile the block stays allocated in the producer's
// allocator and counts against its device; an opened range counts against no
// device. A shared storage stops being resizable, like a shared CPU storage.
// Under the host-access trap nothing can be shared (the runtime refuses).
#pragma once

#include <cstddef>

#include <c10/core/Storage.h>

namespace torch_mlu {

struct SharedStorageHandle {
  int fd;         // the allocation's file, owned by the runtime: valid while the storage lives
  size_t offset;  // where the storage's bytes start in the file
  size_t nbytes;
  c10::DeviceIndex device;
};

// Shares `storage` (on mlu, nbytes > 0) in place; its handle. The device is
// synchronised first, so the consumer sees the bytes as they are now.
SharedStorageHandle share_storage(const c10::Storage& storage);

// A storage on `device` over `nbytes` at `offset` of another process's shared
// memory; `fd` is a descriptor of this process (the runtime opens its own).
c10::Storage open_shared_storage(int fd, size_t offset, size_t nbytes, c10::DeviceIndex device);

// Frees the parked blocks of shared storages that no process has open any
// more (torch.mlu.ipc_collect); whether it freed any.
bool collect_shared_blocks();

// The DataPtr the storage owning `data` had before it was shared (the
// caching allocator's, for record_stream); `data` itself if it was not shared.
const c10::DataPtr& allocator_data_ptr(const c10::DataPtr& data);

}  // namespace torch_mlu
