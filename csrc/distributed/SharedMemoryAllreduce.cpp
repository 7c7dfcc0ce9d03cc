#include "csrc/distributed/SharedMemoryAllreduce.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <ATen/Dispatch.h>
#include <c10/util/Exception.h>

#include "csrc/distributed/CNCLConfig.h"

namespace torch_mlu::distributed {

struct alignas(64) SharedMemoryAllreduce::RankState {
  std::atomic<uint32_t> arrived, reduced, done;  // the last chunk epoch of each step, written by this rank only
  std::atomic<int32_t> pid;                      // 0 until the rank has mapped the segment
};

namespace {

using RedOp = c10d::ReduceOp::RedOpType;
constexpr size_t kPage = 4096;
// Data budget of a segment (two buffers of one slot per rank), and a slot's bounds.
constexpr size_t kSegmentDataBytes = 32u << 20;
constexpr size_t kMinSlotBytes = 256u << 10, kMaxSlotBytes = 8u << 20;
constexpr int kSpins = 2000;  // busy polls before a wait sleeps on the futex
constexpr auto kSleepSlice = std::chrono::milliseconds(20);

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "the futex waits on the counter's own word");

bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, std::chrono::milliseconds limit) {
  timespec ts{static_cast<time_t>(limit.count() / 1000), static_cast<long>(limit.count() % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string link_target(const char* path) {
  char buffer[256];
  const ssize_t n = readlink(path, buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// What ranks must share to reach each other's shared memory and pids (Note
// [cncl shared-memory all-reduce]); empty where any part is unknown.
std::string host_identity() {
  struct stat shm {};
  const std::string boot = read_first_line("/proc/sys/kernel/random/boot_id");
  const std::string net = link_target("/proc/self/ns/net");
  const std::string pids = link_target("/proc/self/ns/pid");
  if (boot.empty() || net.empty() || pids.empty() || stat("/dev/shm", &shm) != 0) return {};
  std::ostringstream id;
  id << boot << '|' << net << '|' << pids << '|' << shm.st_dev << ':' << shm.st_ino;
  return id.str();
}

// Gone, or a zombie nobody has reaped yet.
bool process_exited(int32_t pid) {
  if (pid <= 0) return false;  // not mapped yet
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::string stat = read_first_line(("/proc/" + std::to_string(pid) + "/stat").c_str());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && (stat[paren + 2] == 'Z' || stat[paren + 2] == 'X');
}

std::string get_string(c10d::Store& store, const std::string& key) {
  const std::vector<uint8_t> value = store.get(key);
  return std::string(value.begin(), value.end());
}

std::string segment_name() {
  static std::atomic<uint64_t> count{0};
  std::ostringstream name;
  name << "/torch_mlu_cncl_" << getpid() << '_' << count++ << '_' << std::hex << std::random_device{}();
  return name.str();
}

// Note [Reductions on the transfer's own thread]
// The slices are combined by plain loops on the communication task's thread,
// not by ATen's operators: those split large tensors over ATen's OpenMP
// threads, which then compete with the rank's compute threads for the cores
// (DDP on ResNet-18, 2 ranks on 2 cores: 20% slower steps). The compiler
// vectorizes the loops. Sums and products of half types accumulate every
// rank's value in float and round once (Gloo rounds after each rank), so the
// result does not depend on the order of the ranks.
template <class T, class Combine>
void combine_each(std::byte* out, const std::byte* in, int64_t n, Combine combine) {
  auto* o = reinterpret_cast<T*>(out);
  const auto* i = reinterpret_cast<const T*>(in);
  for (int64_t k = 0; k < n; ++k) o[k] = static_cast<T>(combine(o[k], i[k]));
}

// SUM or PRODUCT of half types: out = round(in[0] (+|*) in[1] ...), in float.
template <class T>
void combine_in_float(RedOp op, std::byte* out, const std::vector<const std::byte*>& ins, int64_t n) {
  constexpr int64_t kBlock = 1024;
  float acc[kBlock];
  auto* o = reinterpret_cast<T*>(out);
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    const auto* first = reinterpret_cast<const T*>(ins[0]) + start;
    for (int64_t k = 0; k < len; ++k) acc[k] = static_cast<float>(first[k]);
    for (size_t r = 1; r < ins.size(); ++r) {
      const auto* in = reinterpret_cast<const T*>(ins[r]) + start;
      if (op == RedOp::SUM) {
        for (int64_t k = 0; k < len; ++k) acc[k] += static_cast<float>(in[k]);
      } else {
        for (int64_t k = 0; k < len; ++k) acc[k] *= static_cast<float>(in[k]);
      }
    }
    for (int64_t k = 0; k < len; ++k) o[start + k] = static_cast<T>(acc[k]);
  }
}

template <class T>
void combine(RedOp op, std::byte* out, const std::byte* in, int64_t n) {
  switch (op) {
    case RedOp::SUM:
      return combine_each<T>(out, in, n, [](T a, T b) { return a + b; });
    case RedOp::PRODUCT:
      return combine_each<T>(out, in, n, [](T a, T b) { return a * b; });
    case RedOp::MIN:  // NaN wins, as torch.minimum
      return combine_each<T>(out, in, n, [](T a, T b) { return (a < b || a != a) ? a : b; });
    case RedOp::MAX:
      return combine_each<T>(out, in, n, [](T a, T b) { return (a > b || a != a) ? a : b; });
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case RedOp::BAND:
        return combine_each<T>(out, in, n, [](T a, T b) { return a & b; });
      case RedOp::BOR:
        return combine_each<T>(out, in, n, [](T a, T b) { return a | b; });
      case RedOp::BXOR:
        return combine_each<T>(out, in, n, [](T a, T b) { return a ^ b; });
      default:
        break;
    }
  }
  TORCH_INTERNAL_ASSERT(false, "SharedMemoryAllreduce: unsupported reduce op ", static_cast<int>(op));
}

}  // namespace

bool SharedMemoryAllreduce::supports(c10::ScalarType dtype, RedOp op) {
  const bool floating = dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16;
  const bool integral = dtype == at::kChar || dtype == at::kByte || dtype == at::kInt || dtype == at::kLong;
  switch (op) {
    case RedOp::SUM:
    case RedOp::PRODUCT:
    case RedOp::MIN:
    case RedOp::MAX:
      return floating || integral;
    case RedOp::BAND:
    case RedOp::BOR:
    case RedOp::BXOR:
      return integral;
    default:
      return false;
  }
}

std::shared_ptr<SharedMemoryAllreduce> SharedMemoryAllreduce::connect(c10d::Store& store, int rank, int size) {
  if (size < 2) return nullptr;
  // Every rank publishes, disabled or not, so no rank waits for a key that never comes.
  std::string identity = cncl_config().shm_disable ? std::string() : host_identity();
  if (identity.empty()) identity = "none:" + std::to_string(rank);
  store.set("cncl_shm/host/" + std::to_string(rank), identity);
  for (int r = 0; r < size; ++r) {
    if (get_string(store, "cncl_shm/host/" + std::to_string(r)) != identity) return nullptr;
  }

  const size_t header = header_bytes(size);
  const size_t slot_bytes =
      std::clamp(kSegmentDataBytes / (2 * static_cast<size_t>(size)) / kPage * kPage, kMinSlotBytes, kMaxSlotBytes);
  const size_t bytes = header + 2 * static_cast<size_t>(size) * slot_bytes;
  std::string name;
  int fd = -1;
  if (rank == 0) {
    name = segment_name();
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    // Reserved now: tmpfs would otherwise fail a first touch past its size with SIGBUS.
    if (fd >= 0 && posix_fallocate(fd, 0, static_cast<off_t>(bytes)) != 0) {
      close(fd);
      shm_unlink(name.c_str());
      fd = -1;
    }
    store.set("cncl_shm/name", fd >= 0 ? name : std::string());
  } else {
    name = get_string(store, "cncl_shm/name");
    if (!name.empty()) fd = shm_open(name.c_str(), O_RDWR, 0600);
  }
  void* base = MAP_FAILED;
  if (fd >= 0) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  store.set("cncl_shm/mapped/" + std::to_string(rank), std::string(base != MAP_FAILED ? "1" : "0"));
  bool everyone = true;
  for (int r = 0; r < size; ++r) everyone &= get_string(store, "cncl_shm/mapped/" + std::to_string(r)) == "1";
  if (rank == 0 && !name.empty()) shm_unlink(name.c_str());  // every rank has opened it, or given up
  if (!everyone) {
    if (base != MAP_FAILED) munmap(base, bytes);
    return nullptr;
  }
  std::shared_ptr<SharedMemoryAllreduce> transport(new SharedMemoryAllreduce(rank, size, base, bytes, slot_bytes));
  transport->state(rank).pid.store(getpid(), std::memory_order_release);
  return transport;
}

SharedMemoryAllreduce::SharedMemoryAllreduce(int rank, int size, void* base, size_t bytes, size_t slot_bytes)
    : rank_(rank), size_(size), base_(base), bytes_(bytes), slot_bytes_(slot_bytes) {}

SharedMemoryAllreduce::~SharedMemoryAllreduce() { munmap(base_, bytes_); }

// The rank states, rounded up to whole pages; the slots follow.
size_t SharedMemoryAllreduce::header_bytes(int size) { return (size * sizeof(RankState) + kPage - 1) / kPage * kPage; }

SharedMemoryAllreduce::RankState& SharedMemoryAllreduce::state(int rank) const {
  return static_cast<RankState*>(base_)[rank];
}

std::byte* SharedMemoryAllreduce::slot(uint32_t epoch, int rank) const {
  const size_t index = static_cast<size_t>(epoch % 2) * size_ + rank;
  return static_cast<std::byte*>(base_) + header_bytes(size_) + index * slot_bytes_;
}

void SharedMemoryAllreduce::publish(std::atomic<uint32_t> RankState::*counter, uint32_t value) const {
  auto& word = state(rank_).*counter;
  word.store(value, std::memory_order_release);
  futex_wake_all(word);
}

void SharedMemoryAllreduce::wait_all(std::atomic<uint32_t> RankState::*counter, uint32_t target, const char* step,
                                     std::chrono::steady_clock::time_point deadline) const {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    auto& word = state(r).*counter;
    for (int spin = 0; spin < kSpins; ++spin) {
      if (reached(word.load(std::memory_order_acquire), target)) break;
      __builtin_ia32_pause();
    }
    uint32_t seen;
    while (!reached(seen = word.load(std::memory_order_acquire), target)) {
      futex_wait(word, seen, kSleepSlice);
      if (reached(word.load(std::memory_order_acquire), target)) break;
      const int32_t pid = state(r).pid.load(std::memory_order_acquire);
      if (aborted_) throw std::runtime_error("the group was aborted during a shared-memory all_reduce");
      if (process_exited(pid)) {
        throw std::runtime_error(
            c10::str("rank ", r, " (pid ", pid, ") exited during a shared-memory all_reduce (", step, ")"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error(
            c10::str("timed out waiting for rank ", r, " in a shared-memory all_reduce (", step, ")"));
      }
    }
  }
}

void SharedMemoryAllreduce::reduce_slice(uint32_t epoch, size_t offset, size_t bytes, c10::ScalarType dtype,
                                         RedOp op) const {
  if (bytes == 0) return;
  const int64_t numel = static_cast<int64_t>(bytes / c10::elementSize(dtype));
  // Into this rank's own slot, which is read first: its slice, then the peers' in rank order.
  std::byte* out = slot(epoch, rank_) + offset;
  if ((dtype == at::kHalf || dtype == at::kBFloat16) && (op == RedOp::SUM || op == RedOp::PRODUCT)) {
    std::vector<const std::byte*> ins{out};
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) ins.push_back(slot(epoch, r) + offset);
    }
    return dtype == at::kHalf ? combine_in_float<at::Half>(op, out, ins, numel)
                              : combine_in_float<at::BFloat16>(op, out, ins, numel);
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "cncl shared-memory all_reduce",
                               [&] { combine<scalar_t>(op, out, slot(epoch, r) + offset, numel); });
  }
}

