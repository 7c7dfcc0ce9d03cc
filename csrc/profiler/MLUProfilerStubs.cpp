// The legacy profiler's device hooks (torch.autograd.profiler.profile(
// use_device="mlu"), which runs PyTorch's KINETO_PRIVATEUSE1_FALLBACK state):
// an op's device time is the time between two timing events recorded on the
// current stream at its start and end; ranges and marks go to the activity
// tracer's annotations (Note [Activity tracing] in mlu_runtime/tracer.h).
#include <memory>

#include <mlu_runtime/device.h>
#include <mlu_runtime/event.h>
#include <mlu_runtime/tracer.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

mlu::mluEvent_t as_event(const ProfilerVoidEventStub* stub) { return static_cast<mlu::mluEvent_t>(stub->get()); }

struct MLUProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    if (device != nullptr) *device = current_device();
    mlu::mluEvent_t created = nullptr;
    MLU_CHECK(mlu::mluEventCreate(&created));
    *event = std::shared_ptr<void>(created, [](void* e) { mlu::mluEventDestroy(static_cast<mlu::mluEvent_t>(e)); });
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    MLU_CHECK(mlu::mluEventRecord(created, getCurrentMLUStream().queue()));
  }

  float elapsed(const ProfilerVoidEventStub* start, const ProfilerVoidEventStub* end) const override {
    MLU_CHECK(mlu::mluEventSynchronize(as_event(start)));
    MLU_CHECK(mlu::mluEventSynchronize(as_event(end)));
    float ms = 0;
    MLU_CHECK(mlu::mluEventElapsedTime(&ms, as_event(start), as_event(end)));
    return ms * 1000.0f;  // PyTorch wants microseconds
  }

  void mark(const char* name) const override { MLU_CHECK(mlu::mluTracerMark(getCurrentMLUStream().queue(), name)); }
  void rangePush(const char* name) const override { mlu::mluTracerRangePush(name); }
  void rangePop() const override { mlu::mluTracerRangePop(); }
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = current_device();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      set_device(d);
      op(d);
    }
    set_device(previous);
  }

  void synchronize() const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) device_synchronize(d);
  }
};

struct RegisterStubs {
  RegisterStubs() {
    static MLUProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_stubs;

}  // namespace
}  // namespace torch_mlu
