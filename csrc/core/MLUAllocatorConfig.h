// Settings of the mlu caching allocator, from PYTORCH_MLU_ALLOC_CONF (else
// PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF), read on first use;
// torch.mlu.memory._set_allocator_settings (and torch's device-generic
// torch._C._accelerator_setAllocatorSettings) change them later: allocations
// made afterwards follow the new settings, memory already cached is kept.
//
// Syntax as CUDA's: comma-separated key:value pairs.
//   max_split_size_mb:N             blocks above N MiB are never split (N > 20)
//   garbage_collection_threshold:F  0 < F < 1: reclaim cached blocks when the
//                                   reserved memory passes F of the allowed memory
//   roundup_power2_divisions:N      round requests to N divisions per power of two
//   expandable_segments:True|False  grow segments page by page (Note [Expandable
//                                   segments] in MLUCachingAllocator.cpp)
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
  bool expandable_segments = false;
  bool caching_disabled = false;

  // Applies `text` (the variable named `source`) over `base`; throws c10::Error
  // on bad input. `lenient` skips keys this allocator does not know (torch's
  // generic parser has vetted them).
  static MLUAllocatorConfig parse(const std::string& text, const char* source, const MLUAllocatorConfig& base,
                                  bool lenient);
  static MLUAllocatorConfig parse(const std::string& text, const char* source) {
    return parse(text, source, MLUAllocatorConfig{}, false);
  }
  // The process-wide settings (environment read on first call). The reference
  // stays valid for the life of the process, whatever set() does later.
  static const MLUAllocatorConfig& get();
  // Applies `text` over the current settings (_set_allocator_settings).
  static void set(const std::string& text, bool lenient = false);
};

}  // namespace torch_mlu
