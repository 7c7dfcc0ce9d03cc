// The Kineto activity profiler of the mlu device: device rows in torch.profiler.
//
// Note [mlu rows in Kineto]
// torch.profiler with ProfilerActivity.PrivateUse1 runs Kineto in the
// KINETO_PRIVATEUSE1 state, which hands our factory (REGISTER_PRIVATEUSE1_PROFILER)
// to Kineto as a child profiler. A session turns the runtime's activity tracer
// on and off (Note [Activity tracing] in mlu_runtime/tracer.h) and forwards
// the per-op correlation ids Kineto pushes on the op's thread; the runtime
// stores them in each task at launch, since the task runs later on its device
// thread. processTrace turns every recorded task into
//   - a device activity (CONCURRENT_KERNEL, GPU_MEMCPY; a cnpx mark is a
//     GPU_USER_ANNOTATION) on row (device, stream id), linked to the op whose
//     correlation id it carries, which gives that op its device time in
//     key_averages(), and ending a flow;
//   - a launch activity (PRIVATEUSE1_RUNTIME, "mluLaunchKernel") on the
//     launching thread's CPU row at the launch time, starting that flow: the
//     chrome trace's arrow from the op to its kernel, as cudaLaunchKernel has;
// and every cnpx range that tagged tasks into a GPU_USER_ANNOTATION per
// stream, spanning its tasks. The activities live in a CpuTraceBuffer that
// getTraceBuffer hands to Kineto, which keeps pointers to them.
// The CPU wheel links Kineto statically into libtorch_cpu and exports its
// symbols (GenericTraceActivity's vtable, libkineto::api(), the registry):
// checked with `nm -DC libtorch_cpu.so` for torch 2.13.0.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <mlu_runtime/tracer.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <libkineto.h>
#include <output_base.h>

#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {
namespace {

using libkineto::ActivityType;
using libkineto::GenericTraceActivity;

// Stream ids of queues no stream wraps (a runtime-internal queue) get rows
// numbered from here, so they never collide with a stream's.
constexpr int32_t kUnnamedQueueRows = 1 << 20;
// Device processes sort below the host's (Kineto's own convention for GPUs).
constexpr int64_t kDeviceRowsSortBase = 5000000;

class MLUActivityProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    // Once registered, Kineto runs this session for every profile, also for
    // the legacy marker-only state, whose device time comes from the event
    // stubs (MLUProfilerStubs.cpp): recording kernels too would count it twice.
    active_ = !(torch::profiler::impl::profilerEnabled() &&
                torch::profiler::impl::getProfilerConfig().state ==
                    torch::profiler::impl::ProfilerState::KINETO_PRIVATEUSE1_FALLBACK);
    if (active_) mlu::mluTracerStart();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    if (active_ && mlu::mluTracerStop() != mlu::mluSuccess) {
      errors_.push_back("mlu: the activity tracer could not be stopped (called from a device thread)");
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t window_start, int64_t window_end) override {
    std::vector<mlu::mluActivity> activities;
    std::vector<mlu::mluAnnotation> annotations;
    if (active_) mlu::mluTracerCollect(&activities, &annotations);
    std::unordered_map<uint64_t, const mlu::mluAnnotation*> annotation_by_id;
    for (const mlu::mluAnnotation& a : annotations) annotation_by_id[a.id] = &a;

    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(window_start, window_end, "mlu");
    buffer_->gpuOpCount = 0;
    // (annotation, device, row) -> the span of the tasks it tagged.
    std::map<std::tuple<uint64_t, int, int32_t>, std::pair<int64_t, int64_t>> ranges;
    for (const mlu::mluActivity& a : activities) {
      if (window_end > 0 && (a.end_ns < window_start || a.start_ns > window_end)) continue;
      const int32_t row = row_of(a.device, a.queue);
      rows_.insert({a.device, row});
      if (a.kind == mlu::mluActivityKind::Marker) {
        auto it = annotation_by_id.find(a.annotation);
        add(logger, ActivityType::GPU_USER_ANNOTATION, it != annotation_by_id.end() ? it->second->name : "mark",
            a, row, nullptr);
        continue;
      }
      const libkineto::ITraceActivity* op = a.correlation != 0 ? linked_activity(static_cast<int32_t>(a.correlation))
                                                               : nullptr;
      const bool copy = a.kind == mlu::mluActivityKind::Memcpy;
      GenericTraceActivity& device = add(logger, copy ? ActivityType::GPU_MEMCPY : ActivityType::CONCURRENT_KERNEL,
                                         a.name, a, row, op);
      buffer_->gpuOpCount += 1;
      if (a.correlation != 0) {
        // One flow per launch (an op may launch several tasks): its own id, as
        // CUPTI gives each launch its own correlation id.
        const uint32_t flow = next_flow_id_++;
        device.id = static_cast<int32_t>(flow);
        device.flow.id = flow;
        device.flow.type = libkineto::kLinkAsyncCpuGpu;
        device.flow.start = 0;
        add_launch(logger, copy ? "mluMemcpyAsync" : "mluLaunchKernel", a, op, flow);
      }
      if (a.annotation != 0) {
        auto [it, fresh] = ranges.try_emplace({a.annotation, a.device, row}, a.start_ns, a.end_ns);
        if (!fresh) {
          it->second.first = std::min(it->second.first, a.start_ns);
          it->second.second = std::max(it->second.second, a.end_ns);
        }
      }
    }
    for (const auto& [key, span] : ranges) {
      const auto& [annotation, device_index, row] = key;
      auto it = annotation_by_id.find(annotation);
      if (it == annotation_by_id.end()) continue;
      auto& act = emplace(ActivityType::GPU_USER_ANNOTATION, it->second->name);
      act.startTime = span.first;
      act.endTime = span.second;
      act.device = device_index;
      act.resource = row;
      logger.handleActivity(act);
    }
  }

