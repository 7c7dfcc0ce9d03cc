// Device address space without memory behind it, and memory mapped into it
// on demand (cf. the CUDA driver's cuMemAddressReserve / cuMemMap). The
// caching allocator's expandable segments are built on this.
//
// A reservation is a range of device addresses of one device (the current
// one when reserved). It counts against nothing until a part of it is mapped:
// mapping commits memory to whole granules (mluMemGetGranularity) and charges
// the device's capacity; unmapping gives both back. Copies that touch an
// unmapped granule fail with mluErrorInvalidValue; a kernel that touches one
// faults, as real hardware would. Reserved memory cannot be freed with
// mluFree, or opened by mluPointerGetAttributes as anything but the whole
// reservation; its mapped parts can be shared between processes in place,
// like any device memory (ipc.h). Unmapping a range another process still has
// open leaves that process its pages (they no longer count anywhere).
//
// Invariants: a granule is either mapped or not (mapping a mapped granule or
// unmapping an unmapped one is mluErrorInvalidValue and changes nothing), and
// a failed map changes nothing.
#pragma once

#include <cstddef>

#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

namespace mlu {

// The unit of mapping, in bytes (a power of two; 64 KiB on the software MLU).
mluError_t mluMemGetGranularity(size_t* granularity);
// Reserves `size` bytes (rounded up to the granularity) of the current
// device's address space; nothing is mapped.
mluError_t mluMemAddressReserve(void** ptr, size_t size);
// Unmaps what is still mapped (after the device's work completes; with nothing
// mapped it waits for nothing) and gives the address range back. `ptr` must be
// what mluMemAddressReserve returned.
mluError_t mluMemAddressFree(void* ptr);
// Maps memory to [ptr, ptr + size) of a reservation: both granule-aligned
// (relative to the reservation's start), none of it mapped yet. Fails with
// mluErrorMemoryAllocation, changing nothing, when the device is full.
mluError_t mluMemMap(void* ptr, size_t size);
// Unmaps [ptr, ptr + size) of a reservation, every granule of it mapped, once
// the owning device has finished the work queued so far (like mluFree).
mluError_t mluMemUnmap(void* ptr, size_t size);
// Note [Unmapping without the device]
// As mluMemUnmap, but waits only for the work queued on `queue` (of the range's
// device) so far: the caller vouches that no other queue's work uses the range,
// as the caching allocator does for a cached block (every other queue that used
// it has passed the block's events). Waiting for the whole device there can
// deadlock: a collective queued on another queue waits for a peer process whose
// host may itself be waiting, in the same way, for its own collective. CUDA's
// caching allocator likewise synchronizes the segment's stream before cuMemUnmap.
mluError_t mluMemUnmapAfter(void* ptr, size_t size, mluQueue_t queue);

}  // namespace mlu
