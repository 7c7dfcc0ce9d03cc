// Note [Monitor registry] (mlu_runtime/monitor.h): the writer hooks and the reader.
#include "mlu_runtime/monitor.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>

#include "config.h"
#include "device_state.h"
#include "error_state.h"
#include "monitor_record.h"

namespace mlu::detail {
namespace {

// ---- what both sides need ---------------------------------------------------

bool all_digits(const char* text) {
  if (*text == '\0') return false;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9') return false;
  }
  return true;
}

// Field 22 (start time in clock ticks) of /proc/<pid>/stat, and the state
// letter of field 3; 0 when unreadable.
uint64_t read_start_ticks(int pid, char* state = nullptr) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command (field 2) may contain spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  uint64_t ticks = 0;
  for (int index = 3; index <= 22 && (fields >> field); ++index) {
    if (index == 3 && state != nullptr) *state = field[0];
    if (index == 22) ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return ticks;
}

// ---- writer -----------------------------------------------------------------

struct BusyState {
  std::mutex mu;
  int active = 0;  // queues (and inline launches) with work on this physical device
};

std::mutex g_create_mu;
std::atomic<MonitorRecord*> g_record{nullptr};
std::atomic<bool> g_tried{false};  // creation was attempted (successfully or not)
BusyState g_busy[kMonitorDevices];
std::string g_record_path;
pid_t g_record_pid = 0;

void remove_record_at_exit() {
  // A forked child inherits this handler and the mapping, never the file.
  if (g_record.load() != nullptr && getpid() == g_record_pid) unlink(g_record_path.c_str());
}

// Note [Monitor registry]: a child starts without a record.
void forget_record_in_child() {
  g_record.store(nullptr);
  g_tried.store(false);
  for (BusyState& busy : g_busy) {
    new (&busy.mu) std::mutex();  // a parent's thread may have held it at the fork
    busy.active = 0;
  }
}

std::string read_command() {
  std::ifstream file("/proc/self/cmdline");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  // Arguments are NUL-separated; any control character (a newline in `python -c`) would break a table row.
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
}

MonitorRecord* create_record() {
  const char* enabled = std::getenv("TORCH_MLU_MONITOR");
  if (enabled != nullptr && std::strcmp(enabled, "0") == 0) return nullptr;
  const std::string dir = mlu::mluMonitorDirectory();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return nullptr;
  const pid_t pid = getpid();
  const std::string temporary = dir + "/." + std::to_string(pid) + ".tmp";
  const int fd = open(temporary.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  void* memory = MAP_FAILED;
  if (ftruncate(fd, sizeof(MonitorRecord)) == 0) {
    memory = mmap(nullptr, sizeof(MonitorRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (memory == MAP_FAILED) {
    unlink(temporary.c_str());
    return nullptr;
  }
  auto* record = new (memory) MonitorRecord();
  const MachineConfig& config = machine_config();
  record->device_count = static_cast<uint32_t>(config.physical_count);
  record->pid = pid;
  record->start_ticks = read_start_ticks(pid);
  std::snprintf(record->command, sizeof record->command, "%s", read_command().c_str());
  for (int physical : config.visible) record->devices[physical].capacity.store(config.memory_per_device);
  record->magic.store(kMonitorMagic, std::memory_order_release);
  const std::string path = dir + "/" + std::to_string(pid);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    unlink(temporary.c_str());
    munmap(memory, sizeof(MonitorRecord));
    return nullptr;
  }
  g_record_path = path;
  g_record_pid = pid;
  static std::once_flag registered;
  std::call_once(registered, [] {
    std::atexit(remove_record_at_exit);
    pthread_atfork(nullptr, nullptr, forget_record_in_child);
  });
  return record;
}

MonitorRecord* record_for_write() {
  MonitorRecord* record = g_record.load(std::memory_order_acquire);
  if (record != nullptr || g_tried.load(std::memory_order_acquire)) return record;
  std::lock_guard<std::mutex> lock(g_create_mu);
  if (!g_tried.load()) {
    g_record.store(create_record(), std::memory_order_release);
    g_tried.store(true, std::memory_order_release);
  }
  return g_record.load();
}

int physical_of(int device) {
  DeviceState* state = device_state(device);
  return state != nullptr ? state->props.physicalId : -1;
}

void begin_write(MonitorDeviceRecord& d) {
  d.seq.store(d.seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void end_write(MonitorDeviceRecord& d) {
  d.seq.store(d.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Adds the busy period [since, end) to the buckets it overlaps (the last ten at most).
void add_busy(MonitorDeviceRecord& d, int64_t since, int64_t end) {
  const int64_t last = end / kMonitorBucketNs;
  for (int64_t b = std::max(since / kMonitorBucketNs, last - kMonitorBuckets + 1); b <= last; ++b) {
    const int64_t lo = std::max(since, b * kMonitorBucketNs);
    const int64_t hi = std::min(end, (b + 1) * kMonitorBucketNs);
    if (hi <= lo) continue;
    const int slot = static_cast<int>(b % kMonitorBuckets);
    uint64_t held = d.bucket_busy_ns[slot].load(std::memory_order_relaxed);
    if (d.bucket_index[slot].load(std::memory_order_relaxed) != b) {
      d.bucket_index[slot].store(b, std::memory_order_relaxed);
      held = 0;
    }
    d.bucket_busy_ns[slot].store(held + uint64_t(hi - lo), std::memory_order_relaxed);
  }
  d.busy_total_ns.store(d.busy_total_ns.load(std::memory_order_relaxed) + uint64_t(end - since),
                        std::memory_order_relaxed);
}

// ---- reader -----------------------------------------------------------------

double read_utilization(const MonitorDeviceRecord& d, int64_t now) {
  const int64_t current = now / kMonitorBucketNs;
  const int64_t first = current - kMonitorBuckets + 1;
  const int64_t window_start = first * kMonitorBucketNs;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint64_t before = d.seq.load(std::memory_order_acquire);
    if (before & 1) {
      std::this_thread::yield();
      continue;
    }
    uint64_t busy = 0;
    for (int i = 0; i < kMonitorBuckets; ++i) {
      const int64_t index = d.bucket_index[i].load(std::memory_order_relaxed);
      if (index >= first && index <= current) busy += d.bucket_busy_ns[i].load(std::memory_order_relaxed);
    }
    const int64_t since = d.busy_since_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (d.seq.load(std::memory_order_relaxed) != before) continue;
    const int64_t ongoing_from = std::max(since, window_start);
    if (since > 0 && now > ongoing_from) busy += uint64_t(now - ongoing_from);
    return std::min(1.0, double(busy) / double(now - window_start));
  }
  return 0.0;  // a writer kept the lock for the whole time (it died holding it)
}

// Whether the process that wrote `record` still runs (and is not a zombie).
bool writer_alive(const MonitorRecord& record) {
  if (kill(record.pid, 0) != 0 && errno == ESRCH) return false;
  char state = '?';
  const uint64_t ticks = read_start_ticks(record.pid, &state);
  if (ticks == 0) return true;  // no /proc: trust kill()
  return ticks == record.start_ticks && state != 'Z' && state != 'X';
}

// Calls fn(record, path) for every complete record in `dir`, mapped read-only for the call.
template <class Fn>
void for_each_record(const std::string& dir, Fn fn) {
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return;  // nothing has run yet
  while (dirent* entry = readdir(listing)) {
    if (!all_digits(entry->d_name)) continue;
    const std::string path = dir + "/" + entry->d_name;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat info {};
    void* memory = MAP_FAILED;
    if (fstat(fd, &info) == 0 && size_t(info.st_size) >= sizeof(MonitorRecord)) {
      memory = mmap(nullptr, sizeof(MonitorRecord), PROT_READ, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (memory == MAP_FAILED) continue;
    const auto& record = *static_cast<const MonitorRecord*>(memory);
    if (record.magic.load(std::memory_order_acquire) == kMonitorMagic) fn(record, path);
    munmap(memory, sizeof(MonitorRecord));
  }
  closedir(listing);
}

mluMonitorDevice describe_device(int physical, size_t capacity) {
  mluMonitorDevice device;
  device.physical_id = physical;
  device.name = kDeviceName;
  device.capacity = capacity;
  return device;
}

}  // namespace

// Note [Coarse busy clock]
// Every launch run inline (Note [Small tasks run inline]) reports the time it
// ran, so these timestamps are taken twice per tiny op: the precise clock
// costs ~20 ns a read on a virtual machine, the coarse one ~4 ns (one tick,
// 1-4 ms, of resolution). Utilization sums busy intervals over 100 ms
// buckets: an interval shorter than a tick counts a whole tick when it
// straddles one (with the probability length / tick) and nothing otherwise,
// so the sum stays right on average, and intervals of milliseconds and more
// are off by under a tick. Most inline tasks start and end within one tick:
// they add nothing and take no lock (monitor_ran_inline).
int64_t monitor_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void monitor_memory(int device, int64_t delta_bytes) {
  MonitorRecord* record = record_for_write();
  const int physical = physical_of(device);
  if (record == nullptr || physical < 0) return;
  record->devices[physical].memory_used.fetch_add(uint64_t(delta_bytes), std::memory_order_relaxed);
}

void monitor_queues(int device, int delta) {
  MonitorRecord* record = record_for_write();
  const int physical = physical_of(device);
  if (record == nullptr || physical < 0) return;
  record->devices[physical].queues.fetch_add(uint32_t(delta), std::memory_order_relaxed);
}

// This process's record of `device` and its busy state; nullptr when there is no record.
static MonitorDeviceRecord* busy_record(int device, BusyState** busy) {
  MonitorRecord* record = record_for_write();
  const int physical = physical_of(device);
  if (record == nullptr || physical < 0) return nullptr;
  *busy = &g_busy[physical];
  return &record->devices[physical];
}

void monitor_busy(int device) {
  BusyState* state = nullptr;
  MonitorDeviceRecord* record = busy_record(device, &state);
  if (record == nullptr) return;
  MonitorDeviceRecord& d = *record;
  BusyState& busy = *state;
  std::lock_guard<std::mutex> lock(busy.mu);
  d.busy_queues.store(uint32_t(++busy.active), std::memory_order_relaxed);
  if (busy.active != 1) return;
  begin_write(d);
  d.busy_since_ns.store(monitor_now_ns(), std::memory_order_relaxed);
  end_write(d);
}

void monitor_idle(int device) {
  BusyState* state = nullptr;
  MonitorDeviceRecord* record = busy_record(device, &state);
  if (record == nullptr) return;
  MonitorDeviceRecord& d = *record;
  BusyState& busy = *state;
  std::lock_guard<std::mutex> lock(busy.mu);
  if (busy.active == 0) return;  // the record was created while this queue was busy
  d.busy_queues.store(uint32_t(--busy.active), std::memory_order_relaxed);
  if (busy.active != 0) return;
  const int64_t since = d.busy_since_ns.load(std::memory_order_relaxed);
  begin_write(d);
  if (since > 0) add_busy(d, since, monitor_now_ns());
  d.busy_since_ns.store(0, std::memory_order_relaxed);
  end_write(d);
}

void monitor_ran_inline(int device, int64_t start, int64_t end) {
  if (end <= start) return;  // within one tick of the coarse clock: nothing to add
  BusyState* state = nullptr;
  MonitorDeviceRecord* record = busy_record(device, &state);
  if (record == nullptr) return;
  std::lock_guard<std::mutex> lock(state->mu);
  if (state->active != 0) return;  // a queue's busy period covers it
  begin_write(*record);
  add_busy(*record, start, end);
  end_write(*record);
}

// ---- Note [Shared device capacity] -------------------------------------------

namespace {

bool capacity_shared() {
  const char* shared = std::getenv("TORCH_MLU_SHARED_CAPACITY");
  return shared == nullptr || std::strcmp(shared, "0") != 0;
}

}  // namespace

SharedCapacityLock::SharedCapacityLock(int device) {
  MonitorRecord* record = capacity_shared() ? record_for_write() : nullptr;
  const int physical = physical_of(device);
  if (record == nullptr || physical < 0) return;
  const std::string path = mlu::mluMonitorDirectory() + "/capacity-" + std::to_string(physical) + ".lock";
  fd_ = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    unlocked_share_ = true;  // the others' use still counts, only racing reservations may overshoot
    return;
  }
  while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

SharedCapacityLock::~SharedCapacityLock() {
  if (fd_ >= 0) close(fd_);  // closing releases the flock
}

size_t monitor_others_memory(int device, bool check_alive) {
  MonitorRecord* own = capacity_shared() ? record_for_write() : nullptr;
  const int physical = physical_of(device);
  if (own == nullptr || physical < 0) return 0;
  const uint64_t capacity = own->devices[physical].capacity.load(std::memory_order_relaxed);
  size_t total = 0;
  for_each_record(mlu::mluMonitorDirectory(), [&](const MonitorRecord& record, const std::string& path) {
    if (record.pid == own->pid || physical >= std::min<int>(int(record.device_count), kMonitorDevices)) return;
    if (check_alive && !writer_alive(record)) {
      unlink(path.c_str());
    } else if (record.devices[physical].capacity.load(std::memory_order_relaxed) == capacity) {
      total += record.devices[physical].memory_used.load(std::memory_order_relaxed);
    }
  });
  return total;
}

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

std::string mluMonitorDirectory() {
  const char* configured = std::getenv("TORCH_MLU_MONITOR_DIR");
  if (configured != nullptr && *configured != '\0') return configured;
  struct stat shm{};
  const std::string base = (stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode)) ? "/dev/shm" : "/tmp";
  return base + "/torch_mlu_monitor-" + std::to_string(getuid());
}

mluError_t mluMonitorSnapshot(std::vector<mluMonitorDevice>* devices) {
  if (devices == nullptr) return fail(mluErrorInvalidValue, "devices must not be null");
  const MachineConfig& config = machine_config();
  devices->clear();
  for (int p = 0; p < config.physical_count; ++p) devices->push_back(describe_device(p, config.memory_per_device));
  std::vector<bool> capacity_from_record(kMonitorDevices, false);
  const int64_t now = monitor_now_ns();
  for_each_record(mluMonitorDirectory(), [&](const MonitorRecord& record, const std::string& path) {
    if (!writer_alive(record)) {
      unlink(path.c_str());
      return;
    }
    const int count = std::min<int>(int(record.device_count), kMonitorDevices);
    for (int p = 0; p < count; ++p) {
      const MonitorDeviceRecord& d = record.devices[p];
      mluMonitorProcess process;
      process.pid = record.pid;
      process.command.assign(record.command, strnlen(record.command, sizeof record.command));
      process.memory_used = d.memory_used.load(std::memory_order_relaxed);
      process.queues = int(d.queues.load(std::memory_order_relaxed));
      process.busy_queues = int(d.busy_queues.load(std::memory_order_relaxed));
      process.utilization = read_utilization(d, now);
      if (process.memory_used == 0 && process.queues == 0) continue;
      while (int(devices->size()) <= p) devices->push_back(describe_device(int(devices->size()), 0));
      mluMonitorDevice& device = (*devices)[p];
      // The capacity the processes using the device run with, over this process's setting.
      if (const uint64_t capacity = d.capacity.load(); capacity != 0 && !capacity_from_record[p]) {
        device.capacity = capacity;
        capacity_from_record[p] = true;
      }
      device.memory_used += process.memory_used;
      device.queues += process.queues;
      device.busy_queues += process.busy_queues;
      device.utilization = std::min(1.0, device.utilization + process.utilization);
      device.processes.push_back(std::move(process));
    }
  });
  for (mluMonitorDevice& device : *devices) {
    std::sort(device.processes.begin(), device.processes.end(),
              [](const mluMonitorProcess& a, const mluMonitorProcess& b) { return a.pid < b.pid; });
  }
  return mluSuccess;
}

}  // namespace mlu