  // Kineto takes one process row description per session: the lowest device
  // that ran something (other devices keep Kineto's plain rows).
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (rows_.empty()) return nullptr;
    const int device = rows_.begin()->first;
    const std::string label = "MLU " + std::to_string(device);
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{device, kDeviceRowsSortBase + device, "mlu", label});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [device, row] : rows_) {
      const std::string name = row >= kUnnamedQueueRows ? "mlu queue " + std::to_string(row - kUnnamedQueueRows)
                                                        : "stream " + std::to_string(row);
      infos.push_back({row, row, device, name});
    }
    return infos;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { mlu::mluTracerPushCorrelation(id); }
  void popCorrelationId() override { mlu::mluTracerPopCorrelation(); }

 private:
  int32_t row_of(int device, mlu::mluQueue_t queue) {
    if (auto id = stream_id_of_queue(static_cast<c10::DeviceIndex>(device), queue)) return static_cast<int32_t>(*id);
    auto [it, fresh] = unnamed_.try_emplace(queue, kUnnamedQueueRows + static_cast<int32_t>(unnamed_.size()));
    return it->second;
  }

  GenericTraceActivity& emplace(ActivityType type, const std::string& name) {
    buffer_->activities.push_back(std::make_unique<GenericTraceActivity>(buffer_->span, type, name));
    return *buffer_->activities.back();
  }

  GenericTraceActivity& add(libkineto::ActivityLogger& logger, ActivityType type, const std::string& name,
                            const mlu::mluActivity& a, int32_t row, const libkineto::ITraceActivity* op) {
    GenericTraceActivity& act = emplace(type, name);
    act.startTime = a.start_ns;
    act.endTime = a.end_ns;
    act.id = static_cast<int32_t>(a.correlation);
    act.device = a.device;
    act.resource = row;
    act.linked = op;
    act.addMetadata("device", a.device);
    act.addMetadata("stream", row);
    act.addMetadata("External id", a.correlation);
    logger.handleActivity(act);
    return act;
  }

  // The host side of a launch: a short runtime event on the launching thread
  // that starts the flow to the device activity.
  void add_launch(libkineto::ActivityLogger& logger, const char* name, const mlu::mluActivity& a,
                  const libkineto::ITraceActivity* op, uint32_t flow) {
    GenericTraceActivity& act = emplace(ActivityType::PRIVATEUSE1_RUNTIME, name);
    act.startTime = a.launch_ns;
    act.endTime = a.launch_ns + 1000;  // the launch itself is not timed; 1 us keeps it visible
    act.id = static_cast<int32_t>(flow);
    act.device = static_cast<int32_t>(libkineto::processId());
    act.resource = a.launch_tid;
    act.threadId = a.launch_tid;
    act.linked = op;
    act.flow.id = flow;
    act.flow.type = libkineto::kLinkAsyncCpuGpu;
    act.flow.start = 1;
    act.addMetadata("correlation", flow);
    act.addMetadata("External id", a.correlation);
    logger.handleActivity(act);
  }

  bool active_ = false;
  // Launch ids, far above the profiler's op correlation ids so the two never meet.
  uint32_t next_flow_id_ = 1u << 30;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::set<std::pair<int, int32_t>> rows_;
  std::unordered_map<mlu::mluQueue_t, int32_t> unnamed_;
};

class MLUActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    const bool wanted = std::any_of(activity_types.begin(), activity_types.end(),
                                    [&](ActivityType t) { return activities_.count(t) > 0; });
    if (!wanted || device_count() == 0) return nullptr;
    return std::make_unique<MLUActivityProfilerSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"mlu"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_USER_ANNOTATION, ActivityType::PRIVATEUSE1_RUNTIME};
};

}  // namespace
}  // namespace torch_mlu

using torch_mlu::MLUActivityProfiler;
REGISTER_PRIVATEUSE1_PROFILER(MLUActivityProfiler);
