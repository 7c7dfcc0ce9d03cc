// See ipc.h. A shareable allocation is a MAP_SHARED mapping of a memfd of
// round_up(size) bytes; the registry keeps its descriptor (Allocation::fd)
// until the allocation is released.
#include "mlu_runtime/ipc.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "capture.h"
#include "device_memory.h"
#include "device_state.h"
#include "error_state.h"
#include "fork_state.h"
#include "host_trap_state.h"
#include "queue_impl.h"

namespace mlu {
using namespace detail;
namespace {

mluError_t map_file(int fd, size_t bytes, void** ptr) {
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    return fail(mluErrorMemoryAllocation, "cannot map " + mib(bytes) + " of shared device memory: " +
                                              std::strerror(errno));
  }
  *ptr = mapped;
  return mluSuccess;
}

// Note [Host-access trap]: shared memory would be a second, untrapped way in.
mluError_t refuse_with_trap(const char* call) {
  return fail(mluErrorNotSupported, std::string(call) + ": device memory cannot be shared between processes while "
                                    "TORCH_MLU_TRAP_HOST_ACCESS=1 traps host access to it");
}

}  // namespace

void detail::unmap_shared_block(const Allocation& a) {
  munmap(reinterpret_cast<void*>(a.base), round_up(a.size));
  close(a.fd);
}

mluError_t detail::fail_opened_mapping(const void* ptr) {
  return fail(mluErrorInvalidDevicePointer, describe(ptr) + " maps another process's memory (mluIpcOpenMemHandle); "
                                            "release it with mluIpcCloseMemHandle");
}

mluError_t mluMallocShareable(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(mluErrorInvalidValue, "ptr must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  *ptr = nullptr;
  int device = current_device();
  if (mluError_t status = check_device(device)) return status;
  if (size == 0) return mluSuccess;
  if (mluError_t s = refuse_unsafe_call("mluMallocShareable (an interprocess allocation)")) return s;
  if (trap_enabled()) return refuse_with_trap("mluMallocShareable");
  if (mluError_t status = reserve_device_memory(device, size)) return status;
  const size_t bytes = round_up(size);
  int fd = memfd_create("mlu-shareable", MFD_CLOEXEC);
  mluError_t status = mluSuccess;
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    status = fail(mluErrorMemoryAllocation, "the host could not back " + mib(size) +
                                                " of shareable device memory: " + std::strerror(errno));
  } else {
    status = map_file(fd, bytes, ptr);
  }
  if (status != mluSuccess) {
    if (fd >= 0) close(fd);
    device_state(device)->release_memory(bytes);
    return status;
  }
  register_allocation({reinterpret_cast<uintptr_t>(*ptr), size, device, Backing::kShareable, fd});
  note_runtime_started();
  return mluSuccess;
}

mluError_t mluIpcGetMemHandle(mluIpcMemHandle_t* handle, void* ptr) {
  if (handle == nullptr) return fail(mluErrorInvalidValue, "handle must not be null");
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device < 0 || found->base != reinterpret_cast<uintptr_t>(ptr) ||
      (found->backing != Backing::kShareable && found->backing != Backing::kOpened)) {
    return fail(mluErrorInvalidValue,
                describe(ptr) + " does not start a shareable allocation (from mluMallocShareable or "
                                "mluIpcOpenMemHandle)");
  }
  *handle = {found->fd, found->size};
  return mluSuccess;
}

mluError_t mluIpcOpenMemHandle(void** ptr, mluIpcMemHandle_t handle) {
  if (trap_enabled()) return refuse_with_trap("mluIpcOpenMemHandle");
  if (ptr == nullptr) return fail(mluErrorInvalidValue, "ptr must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  *ptr = nullptr;
  int device = current_device();
  if (mluError_t status = check_device(device)) return status;
  if (handle.size == 0) return fail(mluErrorInvalidValue, "an IPC handle of size 0 names no memory");
  const size_t bytes = round_up(handle.size);
  struct stat info {};
  if (fstat(handle.fd, &info) != 0 || static_cast<size_t>(info.st_size) < bytes) {
    return fail(mluErrorInvalidValue, "the IPC handle's descriptor " + std::to_string(handle.fd) +
                                          " is not a shareable allocation of " + mib(handle.size));
  }
  int fd = fcntl(handle.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return fail(mluErrorInvalidValue, std::string("cannot duplicate the IPC handle: ") + std::strerror(errno));
  if (mluError_t status = map_file(fd, bytes, ptr)) {
    close(fd);
    return status;
  }
  register_allocation({reinterpret_cast<uintptr_t>(*ptr), handle.size, device, Backing::kOpened, fd});
  note_runtime_started();
  return mluSuccess;
}

mluError_t mluIpcCloseMemHandle(void* ptr) {
  if (in_forked_child()) return fail_in_forked_child();
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->base != reinterpret_cast<uintptr_t>(ptr) || found->backing != Backing::kOpened) {
    return fail(mluErrorInvalidDevicePointer, describe(ptr) + " is not a mapping from mluIpcOpenMemHandle");
  }
  if (on_device_thread()) {
    return fail(mluErrorInvalidValue, "a device task cannot use the synchronizing mluIpcCloseMemHandle");
  }
  if (mluError_t s = refuse_unsafe_call("mluIpcCloseMemHandle (a synchronizing unmap)")) return s;
  device_state(found->device)->wait_idle();
  std::optional<Allocation> removed = unregister_allocation(ptr);
  if (!removed) return fail(mluErrorInvalidDevicePointer, describe(ptr) + " was closed concurrently");
  release_device_block(*removed);
  return mluSuccess;
}

}  // namespace mlu
