// See ipc.h.
//
// Note [Shareable device memory]
// Outside the host-access trap, every device allocation is a MAP_SHARED
// mapping of an anonymous shared-memory file (memfd) of its own, and a
// reservation (virtual_memory.h) is one file of the reservation's size mapped
// inaccessible, whose granules mluMemMap opens and mluMemUnmap punches out of
// the file. The registry keeps each file's descriptor (Allocation::fd) until
// the allocation is released. So any live byte range of device memory can be
// shared where it lies: a handle names the file and the range, nothing is
// copied, and no address changes — tensors, captured graphs, DLPack aliases
// and extensions keep their pointers (cudaIpcGetMemHandle shares any
// cudaMalloc allocation in the same way). What it costs: a memfd_create and an
// ftruncate per allocation (the caching allocator asks for whole segments, so
// a few microseconds per segment) and a close at its release, one descriptor
// per live allocation, first touches of shared-memory pages, and no
// transparent huge pages unless the host enables them for shared memory
// (/sys/kernel/mm/transparent_hugepage/shmem_enabled; heap memory gets them
// only under THP "always"). The capacity accounting does not change: an
// allocation charges round_up(size) to its device, whatever backs it. When no
// file can be made (out of descriptors, say), mluMalloc falls back to heap
// memory, which works in every way but cannot be shared.
//
// Opening a range opens the file again (/proc/self/fd/N: a new open file
// description) and takes an OFD read lock on exactly that range. The lock
// belongs to that description, which the mapping itself holds, so it lasts
// exactly as long as the mapping: mluIpcCloseMemHandle, or the exit (or
// crash) of the process that opened it, releases it. mluIpcMemInUse asks the
// kernel whether any such lock covers a range (F_OFD_GETLK): the maker's
// caching allocator does so before it reuses memory it shared, and
// mluMemUnmap before it punches pages out of a reservation's file.
#include "mlu_runtime/ipc.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "capture.h"
#include "device_memory.h"
#include "device_state.h"
#include "error_state.h"
#include "fork_state.h"
#include "host_trap_state.h"
#include "queue_impl.h"
#include "reservation.h"