void SharedMemoryAllreduce::allreduce(const at::Tensor& host, RedOp op, std::chrono::milliseconds wait_limit) {
  TORCH_INTERNAL_ASSERT(host.is_contiguous() && supports(host.scalar_type(), op));
  const size_t element = host.element_size();
  const size_t total = static_cast<size_t>(host.numel()) * element;
  const size_t chunk = slot_bytes_ / element * element;
  auto* data = static_cast<std::byte*>(host.data_ptr());
  for (size_t offset = 0; offset < total; offset += chunk) {
    const size_t length = std::min(chunk, total - offset);
    const size_t elements = length / element;
    // This rank's slice of the chunk, and where each rank's slice starts.
    auto slice_start = [&](int r) { return elements * r / size_ * element; };
    const uint32_t epoch = ++epoch_;
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    if (epoch > 2) wait_all(&RankState::done, epoch - 2, "waiting for a free buffer", deadline);
    std::memcpy(slot(epoch, rank_), data + offset, length);
    publish(&RankState::arrived, epoch);
    wait_all(&RankState::arrived, epoch, "waiting for the peers' data", deadline);
    reduce_slice(epoch, slice_start(rank_), slice_start(rank_ + 1) - slice_start(rank_), host.scalar_type(), op);
    publish(&RankState::reduced, epoch);
    wait_all(&RankState::reduced, epoch, "waiting for the reduced slices", deadline);
    for (int r = 0; r < size_; ++r) {
      std::memcpy(data + offset + slice_start(r), slot(epoch, r) + slice_start(r), slice_start(r + 1) - slice_start(r));
    }
    publish(&RankState::done, epoch);
  }
}

}  // namespace torch_mlu::distributed
