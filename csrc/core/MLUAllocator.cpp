#include "csrc/core/MLUAllocator.h"

#include <mutex>
#include <vector>

#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include <c10/util/Logging.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {
namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingAllocator::StatType;

constexpr size_t kAggregate = static_cast<size_t>(StatType::AGGREGATE);

struct Block {
  void* ptr;
  size_t size;
  c10::DeviceIndex device;
  MLUStream stream;                   // allocation stream, see Note [Stream-ordered frees]
  std::vector<MLUStream> used_on;     // from recordStream
};

class MLUDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    c10::DeviceIndex device = current_device();
    c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (size == 0) return c10::DataPtr(nullptr, nullptr, &delete_block, where);
    void* ptr = nullptr;
    mlu::mluError_t status = mlu::mluMalloc(&ptr, size);
    if (status == mlu::mluErrorMemoryAllocation) {
      // Frees still queued may make room: wait for them, then try once more.
      device_synchronize(device);
      status = mlu::mluMalloc(&ptr, size);
    }
    if (status == mlu::mluErrorMemoryAllocation) count_oom(device);
    MLU_CHECK(status);
    auto* block = new Block{ptr, size, device, getCurrentMLUStream(device), {}};
    update_stats(device, static_cast<int64_t>(size));
    return c10::DataPtr(ptr, block, &delete_block, where);
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    MLU_CHECK(mlu::mluMemcpyAsync(dest, src, count, mlu::mluMemcpyDeviceToDevice, getCurrentMLUStream().queue()));
  }

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}  // nothing is cached

  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    auto* block = static_cast<Block*>(data.get_context());
    if (block == nullptr) return;
    MLUStream mlu_stream(stream);
    if (mlu_stream == block->stream) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const MLUStream& s : block->used_on) {
      if (s == mlu_stream) return;
    }
    block->used_on.push_back(mlu_stream);
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_for(device);
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& s = stats_for(device);
    for_each_stat(s, [](c10::CachingAllocator::Stat& stat) { stat.reset_accumulated(); });
    s.num_alloc_retries = 0;
    s.num_ooms = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for_each_stat(stats_for(device), [](c10::CachingAllocator::Stat& stat) { stat.reset_peak(); });
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    c10::DeviceIndex previous = exchange_device(device);
    size_t free = 0, total = 0;
    mlu::mluError_t status = mlu::mluMemGetInfo(&free, &total);
    exchange_device(previous);
    MLU_CHECK(status);
    return {free, total};
  }

 private:
  static void delete_block(void* context) {
    auto* block = static_cast<Block*>(context);
    if (block == nullptr) return;
    instance().update_stats(block->device, -static_cast<int64_t>(block->size));
    try {
      for (const MLUStream& other : block->used_on) stream_wait_stream(block->stream, other);
    } catch (const c10::Error& e) {
      LOG(WARNING) << "torch_mlu: ordering a free after its recorded streams failed: " << e.what_without_backtrace();
    }
    mlu::mluError_t status = mlu::mluFreeAsync(block->ptr, block->stream.queue());
    if (status != mlu::mluSuccess) {
      LOG(WARNING) << "torch_mlu: freeing device memory failed: " << mlu::mluGetLastErrorDetail();
    }
    delete block;
  }

  template <class F>
  static void for_each_stat(DeviceStats& s, F fn) {
    for (auto* array : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes, &s.reserved_bytes,
                        &s.active_bytes, &s.requested_bytes}) {
      for (auto& stat : *array) fn(stat);
    }
  }

  DeviceStats& stats_for(c10::DeviceIndex device) {
    if (stats_.size() <= static_cast<size_t>(device)) stats_.resize(device + 1);
    return stats_[device];
  }

  void update_stats(c10::DeviceIndex device, int64_t delta) {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& s = stats_for(device);
    for (auto* array : {&s.allocation, &s.segment, &s.active}) {
      if (delta > 0) (*array)[kAggregate].increase(1); else (*array)[kAggregate].decrease(1);
    }
    for (auto* array : {&s.allocated_bytes, &s.reserved_bytes, &s.active_bytes, &s.requested_bytes}) {
      if (delta > 0) (*array)[kAggregate].increase(delta); else (*array)[kAggregate].decrease(-delta);
    }
  }

  void count_oom(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_for(device).num_ooms += 1;
  }

  static MLUDeviceAllocator& instance();

  std::mutex mutex_;
  std::vector<DeviceStats> stats_;
};

MLUDeviceAllocator g_allocator;
MLUDeviceAllocator& MLUDeviceAllocator::instance() { return g_allocator; }

}  // namespace

c10::DeviceAllocator* getMLUDeviceAllocator() { return &g_allocator; }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace torch_mlu
