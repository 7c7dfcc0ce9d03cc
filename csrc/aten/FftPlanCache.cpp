#include "csrc/aten/FftPlanCache.h"

#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <c10/util/Exception.h>
#include <mlu_kernels/fft.h>

#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using PlanPtr = std::shared_ptr<const k::FftPlan>;

// Every field of the spec that shapes the descriptor, and the split.
std::string key_of(const k::FftSpec& s, int max_parts) {
  std::vector<int64_t> fields = {static_cast<int64_t>(s.real_type), static_cast<int64_t>(s.kind), s.forward,
                                 s.signal_ndim, s.batch, s.in_distance, s.out_distance, max_parts};
  for (int d = 0; d < s.signal_ndim; ++d) {
    fields.insert(fields.end(), {s.sizes[d], s.in_strides[d], s.out_strides[d]});
  }
  std::string key(reinterpret_cast<const char*>(fields.data()), fields.size() * sizeof(int64_t));
  key.append(reinterpret_cast<const char*>(&s.scale), sizeof(s.scale));
  return key;
}

// The layout a refused plan asked for, for the error message.
std::string describe(const k::FftSpec& s) {
  auto list = [&](const int64_t* v) {
    std::string out = "[";
    for (int d = 0; d < s.signal_ndim; ++d) out += (d ? ", " : "") + std::to_string(v[d]);
    return out + "]";
  };
  static const char* kinds[] = {"c2c", "r2c", "c2r"};
  return std::string(kinds[static_cast<int>(s.kind)]) + " of " + std::to_string(s.batch) + " signals of sizes " +
         list(s.sizes) + ", input strides " + list(s.in_strides) + " distance " + std::to_string(s.in_distance) +
         ", output strides " + list(s.out_strides) + " distance " + std::to_string(s.out_distance);
}

class PlanCache {
 public:
  PlanPtr get(const k::FftSpec& spec, int max_parts) {
    const std::string key = key_of(spec, max_parts);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);  // most recent first
        return it->second->second;
      }
    }
    std::string error;
    PlanPtr plan = k::FftPlan::create(spec, max_parts, &error);  // outside the lock: commits take a while
    TORCH_CHECK(plan, "MKL FFT error: ", error, " (mlu: ", describe(spec), ")");
    std::lock_guard<std::mutex> lock(mutex_);
    if (max_size_ == 0 || index_.count(key) != 0) return plan;
    order_.emplace_front(key, plan);
    index_.emplace(key, order_.begin());
    trim();
    return plan;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(order_.size());
  }
  int64_t max_size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return max_size_;
  }
  void set_max_size(int64_t n) {
    TORCH_CHECK(n >= 0, "cnFFT plan cache size must be non-negative, but got ", n);
    std::lock_guard<std::mutex> lock(mutex_);
    max_size_ = n;
    trim();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.clear();
    order_.clear();
  }

 private:
  void trim() {
    while (static_cast<int64_t>(order_.size()) > max_size_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

  std::mutex mutex_;
  int64_t max_size_ = kDefaultFftPlanCacheSize;
  std::list<std::pair<std::string, PlanPtr>> order_;
  std::unordered_map<std::string, std::list<std::pair<std::string, PlanPtr>>::iterator> index_;
};

PlanCache& cache(c10::DeviceIndex device) {
  check_device_index(device);
  static std::deque<PlanCache> caches(static_cast<size_t>(device_count()));
  return caches[static_cast<size_t>(device)];
}

}  // namespace

PlanPtr fft_plan(c10::DeviceIndex device, const k::FftSpec& spec, int max_parts) {
  return cache(device).get(spec, max_parts);
}

int64_t fft_plan_cache_size(c10::DeviceIndex device) { return cache(device).size(); }
int64_t fft_plan_cache_max_size(c10::DeviceIndex device) { return cache(device).max_size(); }
void set_fft_plan_cache_max_size(c10::DeviceIndex device, int64_t max_size) { cache(device).set_max_size(max_size); }
void clear_fft_plan_cache(c10::DeviceIndex device) { cache(device).clear(); }

}  // namespace torch_mlu
