#include "csrc/core/MLUAllocatorConfig.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include <c10/core/AllocatorConfig.h>
#include <c10/util/Exception.h>

namespace torch_mlu {
namespace {

constexpr size_t kMiB = 1024 * 1024;
constexpr size_t kLargeBufferMiB = 20;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

template <class T>
T parse_number(const std::string& key, const std::string& value, const char* source) {
  std::istringstream in(value);
  T number{};
  in >> number;
  TORCH_CHECK(!in.fail() && in.eof(), source, ": ", key, " expects a number, got '", value, "'");
  return number;
}

// The first of `names` that is set, and which it was.
const char* env_first(std::initializer_list<const char*> names, const char** used) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) {
      *used = name;
      return value;
    }
  }
  return nullptr;
}

}  // namespace

MLUAllocatorConfig MLUAllocatorConfig::parse(const std::string& text, const char* source,
                                             const MLUAllocatorConfig& base, bool lenient) {
  MLUAllocatorConfig config = base;
  std::stringstream pairs(text);
  std::string pair;
  while (std::getline(pairs, pair, ',')) {
    if (trim(pair).empty()) continue;
    size_t colon = pair.find(':');
    TORCH_CHECK(colon != std::string::npos, source, ": expected key:value, got '", trim(pair), "'");
    std::string key = trim(pair.substr(0, colon)), value = trim(pair.substr(colon + 1));
    if (key == "max_split_size_mb") {
      auto mb = parse_number<long long>(key, value, source);
      TORCH_CHECK(mb > static_cast<long long>(kLargeBufferMiB), source, ": max_split_size_mb must be greater than ",
                  kLargeBufferMiB, ", got ", value);
      config.max_split_size = static_cast<size_t>(mb) * kMiB;
    } else if (key == "garbage_collection_threshold") {
      auto threshold = parse_number<double>(key, value, source);
      TORCH_CHECK(threshold > 0.0 && threshold < 1.0, source,
                  ": garbage_collection_threshold must be between 0 and 1 (exclusive), got ", value);
      config.garbage_collection_threshold = threshold;
    } else if (key == "roundup_power2_divisions") {
      auto divisions = parse_number<long long>(key, value, source);
      TORCH_CHECK(divisions > 0 && (divisions & (divisions - 1)) == 0, source,
                  ": roundup_power2_divisions must be a power of 2, got ", value);
      config.roundup_power2_divisions = static_cast<size_t>(divisions);
    } else if (key == "expandable_segments") {
      TORCH_CHECK(value == "True" || value == "False" || value == "true" || value == "false", source,
                  ": expandable_segments expects True or False, got '", value, "'");
      config.expandable_segments = value == "True" || value == "true";
    } else if (key == "backend") {
      TORCH_CHECK(value == "native", source, ": backend ", value, " is not available on mlu (only 'native')");
    } else if (!lenient) {
      TORCH_CHECK(false, source, ": unknown setting '", key, "'. Known settings: max_split_size_mb, "
                  "garbage_collection_threshold, roundup_power2_divisions, expandable_segments, backend");
    }
  }
  return config;
}

namespace {

// Every settings object ever current stays alive, so get()'s references do:
// they are few (one per set() call) and small.
struct Settings {
  std::mutex mu;
  std::vector<std::unique_ptr<MLUAllocatorConfig>> all;
  std::atomic<const MLUAllocatorConfig*> current{nullptr};

  Settings() {
    const char* source = nullptr;
    const char* text = env_first({"PYTORCH_MLU_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"}, &source);
    MLUAllocatorConfig parsed = text != nullptr ? MLUAllocatorConfig::parse(text, source) : MLUAllocatorConfig{};
    const char* no_caching = env_first({"PYTORCH_NO_MLU_MEMORY_CACHING", "PYTORCH_NO_CUDA_MEMORY_CACHING"}, &source);
    parsed.caching_disabled = no_caching != nullptr && std::strcmp(no_caching, "1") == 0;
    publish(parsed);
  }

  void publish(const MLUAllocatorConfig& config) {
    all.push_back(std::make_unique<MLUAllocatorConfig>(config));
    current.store(all.back().get(), std::memory_order_release);
  }
};

Settings& settings() {
  static auto* instance = new Settings();  // read by allocations during exit
  return *instance;
}

// torch._C._accelerator_setAllocatorSettings reaches the mlu allocator too.
// No keys of its own: torch's generic parser knows every key mlu reads.
c10::CachingAllocator::DeviceConfigParserHookRegistry g_generic_settings_hook(
    [](const std::string& text) { MLUAllocatorConfig::set(text, /*lenient=*/true); }, {});

}  // namespace

const MLUAllocatorConfig& MLUAllocatorConfig::get() {
  return *settings().current.load(std::memory_order_acquire);
}

void MLUAllocatorConfig::set(const std::string& text, bool lenient) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mu);
  s.publish(parse(text, "_set_allocator_settings", *s.current.load(std::memory_order_relaxed), lenient));
}

}  // namespace torch_mlu
