// The per-device cache of committed FFT plans behind
// torch.backends.mlu.cnfft_plan_cache (cuFFT's plan cache, CuFFTPlanCache.h,
// for mlu).
//
// Invariants: one cache per device, least recently used plan evicted first,
// at most max_size() plans held (0 disables caching: every call commits its
// own plan). Plans are built on the calling (host) thread, so size() counts a
// plan as soon as the op that needs it returns. A task holds its plan by
// shared_ptr, so clear() and eviction never free a plan a queued task will
// still run. All members are thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include <c10/core/Device.h>

// The kernel library's plan types (mlu_kernels/fft.h), declared only: this
// header is also read by the Python bindings, which see no kernel headers.
namespace mlu::kernels {
struct FftSpec;
class FftPlan;
}  // namespace mlu::kernels

namespace torch_mlu {

// cuFFT's default capacity (CUFFT_DEFAULT_CACHE_SIZE).
constexpr int64_t kDefaultFftPlanCacheSize = 4096;

// The plan for `spec` split over `max_parts` compute threads on `device`,
// from the cache or committed now; raises the library's error when it
// refuses the layout.
std::shared_ptr<const mlu::kernels::FftPlan> fft_plan(c10::DeviceIndex device, const mlu::kernels::FftSpec& spec,
                                                       int max_parts);

int64_t fft_plan_cache_size(c10::DeviceIndex device);
int64_t fft_plan_cache_max_size(c10::DeviceIndex device);
// Raises for a negative size; shrinking evicts the oldest plans.
void set_fft_plan_cache_max_size(c10::DeviceIndex device, int64_t max_size);
void clear_fft_plan_cache(c10::DeviceIndex device);

}  // namespace torch_mlu
