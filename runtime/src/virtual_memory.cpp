// Reservations and on-demand mapping (mlu_runtime/virtual_memory.h).
#include "mlu_runtime/virtual_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "capture.h"
#include "device_memory.h"
#include "device_state.h"
#include "error_state.h"
#include "fork_state.h"
#include "host_trap_state.h"
#include "mlu_runtime/host_trap.h"
#include "queue_impl.h"
#include "registry.h"
#include "reservation.h"

namespace mlu {
using namespace detail;
namespace {

// Finer than CUDA's usual 2 MiB: host memory is mapped in 4 KiB pages, and a
// fine grain lets the caching allocator's expandable segments track the
// memory allocated closely (Note [Expandable segments]).
constexpr size_t kGranularity = size_t{64} << 10;
// Reservations start on a transparent huge page, so mapped runs can use them.
constexpr size_t kHugePage = size_t{2} << 20;

// The reservation that [ptr, ptr + size) lies in, granule-aligned; nullptr and `*status` set otherwise.
std::shared_ptr<Reservation> find_range(void* ptr, size_t size, const char* call, mluError_t* status) {
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->backing != Backing::kReserved) {
    *status = fail(mluErrorInvalidValue, std::string(call) + ": " + describe(ptr) + " is not in a reservation from "
                                             "mluMemAddressReserve");
    return nullptr;
  }
  const uintptr_t offset = reinterpret_cast<uintptr_t>(ptr) - found->base;
  if (offset % kGranularity != 0 || size == 0 || size % kGranularity != 0 || size > found->size - offset) {
    *status = fail(mluErrorInvalidValue, std::string(call) + ": the range of " + std::to_string(size) + " bytes at " +
                                             describe(ptr) + " is not whole granules of " + mib(kGranularity) +
                                             " inside its reservation");
    return nullptr;
  }
  return found->reservation;
}

// Gives the pages of [begin, begin + size) back to the host and makes them inaccessible.
void drop_pages(const Reservation& r, uintptr_t begin, size_t size) {
  auto* address = reinterpret_cast<void*>(begin);
  if (r.trapped) {  // the trapped half stays PROT_NONE; the device mapping drops its pages
    madvise(mluDevicePointer(address), size, MADV_DONTNEED);
    return;
  }
  if (r.fd < 0) {
    madvise(address, size, MADV_DONTNEED);
    mprotect(address, size, PROT_NONE);
    return;
  }
  mprotect(address, size, PROT_NONE);
  // Note [Shareable device memory]: the pages are the file's. Those another
  // process still maps stay there (uncharged) until it lets go and the range is
  // mapped and unmapped again, or the reservation is freed.
  const size_t offset = begin - r.base;
  if (!file_range_in_use(r.fd, offset, size)) {
    (void)fallocate(r.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(size));
  }
}

}  // namespace

mluError_t mluMemGetGranularity(size_t* granularity) {
  if (granularity == nullptr) return fail(mluErrorInvalidValue, "granularity must not be null");
  *granularity = kGranularity;
  return mluSuccess;
}

mluError_t mluMemAddressReserve(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(mluErrorInvalidValue, "ptr must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  *ptr = nullptr;
  int device = current_device();
  if (mluError_t status = check_device(device)) return status;
  if (size == 0) return fail(mluErrorInvalidValue, "mluMemAddressReserve: size must not be 0");
  const size_t bytes = (size + kGranularity - 1) / kGranularity * kGranularity;
  if (bytes < size) return fail(mluErrorInvalidValue, "mluMemAddressReserve: size overflows");
  auto r = std::make_shared<Reservation>();
  r->size = bytes;
  r->device = device;
  r->granularity = kGranularity;
  r->mapped.assign(bytes / kGranularity, false);
  r->trapped = trap_enabled();
  if (r->trapped) {
    r->base = reinterpret_cast<uintptr_t>(trap_allocate(bytes, device));
    if (r->base == 0) {
      return fail(mluErrorMemoryAllocation, "mluMemAddressReserve: the host-access trap's window has no " +
                                                mib(bytes) + " of address space left");
    }
  } else {
    // Over-reserve by a huge page so the range can start on one.
    void* memory = mmap(nullptr, bytes + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      return fail(mluErrorMemoryAllocation, "mluMemAddressReserve: the host has no " + mib(bytes) +
                                                " of address space left");
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(memory);
    const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(memory, aligned - start);
    if (start + kHugePage > aligned) munmap(reinterpret_cast<void*>(aligned + bytes), start + kHugePage - aligned);
    r->base = aligned;
    // Note [Shareable device memory]: a file behind it, so mapped parts can be shared in place.
    r->fd = back_reservation(reinterpret_cast<void*>(aligned), bytes);
  }
  Allocation a{r->base, bytes, device, Backing::kReserved, r->fd, r};
  register_allocation(a);
  note_runtime_started();
  *ptr = reinterpret_cast<void*>(r->base);
  return mluSuccess;
}

mluError_t mluMemAddressFree(void* ptr) {
  if (in_forked_child()) return fail_in_forked_child();
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->backing != Backing::kReserved || found->base != reinterpret_cast<uintptr_t>(ptr)) {
    return fail(mluErrorInvalidValue, "mluMemAddressFree: " + describe(ptr) + " is not a reservation's start");
  }
  if (on_device_thread()) return fail(mluErrorInvalidValue, "a device task cannot use mluMemAddressFree");
  if (mluError_t s = refuse_unsafe_call("mluMemAddressFree (it synchronizes)")) return s;
  Reservation& r = *found->reservation;
  bool any_mapped = false;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (bool mapped : r.mapped) any_mapped = any_mapped || mapped;
  }
  // Nothing mapped: no work can use the range, and waiting for the device could
  // wait on a collective that waits on another process (Note [Unmapping
  // without the device] in virtual_memory.h).
  if (any_mapped) device_state(r.device)->wait_idle();
  if (!unregister_allocation(ptr)) return fail(mluErrorInvalidValue, describe(ptr) + " was freed concurrently");
  size_t mapped = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (size_t g = 0; g < r.mapped.size(); ++g) mapped += r.mapped[g] ? kGranularity : 0;
    r.mapped.assign(r.mapped.size(), false);
  }
  if (r.trapped) {
    trap_release(ptr);
  } else {
    munmap(ptr, r.size);
    if (r.fd >= 0) close(r.fd);  // pages another process still maps live on with its mapping
  }
  if (mapped > 0) device_state(r.device)->release_memory(mapped);
  return mluSuccess;
}

