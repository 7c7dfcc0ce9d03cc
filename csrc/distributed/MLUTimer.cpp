// The DDP timer of mlu (cf. CUDATimer in torch/csrc/distributed/c10d/reducer_cuda.cpp):
// DistributedDataParallel's runtime statistics (avg_forward_compute_time, ...,
// with TORCH_DISTRIBUTED_DEBUG=DETAIL or ddp_logging_data) time device work
// with events recorded on the current stream.
#include <array>

#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include "csrc/core/MLUEvent.h"

namespace torch_mlu::distributed {
namespace {

class MLUTimer : public c10d::Timer {
 public:
  explicit MLUTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    // The host time too: DDP logs when each phase started.
    c10d::Timer::record(event);
    const auto i = static_cast<size_t>(event);
    events_[i].record(getCurrentMLUStream(device_.index()));
    recorded_[i] = true;
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    const auto s = static_cast<size_t>(start);
    const auto e = static_cast<size_t>(end);
    // Under no_sync or with unused parameters some events are never recorded.
    if (!recorded_[s] || !recorded_[e]) return std::nullopt;
    events_[s].synchronize();
    events_[e].synchronize();
    const float milliseconds = events_[s].elapsed_time(events_[e]);
    if (milliseconds < 0) return std::nullopt;  // recorded out of order, as CUDATimer reports it
    return static_cast<int64_t>(milliseconds * 1e6);
  }

 private:
  c10::Device device_;
  std::array<MLUEvent, 5> events_{MLUEvent(true), MLUEvent(true), MLUEvent(true), MLUEvent(true), MLUEvent(true)};
  std::array<bool, 5> recorded_{};
};

}  // namespace
}  // namespace torch_mlu::distributed

namespace c10d {
// The registry's registerer lives in c10d, where the macro must expand.
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, torch_mlu::distributed::MLUTimer)
}  // namespace c10d
