// Settings of the mlu caching allocator, from PYTORCH_MLU_ALLOC_CONF (or, when
// that is unset, PYTORCH_CUDA_ALLOC_CONF), read once on first use.
//
// Syntax as CUDA's: comma-separated key:value pairs.
//   max_split_size_mb:N             blocks above N MiB are never split (N > 20)
//   garbage_collection_threshold:F  0 < F < 1: reclaim cached blocks when the
//                                   reserved memory passes F of the allowed memory
//   roundup_power2_divisions:N      round requests to N divisions per power of two
//   expandable_segments:True|False  only False is supported (True is rejected)
// An unknown key or a malformed value is an error naming the key.
// PYTORCH_NO_MLU_MEMORY_CACHING=1 (or PYTORCH_NO_CUDA_MEMORY_CACHING=1)
// turns caching off: every block is returned to the device when freed.
#pragma once

#include <cstddef>
#include <string>

namespace torch_mlu {

struct MLUAllocatorConfig {
  size_t max_split_size = SIZE_MAX;   // bytes
  double garbage_collection_threshold = 0.0;
  size_t roundup_power2_divisions = 0;
  bool caching_disabled = false;

  // Parses `text` (the variable named `source`); throws c10::Error on bad input.
  static MLUAllocatorConfig parse(const std::string& text, const char* source);
  // The process-wide settings (environment read on first call).
  static const MLUAllocatorConfig& get();
};

}  // namespace torch_mlu
