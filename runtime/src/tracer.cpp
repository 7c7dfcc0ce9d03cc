#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <utility>

#include "device_state.h"
#include "error_state.h"
#include "mlu_runtime/tracer.h"
#include "queue_impl.h"
#include "tracer_state.h"

namespace mlu::detail {

std::atomic<bool> g_tracing{false};

namespace {

struct Recorded {
  std::mutex mu;
  std::vector<mluActivity> activities;
  std::vector<mluAnnotation> annotations;
  uint64_t next_annotation = 1;
};

Recorded& recorded() {
  static auto* state = new Recorded();  // never destroyed: device threads may record during exit
  return *state;
}

struct ThreadTags {
  std::vector<uint64_t> correlations;
  std::vector<uint64_t> ranges;  // annotation ids; 0 for a range pushed while not tracing
};

ThreadTags& thread_tags() {
  thread_local ThreadTags tags;
  return tags;
}

uint64_t new_annotation(const char* name, int64_t push_ns, int64_t pop_ns) {
  Recorded& r = recorded();
  std::lock_guard<std::mutex> lock(r.mu);
  const uint64_t id = r.next_annotation++;
  r.annotations.push_back({id, name != nullptr ? name : "", push_ns, pop_ns});
  return id;
}

}  // namespace

int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int32_t system_thread_id() {
  thread_local const int32_t tid = static_cast<int32_t>(::syscall(SYS_gettid));
  return tid;
}

void tag_launch(TaskSlot& slot) {
  slot.traced = true;
  slot.launch_ns = trace_now_ns();
  slot.launch_tid = system_thread_id();
  const ThreadTags& tags = thread_tags();
  slot.correlation = tags.correlations.empty() ? 0 : tags.correlations.back();
  if (slot.kind != TaskKind::Marker) slot.annotation = tags.ranges.empty() ? 0 : tags.ranges.back();
}

void record_activity(const TaskSlot& slot, mluQueue_t queue, int device, int64_t start_ns, int64_t end_ns) {
  const mluActivityKind kind = slot.kind == TaskKind::Memcpy ? mluActivityKind::Memcpy : mluActivityKind::Kernel;
  Recorded& r = recorded();
  std::lock_guard<std::mutex> lock(r.mu);
  r.activities.push_back({kind, task_name(slot), device, queue, start_ns, end_ns, slot.correlation, slot.annotation,
                          slot.launch_ns, slot.launch_tid});
}

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

mluError_t mluTracerStart() {
  Recorded& r = recorded();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.activities.clear();
    r.annotations.clear();
  }
  g_tracing.store(true);
  return mluSuccess;
}

mluError_t mluTracerStop() {
  if (on_device_thread()) return fail(mluErrorInvalidValue, "tracing cannot be stopped from a device thread");
  // Work launched while tracing records itself when it runs: wait for it, so
  // that what is collected next is complete. Device errors stay pending for
  // the program's next synchronizing call.
  for (int d = 0; d < visible_device_count(); ++d) device_state(d)->wait_idle();
  g_tracing.store(false);
  return mluSuccess;
}

bool mluTracerEnabled() { return tracing(); }

mluError_t mluTracerCollect(std::vector<mluActivity>* activities, std::vector<mluAnnotation>* annotations) {
  if (activities == nullptr || annotations == nullptr) return fail(mluErrorInvalidValue, "outputs must not be null");
  Recorded& r = recorded();
  std::lock_guard<std::mutex> lock(r.mu);
  activities->insert(activities->end(), r.activities.begin(), r.activities.end());
  annotations->insert(annotations->end(), r.annotations.begin(), r.annotations.end());
  r.activities.clear();
  r.annotations.clear();
  return mluSuccess;
}

void mluTracerPushCorrelation(uint64_t id) { thread_tags().correlations.push_back(id); }

void mluTracerPopCorrelation() {
  ThreadTags& tags = thread_tags();
  if (!tags.correlations.empty()) tags.correlations.pop_back();
}

int mluTracerRangePush(const char* name) {
  ThreadTags& tags = thread_tags();
  const int depth = static_cast<int>(tags.ranges.size());
  tags.ranges.push_back(tracing() ? new_annotation(name, trace_now_ns(), -1) : 0);
  return depth;
}

int mluTracerRangePop() {
  ThreadTags& tags = thread_tags();
  if (tags.ranges.empty()) return -1;
  const uint64_t id = tags.ranges.back();
  tags.ranges.pop_back();
  if (id != 0) {
    const int64_t now = trace_now_ns();
    Recorded& r = recorded();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto it = r.annotations.rbegin(); it != r.annotations.rend(); ++it) {
      if (it->id == id) {
        it->pop_ns = now;
        break;
      }
    }
  }
  return static_cast<int>(tags.ranges.size());
}

mluError_t mluTracerMark(mluQueue_t queue, const char* name) {
  if (!tracing()) return mluSuccess;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  const int64_t now = trace_now_ns();
  const uint64_t id = new_annotation(name, now, now);
  uint64_t unused = 0;
  return launch_task(q, "mark", TaskKind::Marker, [q, id, now] {
    const int64_t at = trace_now_ns();
    Recorded& r = recorded();
    std::lock_guard<std::mutex> lock(r.mu);
    r.activities.push_back({mluActivityKind::Marker, "mark", q->device, q, at, at, 0, id, now, 0});
  }, &unused);
}

}  // namespace mlu
