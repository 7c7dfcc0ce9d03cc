#include "config.h"
#include "fault_state.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace mlu::detail {
namespace {

constexpr int kDefaultDeviceCount = 2;
constexpr int kMaxDeviceCount = 16;
constexpr size_t kGiB = size_t{1} << 30;

// The integer value of variable `name` in [lo, hi]; `fallback` when unset or
// empty; when malformed or out of range, `fallback` and an error in `error`.
int env_int(const char* name, int fallback, int lo, int hi, std::string& error) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || value < lo || value > hi) {
    if (error.empty()) {
      error = std::string(name) + "='" + text + "' is not valid: use an integer from " + std::to_string(lo) +
              " to " + std::to_string(hi);
    }
    return fallback;
  }
  return static_cast<int>(value);
}

size_t default_device_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  size_t host = (pages > 0 && page_size > 0) ? size_t(pages) * size_t(page_size) : 16 * kGiB;
  return std::min(16 * kGiB, host / 4);
}

}  // namespace

MachineConfig read_config() {
  MachineConfig config;
  config.physical_count =
      env_int("TORCH_MLU_DEVICE_COUNT", kDefaultDeviceCount, 0, kMaxDeviceCount, config.error);
  const char* visible = std::getenv("MLU_VISIBLE_DEVICES");
  if (visible == nullptr) visible = std::getenv("CN_VISIBLE_DEVICES");
  if (visible != nullptr) {
    config.visible = parse_visible_devices(visible, config.physical_count);
  } else {
    for (int i = 0; i < config.physical_count; ++i) config.visible.push_back(i);
  }
  config.memory_per_device = default_device_memory();
  const char* memory = std::getenv("TORCH_MLU_DEVICE_MEMORY");
  if (memory != nullptr && *memory != '\0') {
    const size_t parsed = parse_byte_size(memory);
    if (parsed != 0) {
      config.memory_per_device = parsed;
    } else if (config.error.empty()) {
      config.error = std::string("TORCH_MLU_DEVICE_MEMORY='") + memory +
                     "' is not valid: use a positive byte count with an optional K, M, G or T suffix "
                     "(powers of 1024, an optional trailing B), e.g. 8G or 512M";
    }
  }
  config.cores_per_device = read_cores_per_device(config.error);
  const char* trap = std::getenv("TORCH_MLU_TRAP_HOST_ACCESS");
  if (trap != nullptr && *trap != '\0') {
    config.trap_host_access = std::strcmp(trap, "1") == 0;
    if (!config.trap_host_access && std::strcmp(trap, "0") != 0 && config.error.empty()) {
      config.error = std::string("TORCH_MLU_TRAP_HOST_ACCESS='") + trap + "' is not valid: use 1 or 0";
    }
  }
  const char* faults = std::getenv("TORCH_MLU_FAULT_INJECT");
  if (faults != nullptr && config.error.empty()) config.error = check_fault_spec(faults);
  return config;
}

namespace {

// Note [Ranks of one host share its cores]
// The software MLU computes on the host's cores, and all its devices share
// them. One process driving every device gets all of them per device (its
// devices' kernels rarely run at once). A job of one process per device, as
// torchrun starts them, would otherwise run ranks x cores compute threads on
// the cores, each rank's regions waiting for threads descheduled by another's:
// DDP on 2 ranks of a 2-core host steps 0-15% faster with one core each
// (benchmarks/bench_ddp_overlap.py, docs/distributed.md). So where torchrun's
// LOCAL_WORLD_SIZE says how many ranks share the host, each device gets an
// equal share of the CPUs this process may run on (at least one), as
// torchrun's OMP_NUM_THREADS default does for ATen's threads.
// TORCH_MLU_DEVICE_CORES overrides it.
int default_cores_per_device() {
  cpu_set_t allowed;
  int host_threads = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
  if (host_threads <= 0) host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string ignored;  // a malformed LOCAL_WORLD_SIZE is torchrun's to report
  return std::max(1, host_threads / env_int("LOCAL_WORLD_SIZE", 1, 1, 1 << 20, ignored));
}

}  // namespace

int read_cores_per_device(std::string& error) {
  return env_int("TORCH_MLU_DEVICE_CORES", default_cores_per_device(), 1, 1024, error);
}

const MachineConfig& machine_config() {
  static const MachineConfig config = read_config();
  return config;
}

size_t parse_byte_size(const char* text) {
  // strtoull alone would accept " 8G", "+8G" and "-1" (as 2^64 - 1).
  if (!std::isdigit(static_cast<unsigned char>(*text))) return 0;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (errno == ERANGE) return 0;
  size_t scale = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0': break;
    case 'K': scale = size_t{1} << 10; ++end; break;
    case 'M': scale = size_t{1} << 20; ++end; break;
    case 'G': scale = size_t{1} << 30; ++end; break;
    case 'T': scale = size_t{1} << 40; ++end; break;
    default: return 0;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return 0;
  if (value > SIZE_MAX / scale) return 0;  // would wrap around
  return static_cast<size_t>(value) * scale;
}

std::vector<int> parse_visible_devices(const char* text, int physical_count) {
  std::vector<int> visible;
  std::string list(text);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    long ordinal = std::strtol(item.c_str(), &end, 10);
    bool valid = !item.empty() && *end == '\0' && ordinal >= 0 && ordinal < physical_count &&
                 std::find(visible.begin(), visible.end(), int(ordinal)) == visible.end();
    if (!valid) break;  // CUDA semantics: the list ends at the first bad entry
    visible.push_back(static_cast<int>(ordinal));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return visible;
}

}  // namespace mlu::detail
