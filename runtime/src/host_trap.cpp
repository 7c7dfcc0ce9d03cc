// Note [Host-access trap] (mlu_runtime/host_trap.h): the two mappings, the
// allocator of the window, and the report of a trapped access.
//
// The window is one reservation of twice the devices' capacity (address space
// only, MAP_NORESERVE): the lower half PROT_NONE, the upper half read-write,
// so the device mapping of any trapped address is a constant distance away.
// Allocations are page-aligned ranges of the halves, first fit; a freed range
// gives its pages back (MADV_DONTNEED).
#include "host_trap_state.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "config.h"
#include "mlu_runtime/host_trap.h"

namespace mlu::detail {

TrapWindow g_trap_window;

namespace {

constexpr size_t kPage = 4096;
constexpr int kFrames = 24;
constexpr size_t kWindowPerCapacity = 8;

struct Block {
  size_t size;
  int device;
  int frames;
  void* stack[kFrames];
};

struct Arena {
  std::mutex mu;
  uintptr_t base = 0;  // the trapped half; the device half follows it
  size_t size = 0;     // bytes in each half
  std::map<uintptr_t, size_t> free;  // offset -> bytes, disjoint, coalesced
  std::map<uintptr_t, Block> live;   // offset -> allocation
};

Arena& arena() {
  static auto* instance = new Arena();  // never destroyed: device threads may free at exit
  return *instance;
}

struct sigaction g_previous_action;

void write_text(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

// Reports an access to trapped memory, then lets the fault take its course.
void on_fault(int signal, siginfo_t* info, void* context) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  Arena& a = arena();
  if (address - a.base < a.size) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "\n[torch_mlu] host code touched device memory at %p (TORCH_MLU_TRAP_HOST_ACCESS=1): device memory "
                  "is reached only through copies (tensor.cpu(), torch.mlu copies) and device kernels.\n",
                  info->si_addr);
    write_text(line);
    // The lock may be held by the faulting thread itself: never wait for it.
    if (a.mu.try_lock()) {
      const uintptr_t offset = address - a.base;
      auto it = a.live.upper_bound(offset);
      if (it != a.live.begin() && offset < std::prev(it)->first + std::prev(it)->second.size) {
        --it;
        std::snprintf(line, sizeof line,
                      "[torch_mlu] it is %zu bytes into an allocation of %zu bytes at %p on mlu:%d, allocated at:\n",
                      size_t(offset - it->first), it->second.size, reinterpret_cast<void*>(a.base + it->first),
                      it->second.device);
        write_text(line);
        backtrace_symbols_fd(it->second.stack, it->second.frames, STDERR_FILENO);
      } else {
        write_text("[torch_mlu] it is in no live allocation (freed memory, or past an allocation's end).\n");
      }
      a.mu.unlock();
    }
    write_text("[torch_mlu] the access was made at:\n");
    void* here[kFrames];
    backtrace_symbols_fd(here, backtrace(here, kFrames), STDERR_FILENO);
  }
  // Either way the previous handler (Python's faulthandler, or the default: the
  // process ends) takes the fault when the instruction runs again.
  sigaction(signal, &g_previous_action, nullptr);
  (void)context;
}

// Reserves the window and installs the handler, once.
bool ensure_window() {
  Arena& a = arena();
  if (a.base != 0) return true;
  const MachineConfig& config = machine_config();
  // Address space only: room for every device's memory, and for reservations
  // (virtual_memory.h: an expandable segment reserves a device's capacity).
  size_t size = config.memory_per_device * std::max<size_t>(config.visible.size(), 1) * kWindowPerCapacity;
  size = (size + kPage - 1) / kPage * kPage;
  void* memory = mmap(nullptr, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return false;
  const uintptr_t base = reinterpret_cast<uintptr_t>(memory);
  if (mprotect(reinterpret_cast<void*>(base + size), size, PROT_READ | PROT_WRITE) != 0) {
    munmap(memory, 2 * size);
    return false;
  }
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the signal handler
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_previous_action);
  a.base = base;
  a.size = size;
  a.free[0] = size;
  g_trap_window.delta.store(size, std::memory_order_relaxed);
  g_trap_window.size.store(size, std::memory_order_relaxed);
  g_trap_window.base.store(base, std::memory_order_release);
  return true;
}

}  // namespace

bool trap_enabled() { return machine_config().trap_host_access; }

void* trap_allocate(size_t bytes, int device) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (!ensure_window()) return nullptr;
  const size_t need = (bytes + kPage - 1) / kPage * kPage;
  for (auto it = a.free.begin(); it != a.free.end(); ++it) {
    if (it->second < need) continue;
    const uintptr_t offset = it->first;
    const size_t left = it->second - need;
    a.free.erase(it);
    if (left > 0) a.free[offset + need] = left;
    Block& block = a.live[offset];
    block.size = need;
    block.device = device;
    block.frames = backtrace(block.stack, kFrames);
    return reinterpret_cast<void*>(a.base + offset);
  }
  return nullptr;
}

void trap_release(void* ptr) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  uintptr_t offset = reinterpret_cast<uintptr_t>(ptr) - a.base;
  auto live = a.live.find(offset);
  if (live == a.live.end()) return;
  size_t size = live->second.size;
  a.live.erase(live);
  madvise(reinterpret_cast<void*>(a.base + a.size + offset), size, MADV_DONTNEED);
  // Coalesce with the free neighbours.
  auto next = a.free.lower_bound(offset);
  if (next != a.free.end() && offset + size == next->first) {
    size += next->second;
    next = a.free.erase(next);
  }
  if (next != a.free.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += size;
      return;
    }
  }
  a.free[offset] = size;
}

}  // namespace mlu::detail

namespace mlu {
bool mluHostAccessTrapped() { return detail::trap_enabled(); }
}  // namespace mlu
