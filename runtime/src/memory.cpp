#include <cstdio>
#include <cstdlib>
#include <string>

#include "capture.h"
#include "device_memory.h"
#include "device_state.h"
#include "error_state.h"
#include "fault_state.h"
#include "host_trap_state.h"
#include "fork_state.h"
#include "mlu_runtime/memory.h"
#include "monitor_record.h"
#include "queue_impl.h"
#include "registry.h"

namespace mlu {
using namespace detail;

void detail::release_device_block(const Allocation& a) {
  if (a.backing == Backing::kHeap) {
    if (trap_enabled()) {
      trap_release(reinterpret_cast<void*>(a.base));
    } else {
      std::free(reinterpret_cast<void*>(a.base));
    }
  } else {
    unmap_shared_block(a);
  }
  if (a.backing != Backing::kOpened) device_state(a.device)->release_memory(round_up(a.size));
}

mluError_t detail::reserve_device_memory(int device, size_t size) {
  DeviceState* state = device_state(device);
  if (const char* fault = faults_active() ? fault_for_allocation(/*host=*/false) : nullptr) {
    return fail(mluErrorMemoryAllocation, "Tried to allocate " + mib(size) + " on MLU " + std::to_string(device) +
                                              ": out of memory, " + fault);
  }
  size_t bytes = round_up(size);
  if (bytes < size || !state->reserve_memory(bytes)) {
    const size_t used = state->used.load();
    const size_t others = monitor_others_memory(device, /*check_alive=*/false);  // Note [Shared device capacity]
    const size_t capacity = state->effective_capacity();
    return fail(mluErrorMemoryAllocation,
                "Tried to allocate " + mib(size) + ". MLU " + std::to_string(device) + " has a total capacity of " +
                    mib(capacity) + " of which " + mib(capacity - std::min(used + others, capacity)) + " is free; " +
                    mib(used) + " is in use by this process" +
                    (others != 0 ? ", " + mib(others) + " by other processes" : std::string()));
  }
  return mluSuccess;
}

mluError_t mluMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(mluErrorInvalidValue, "ptr must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  *ptr = nullptr;
  int device = current_device();
  if (mluError_t status = check_device(device)) return status;
  if (size == 0) return mluSuccess;
  if (mluError_t status = reserve_device_memory(device, size)) return status;
  DeviceState* state = device_state(device);
  size_t bytes = round_up(size);
  // Note [Shareable device memory]: a shared-memory file of its own, so that it
  // can be shared in place; heap memory (not shareable) when the host cannot make one.
  void* block = nullptr;
  int fd = -1;
  std::string unshareable;
  if (!trap_enabled() && map_new_shared_block(bytes, &fd, &block, &unshareable)) {
    register_allocation({reinterpret_cast<uintptr_t>(block), size, device, Backing::kShareable, fd});
    note_runtime_started();
    *ptr = block;
    return mluSuccess;
  }
  block = trap_enabled() ? trap_allocate(bytes, device) : std::aligned_alloc(kAlignment, bytes);
  if (block == nullptr) {
    state->release_memory(bytes);
    return fail(mluErrorMemoryAllocation, "the host could not back " + mib(size) + " of device memory");
  }
  register_allocation({reinterpret_cast<uintptr_t>(block), size, device});
  note_runtime_started();
  *ptr = block;
  return mluSuccess;
}

mluError_t mluFree(void* ptr) {
  if (in_forked_child()) return fail_in_forked_child();
  if (ptr == nullptr) return mluSuccess;
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device < 0 || found->base != reinterpret_cast<uintptr_t>(ptr)) {
    return fail(mluErrorInvalidDevicePointer,
                describe(ptr) + " is not a live device allocation (double free, or not from mluMalloc)");
  }
  if (found->backing == Backing::kOpened) return fail_opened_mapping(ptr);
  if (found->backing == Backing::kReserved) {
    return fail(mluErrorInvalidDevicePointer, describe(ptr) + " is a reservation: unmap it with mluMemUnmap and give "
                                              "it back with mluMemAddressFree");
  }
  if (on_device_thread()) return fail(mluErrorInvalidValue, "a device task cannot use the synchronizing mluFree");
  if (mluError_t s = refuse_unsafe_call("mluFree (a synchronizing free)")) return s;
  device_state(found->device)->wait_idle();
  std::optional<Allocation> removed = unregister_allocation(ptr);
  if (!removed) return fail(mluErrorInvalidDevicePointer, describe(ptr) + " was freed concurrently");
  release_device_block(*removed);
  return mluSuccess;
}