mluError_t mluMemMap(void* ptr, size_t size) {
  if (in_forked_child()) return fail_in_forked_child();
  mluError_t status = mluSuccess;
  std::shared_ptr<Reservation> r = find_range(ptr, size, "mluMemMap", &status);
  if (r == nullptr) return status;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(r->mu);
  const size_t first = (begin - r->base) / kGranularity, count = size / kGranularity;
  for (size_t g = first; g < first + count; ++g) {
    if (r->mapped[g]) return fail(mluErrorInvalidValue, "mluMemMap: " + describe(ptr) + " is already mapped in part");
  }
  if (mluError_t s = reserve_device_memory(r->device, size)) return s;
  if (!r->trapped && mprotect(ptr, size, PROT_READ | PROT_WRITE) != 0) {
    device_state(r->device)->release_memory(size);
    return fail(mluErrorMemoryAllocation, "mluMemMap: the host could not back " + mib(size) + " of device memory");
  }
  for (size_t g = first; g < first + count; ++g) r->mapped[g] = true;
  return mluSuccess;
}

namespace {

// mluMemUnmap and mluMemUnmapAfter: unmaps [ptr, ptr + size) once `wait` has
// waited for the work that may still use it.
template <class Wait>
mluError_t unmap_range(void* ptr, size_t size, const char* call, Wait wait) {
  if (in_forked_child()) return fail_in_forked_child();
  mluError_t status = mluSuccess;
  std::shared_ptr<Reservation> r = find_range(ptr, size, call, &status);
  if (r == nullptr) return status;
  if (on_device_thread()) return fail(mluErrorInvalidValue, std::string("a device task cannot use ") + call);
  if (mluError_t s = refuse_unsafe_call((std::string(call) + " (it synchronizes)").c_str())) return s;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  const size_t first = (begin - r->base) / kGranularity, count = size / kGranularity;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    for (size_t g = first; g < first + count; ++g) {
      if (!r->mapped[g])
        return fail(mluErrorInvalidValue, std::string(call) + ": " + describe(ptr) + " is not mapped in full");
    }
  }
  if (mluError_t s = wait(*r)) return s;
  std::lock_guard<std::mutex> lock(r->mu);
  for (size_t g = first; g < first + count; ++g) {
    if (!r->mapped[g]) {
      return fail(mluErrorInvalidValue, std::string(call) + ": " + describe(ptr) + " was unmapped concurrently");
    }
  }
  drop_pages(*r, begin, size);
  for (size_t g = first; g < first + count; ++g) r->mapped[g] = false;
  device_state(r->device)->release_memory(size);
  return mluSuccess;
}

}  // namespace

mluError_t mluMemUnmap(void* ptr, size_t size) {
  return unmap_range(ptr, size, "mluMemUnmap", [](const Reservation& r) {
    device_state(r.device)->wait_idle();
    return mluSuccess;
  });
}

mluError_t mluMemUnmapAfter(void* ptr, size_t size, mluQueue_t queue) {
  mluError_t status = mluSuccess;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  return unmap_range(ptr, size, "mluMemUnmapAfter", [&](const Reservation& r) {
    if (q->device != r.device) {
      return fail(mluErrorInvalidValue, "mluMemUnmapAfter: the queue is on device " + std::to_string(q->device) +
                                            ", the range on device " + std::to_string(r.device));
    }
    q->wait_for(q->last_launched());
    return mluSuccess;
  });
}

}  // namespace mlu
