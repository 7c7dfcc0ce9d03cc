#include "csrc/core/MLUAllocatorConfig.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

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

const char* env_either(const char* mlu_name, const char* cuda_name, const char** used) {
  const char* value = std::getenv(mlu_name);
  *used = mlu_name;
  if (value == nullptr) {
    value = std::getenv(cuda_name);
    *used = cuda_name;
  }
  return value;
}

}  // namespace

MLUAllocatorConfig MLUAllocatorConfig::parse(const std::string& text, const char* source) {
  MLUAllocatorConfig config;
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
      TORCH_CHECK(value == "True" || value == "False", source, ": expandable_segments expects True or False, got '",
                  value, "'");
      TORCH_CHECK_NOT_IMPLEMENTED(value == "False", source,
                                  ": expandable_segments:True is not supported on mlu yet; remove it, or use "
                                  "max_split_size_mb to limit fragmentation");
    } else if (key == "backend") {
      TORCH_CHECK(value == "native", source, ": backend ", value, " is not available on mlu (only 'native')");
    } else {
      TORCH_CHECK(false, source, ": unknown setting '", key, "'. Known settings: max_split_size_mb, "
                  "garbage_collection_threshold, roundup_power2_divisions, expandable_segments, backend");
    }
  }
  return config;
}

const MLUAllocatorConfig& MLUAllocatorConfig::get() {
  static const MLUAllocatorConfig config = [] {
    const char* source = nullptr;
    const char* text = env_either("PYTORCH_MLU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", &source);
    MLUAllocatorConfig parsed = text != nullptr ? parse(text, source) : MLUAllocatorConfig{};
    const char* no_caching = env_either("PYTORCH_NO_MLU_MEMORY_CACHING", "PYTORCH_NO_CUDA_MEMORY_CACHING", &source);
    parsed.caching_disabled = no_caching != nullptr && std::strcmp(no_caching, "1") == 0;
    return parsed;
  }();
  return config;
}

}  // namespace torch_mlu