mluError_t mluFreeAsync(void* ptr, mluQueue_t queue) {
  if (in_forked_child()) return fail_in_forked_child();
  if (ptr == nullptr) return mluSuccess;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device < 0 || found->base != reinterpret_cast<uintptr_t>(ptr)) {
    return fail(mluErrorInvalidDevicePointer,
                describe(ptr) + " is not a live device allocation (double free, or not from mluMalloc)");
  }
  if (found->backing == Backing::kOpened) return fail_opened_mapping(ptr);
  if (found->backing == Backing::kReserved) {
    return fail(mluErrorInvalidDevicePointer, describe(ptr) + " is a reservation: unmap it with mluMemUnmap and give "
                                              "it back with mluMemAddressFree");
  }
  if (mluError_t s = refuse_if_capturing(q, "a stream-ordered free (mluFreeAsync)")) return s;
  std::optional<Allocation> removed = unregister_allocation(ptr);
  if (!removed) return fail(mluErrorInvalidDevicePointer, describe(ptr) + " was freed concurrently");
  if (q->on_own_thread()) {  // already in queue order
    release_device_block(*removed);
    return mluSuccess;
  }
  Allocation a = *removed;
  uint64_t unused = 0;
  status = launch_task(q, "free", TaskKind::Internal, [a] { release_device_block(a); }, &unused);
  if (status != mluSuccess) register_allocation(a);
  return status;
}

mluError_t mluHostMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(mluErrorInvalidValue, "ptr must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  *ptr = nullptr;
  if (size == 0) return mluSuccess;
  if (mluError_t s = refuse_unsafe_call("mluHostMalloc (pinning host memory)")) return s;
  if (const char* fault = faults_active() ? fault_for_allocation(/*host=*/true) : nullptr) {
    return fail(mluErrorMemoryAllocation, "cannot pin " + mib(size) + " of host memory: " + fault);
  }
  void* block = std::aligned_alloc(kAlignment, round_up(size));
  if (block == nullptr) return fail(mluErrorMemoryAllocation, "cannot pin " + mib(size) + " of host memory");
  register_allocation({reinterpret_cast<uintptr_t>(block), size, -1});
  note_runtime_started();
  *ptr = block;
  return mluSuccess;
}

mluError_t mluFreeHost(void* ptr) {
  if (in_forked_child()) return fail_in_forked_child();
  if (ptr == nullptr) return mluSuccess;
  if (mluError_t s = refuse_unsafe_call("mluFreeHost (a synchronizing free)")) return s;
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device >= 0 || found->base != reinterpret_cast<uintptr_t>(ptr)) {
    return fail(mluErrorInvalidValue, describe(ptr) + " is not pinned host memory from mluHostMalloc");
  }
  if (on_device_thread()) return fail(mluErrorInvalidValue, "a device task cannot use the synchronizing mluFreeHost");
  for (int d = 0; d < visible_device_count(); ++d) device_state(d)->wait_idle();
  if (!unregister_allocation(ptr)) return fail(mluErrorInvalidValue, describe(ptr) + " was freed concurrently");
  std::free(ptr);
  return mluSuccess;
}

mluError_t mluPointerGetAttributes(mluPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(mluErrorInvalidValue, "attributes must not be null");
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found) {
    *attributes = {mluMemoryTypeUnregistered, -1, nullptr, 0};
    return mluSuccess;
  }
  attributes->type = found->device >= 0 ? mluMemoryTypeDevice : mluMemoryTypeHost;
  attributes->device = found->device;
  attributes->basePointer = reinterpret_cast<void*>(found->base);
  attributes->size = found->size;
  return mluSuccess;
}

mluError_t mluMemGetInfo(size_t* free, size_t* total) {
  int device = current_device();
  if (mluError_t status = check_device(device)) return status;
  DeviceState* state = device_state(device);
  const size_t capacity = state->effective_capacity();
  // Note [Shared device capacity]: what is free is free for every process using the device.
  size_t used = std::min(state->used.load() + monitor_others_memory(device, /*check_alive=*/false), capacity);
  if (free != nullptr) *free = capacity - used;
  if (total != nullptr) *total = capacity;
  return mluSuccess;
}

}  // namespace mlu