namespace mlu {
using namespace detail;
namespace {

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Note [Host-access trap]: shared memory would be a second, untrapped way in.
mluError_t refuse_with_trap(const char* call) {
  return fail(mluErrorNotSupported, std::string(call) + ": device memory cannot be shared between processes while "
                                    "TORCH_MLU_TRAP_HOST_ACCESS=1 traps host access to it");
}

// The same file as `fd` under a new open file description of this process
// (its locks are its own), or -1 with errno set.
int reopen(int fd) {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return open(path, O_RDWR | O_CLOEXEC);
}

}  // namespace

bool detail::map_new_shared_block(size_t bytes, int* fd, void** ptr, std::string* why) {
  int file = memfd_create("mlu-device-memory", MFD_CLOEXEC);
  if (file < 0) {
    *why = std::string("cannot make a shared-memory file: ") + std::strerror(errno);
    return false;
  }
  if (ftruncate(file, static_cast<off_t>(bytes)) != 0) {
    *why = std::string("cannot size a shared-memory file: ") + std::strerror(errno);
    close(file);
    return false;
  }
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
  if (mapped == MAP_FAILED) {
    *why = std::string("cannot map a shared-memory file: ") + std::strerror(errno);
    close(file);
    return false;
  }
  if (bytes >= (size_t{2} << 20)) (void)madvise(mapped, bytes, MADV_HUGEPAGE);  // honoured when shmem THP is "advise"
  *fd = file;
  *ptr = mapped;
  return true;
}

int detail::back_reservation(void* base, size_t bytes) {
  int file = memfd_create("mlu-device-reservation", MFD_CLOEXEC);
  if (file < 0) return -1;
  if (ftruncate(file, static_cast<off_t>(bytes)) != 0) {
    close(file);
    return -1;
  }
  if (mmap(base, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, file, 0) == MAP_FAILED) {
    // A failed MAP_FIXED may have unmapped the range: reserve it again as it was.
    (void)mmap(base, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    close(file);
    return -1;
  }
  return file;
}

bool detail::file_range_in_use(int fd, size_t offset, size_t size) {
  if (fd < 0 || size == 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;  // conflicts with every read lock an opened range holds
  probe.l_whence = SEEK_SET;
  probe.l_start = static_cast<off_t>(offset);
  probe.l_len = static_cast<off_t>(size);
  probe.l_pid = 0;
  // Cannot tell: say it is in use, which keeps memory rather than hand it out twice.
  if (fcntl(fd, F_OFD_GETLK, &probe) != 0) return true;
  return probe.l_type != F_UNLCK;
}

void detail::unmap_shared_block(const Allocation& a) {
  // An opened range is mapped from the page holding its first byte.
  const size_t lead = a.file_offset % page_size();
  munmap(reinterpret_cast<void*>(a.base - lead), lead + a.size);
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
  int fd = -1;
  std::string why;
  if (!map_new_shared_block(bytes, &fd, ptr, &why)) {
    device_state(device)->release_memory(bytes);
    return fail(mluErrorMemoryAllocation,
                "the host could not back " + mib(size) + " of shareable device memory: " + why);
  }
  register_allocation({reinterpret_cast<uintptr_t>(*ptr), size, device, Backing::kShareable, fd});
  note_runtime_started();
  return mluSuccess;
}

mluError_t mluIpcGetMemHandle(mluIpcMemHandle_t* handle, void* ptr) {
  if (handle == nullptr) return fail(mluErrorInvalidValue, "handle must not be null");
  if (trap_enabled()) return refuse_with_trap("mluIpcGetMemHandle");
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device < 0) {
    return fail(mluErrorInvalidValue, describe(ptr) + " is not device memory of this process");
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  if (found->fd < 0) {
    return fail(mluErrorInvalidValue, describe(ptr) +
                                          " is device memory without a shared-memory file (the host could "
                                          "not make one when it was allocated, say for want of file descriptors: see "
                                          "`ulimit -n`), so it cannot be shared");
  }
  if (found->reservation != nullptr && !found->reservation->is_mapped(address, address + 1)) {
    return fail(mluErrorInvalidValue, describe(ptr) + " is reserved device memory with nothing mapped there");
  }
  const size_t into = address - found->base;
  handle->fd = found->fd;
  handle->size = found->size - into;
  handle->offset = found->file_offset + into;
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
  const size_t end = handle.offset + handle.size;
  struct stat info {};
  if (end < handle.offset || fstat(handle.fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<size_t>(info.st_size) < end) {
    return fail(mluErrorInvalidValue, "the IPC handle's descriptor " + std::to_string(handle.fd) +
                                          " is not shared device memory of " + mib(handle.size) + " at offset " +
                                          std::to_string(handle.offset));
  }
  int fd = reopen(handle.fd);
  if (fd < 0) {
    return fail(mluErrorInvalidValue,
                "cannot open the IPC handle's file again through /proc/self/fd: " + std::string(std::strerror(errno)));
  }
  // See Note [Shareable device memory]: the range is in use while this description lives.
  struct flock in_use {};
  in_use.l_type = F_RDLCK;
  in_use.l_whence = SEEK_SET;
  in_use.l_start = static_cast<off_t>(handle.offset);
  in_use.l_len = static_cast<off_t>(handle.size);
  in_use.l_pid = 0;
  if (fcntl(fd, F_OFD_SETLK, &in_use) != 0) {
    const int error = errno;
    close(fd);
    return fail(mluErrorInvalidValue,
                "cannot mark the IPC handle's memory as in use (an OFD lock): " + std::string(std::strerror(error)));
  }
  const size_t lead = handle.offset % page_size();
  void* mapped = mmap(nullptr, lead + handle.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(handle.offset - lead));
  if (mapped == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return fail(mluErrorMemoryAllocation,
                "cannot map " + mib(handle.size) + " of shared device memory: " + std::strerror(error));
  }
  Allocation opened{reinterpret_cast<uintptr_t>(mapped) + lead, handle.size, device, Backing::kOpened, fd};
  opened.file_offset = handle.offset;
  register_allocation(opened);
  note_runtime_started();
  *ptr = reinterpret_cast<void*>(opened.base);
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

mluError_t mluIpcMemInUse(const void* ptr, size_t size, bool* in_use) {
  if (in_use == nullptr) return fail(mluErrorInvalidValue, "in_use must not be null");
  *in_use = false;
  if (in_forked_child()) return fail_in_forked_child();
  std::optional<Allocation> found = find_allocation(ptr);
  if (!found || found->device < 0) {
    return fail(mluErrorInvalidValue, describe(ptr) + " is not device memory of this process");
  }
  const size_t into = reinterpret_cast<uintptr_t>(ptr) - found->base;
  if (size > found->size - into) {
    return fail(mluErrorInvalidValue, "the range of " + std::to_string(size) + " bytes at " + describe(ptr) +
                                          " runs past the end of its allocation");
  }
  *in_use = file_range_in_use(found->fd, found->file_offset + into, size);
  return mluSuccess;
}

}  // namespace mlu
