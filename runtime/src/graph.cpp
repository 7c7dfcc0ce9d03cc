// Stream capture and graphs. See Note [Stream capture] in graph.h and the
// locking rules in capture.h.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capture.h"
#include "error_state.h"
#include "fork_state.h"
#include "mlu_runtime/graph.h"
#include "queue_impl.h"

namespace mlu {

// Never freed (like events): a stale handle is detected by its magic.
struct mluGraph_st {
  static constexpr uint32_t kLive = 0x4d4c5547;  // "MLUG"
  std::atomic<uint32_t> magic{kLive};
  std::mutex mu;
  std::shared_ptr<detail::GraphBody> body;  // null once destroyed
};

}  // namespace mlu

namespace mlu::detail {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<Capture>> active;  // captures not yet ended
  uint64_t next_id = 0;
};

Registry& registry() {
  static auto* instance = new Registry();  // device threads may outlive static destructors
  return *instance;
}

// Captures begun and not ended, for the lock-free fast paths below.
std::atomic<int> active_captures{0};
// Captures this thread began and has not ended: a hint that lets launches
// skip the registry (a capture ended by another thread leaves it too high,
// which costs only a registry look-up).
thread_local int thread_captures = 0;

void invalidate(Capture& capture, const std::string& why) {
  if (capture.invalid.empty()) capture.invalid = why;
}

const char* mode_name(mluQueueCaptureMode mode) {
  switch (mode) {
    case mluQueueCaptureModeGlobal: return "global";
    case mluQueueCaptureModeThreadLocal: return "thread_local";
    case mluQueueCaptureModeRelaxed: return "relaxed";
  }
  return "unknown";
}

mluError_t refused(const std::string& what) {
  return fail(mluErrorStreamCaptureUnsupported,
              what + " is not permitted while a queue is capturing a graph; the capture is invalidated (end it, "
                     "then do this outside the capture)");
}

// Whether every task of every member precedes the end of the capture through
// waits that lead to the origin (Note [Stream capture]); else names a member
// that was not joined back.
bool all_joined(Capture& capture, std::string* unjoined) {
  for (Capture::Member& m : capture.members) m.covered = m.queue == capture.origin ? UINT64_MAX : 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Capture::Wait& w : capture.waits) {
      Capture::Member* waiter = capture.member(w.waiter);
      Capture::Member* source = capture.member(w.source);
      if (waiter->covered >= w.waiter_op && source->covered < w.source_op) {
        source->covered = w.source_op;
        changed = true;
      }
    }
  }
  for (const Capture::Member& m : capture.members) {
    if (m.covered < m.last_task_op) {
      *unjoined = "a queue that joined the capture launched work the origin queue never waited for: record an "
                  "event on that queue after its last work and make the capturing queue wait for it before "
                  "ending the capture";
      return false;
    }
  }
  return true;
}

}  // namespace

GraphBody::~GraphBody() {
  for (TaskSlot& slot : tasks) slot.destroy(slot.storage);
}

Capture::Member* Capture::member(mluQueue_st* queue) {
  for (Member& m : members) {
    if (m.queue == queue) return &m;
  }
  return nullptr;
}

mluError_t capture_reserve(mluQueue_st* q, TaskSlot** slot) {
  Capture& capture = *q->capture;
  std::unique_lock<std::mutex> lock(capture.mu);
  if (!capture.invalid.empty()) {
    return fail(mluErrorStreamCaptureInvalidated,
                "the capture this queue belongs to was invalidated earlier: " + capture.invalid);
  }
  *slot = &capture.graph->tasks.emplace_back();
  lock.release();  // until capture_commit
  return mluSuccess;
}

void capture_commit(mluQueue_st* q) {
  Capture& capture = *q->capture;
  Capture::Member* m = capture.member(q);
  m->last_task_op = ++m->ops;
  capture.mu.unlock();
}

mluError_t check_capturing_thread(const mluQueue_st* q) {
  if (thread_captures == 0) return mluSuccess;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const std::shared_ptr<Capture>& capture : r.active) {
    std::lock_guard<std::mutex> capture_lock(capture->mu);
    if (capture->thread != std::this_thread::get_id() || capture->ending || capture->device == q->device) continue;
    const std::string what = "launching work on device " + std::to_string(q->device) +
                             " (a tensor on another device?) while this thread captures on device " +
                             std::to_string(capture->device);
    invalidate(*capture, what);
    return refused(what);
  }
  return mluSuccess;
}

mluError_t refuse_if_capturing(mluQueue_st* q, const char* what) {
  if (active_captures.load(std::memory_order_acquire) == 0) return mluSuccess;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!q->capture) return mluSuccess;
  std::lock_guard<std::mutex> capture_lock(q->capture->mu);
  invalidate(*q->capture, what);
  return refused(what);
}

mluError_t refuse_if_device_captures(int device, const char* what) {
  if (active_captures.load(std::memory_order_acquire) == 0) return mluSuccess;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  bool any = false;
  for (const std::shared_ptr<Capture>& capture : r.active) {
    std::lock_guard<std::mutex> capture_lock(capture->mu);
    if (capture->device != device || capture->ending) continue;
    invalidate(*capture, what);
    any = true;
  }
  return any ? refused(what) : mluSuccess;
}

mluError_t refuse_unsafe_call(const char* what) {
  if (active_captures.load(std::memory_order_acquire) == 0) return mluSuccess;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const char* mode = nullptr;
  for (const std::shared_ptr<Capture>& capture : r.active) {
    std::lock_guard<std::mutex> capture_lock(capture->mu);
    const bool prohibits = capture->mode == mluQueueCaptureModeGlobal ||
        (capture->mode == mluQueueCaptureModeThreadLocal && capture->thread == std::this_thread::get_id());
    if (!prohibits || capture->ending) continue;
    invalidate(*capture, what);
    mode = mode_name(capture->mode);
  }
  if (mode == nullptr) return mluSuccess;
  return fail(mluErrorStreamCaptureUnsupported,
              std::string(what) + " may synchronize the device and is not permitted while a queue captures in " +
                  mode + " mode (capture mode relaxed permits it); the capture is invalidated");
}

bool capture_event_record(mluQueue_st* q, CapturedRecord* record) {
  if (active_captures.load(std::memory_order_acquire) == 0) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!q->capture) return false;
  std::lock_guard<std::mutex> capture_lock(q->capture->mu);
  *record = CapturedRecord{q->capture, q, ++q->capture->member(q)->ops};
  return true;
}

std::shared_ptr<Capture> live_capture(const CapturedRecord& record) {
  std::shared_ptr<Capture> capture = record.capture.lock();
  if (!capture) return nullptr;
  std::lock_guard<std::mutex> lock(capture->mu);
  return capture->ending ? nullptr : capture;
}

mluError_t capture_wait(mluQueue_st* q, const std::shared_ptr<Capture>& capture, const CapturedRecord& record) {
  std::lock_guard<std::mutex> launch(q->launch_mu);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::lock_guard<std::mutex> capture_lock(capture->mu);
  if (capture->ending) return mluSuccess;  // ended meanwhile: the record counts as never made
  if (!capture->invalid.empty()) {
    return fail(mluErrorStreamCaptureInvalidated,
                "the capture this event was recorded in was invalidated earlier: " + capture->invalid);
  }
  if (q->capture && q->capture != capture) {
    const std::string what = "a queue capturing one graph waiting for an event recorded in another capture";
    invalidate(*capture, what);
    return refused(what);
  }
  if (!q->capture) {
    if (q->device != capture->device) {
      const std::string what = "a queue of device " + std::to_string(q->device) +
                               " joining a capture on device " + std::to_string(capture->device);
      invalidate(*capture, what);
      return refused(what);
    }
    q->capture = capture;
    capture->members.push_back(Capture::Member{q});
  }
  Capture::Member* m = capture->member(q);
  capture->waits.push_back(Capture::Wait{q, ++m->ops, record.queue, record.op});
  return mluSuccess;
}

bool is_capturing(mluQueue_st* q) {
  if (active_captures.load(std::memory_order_acquire) == 0) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return q->capture != nullptr;
}

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

namespace {

mluError_t check_graph(mluGraph_t graph, std::shared_ptr<GraphBody>* body) {
  if (in_forked_child()) return fail_in_forked_child();
  if (graph == nullptr || graph->magic.load(std::memory_order_acquire) != mluGraph_st::kLive) {
    return fail(mluErrorInvalidResourceHandle, "the graph handle was destroyed or is not a graph");
  }
  std::lock_guard<std::mutex> lock(graph->mu);
  *body = graph->body;
  return mluSuccess;
}

mluGraph_t new_graph_handle(std::shared_ptr<GraphBody> body) {
  static std::mutex mu;
  static auto* all = new std::vector<mluGraph_st*>();  // keeps never-freed handles reachable for leak checkers
  auto* graph = new mluGraph_st();
  graph->body = std::move(body);
  std::lock_guard<std::mutex> lock(mu);
  all->push_back(graph);
  return graph;
}

}  // namespace

mluError_t mluQueueBeginCapture(mluQueue_t queue, mluQueueCaptureMode mode) {
  if (mode != mluQueueCaptureModeGlobal && mode != mluQueueCaptureModeThreadLocal &&
      mode != mluQueueCaptureModeRelaxed) {
    return fail(mluErrorInvalidValue, "unknown capture mode");
  }
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (q->is_default) {
    return fail(mluErrorStreamCaptureUnsupported,
                "a default queue cannot capture (other work synchronizes with it): capture on a queue from "
                "mluQueueCreate");
  }
  std::lock_guard<std::mutex> launch(q->launch_mu);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (q->capture) return fail(mluErrorStreamCaptureUnsupported, "the queue is already capturing");
  auto capture = std::make_shared<Capture>();
  capture->id = ++r.next_id;
  capture->device = q->device;
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->origin = q;
  capture->graph = std::make_unique<GraphBody>(q->device);
  capture->members.push_back(Capture::Member{q});
  q->capture = capture;
  r.active.push_back(std::move(capture));
  active_captures.fetch_add(1, std::memory_order_acq_rel);
  thread_captures += 1;
  return mluSuccess;
}

mluError_t mluQueueEndCapture(mluQueue_t queue, mluGraph_t* graph) {
  if (graph == nullptr) return fail(mluErrorInvalidValue, "graph must not be null");
  *graph = nullptr;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  Registry& r = registry();
  std::shared_ptr<Capture> capture;
  std::vector<mluQueue_st*> members;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!q->capture) return fail(mluErrorInvalidValue, "the queue is not capturing");
    capture = q->capture;
    std::lock_guard<std::mutex> capture_lock(capture->mu);
    if (capture->origin != q) {
      return fail(mluErrorStreamCaptureUnsupported,
                  "a capture must end on the queue that began it, not on a queue that joined it");
    }
    if (capture->mode != mluQueueCaptureModeRelaxed && capture->thread != std::this_thread::get_id()) {
      return fail(mluErrorStreamCaptureWrongThread,
                  std::string("a capture in ") + mode_name(capture->mode) +
                      " mode must end on the thread that began it");
    }
    capture->ending = true;
    for (const Capture::Member& m : capture->members) members.push_back(m.queue);
  }
  for (mluQueue_st* member : members) {
    std::lock_guard<std::mutex> launch(member->launch_mu);
    std::lock_guard<std::mutex> lock(r.mu);
    member->capture.reset();
  }
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.active.erase(std::remove(r.active.begin(), r.active.end(), capture), r.active.end());
  }
  active_captures.fetch_sub(1, std::memory_order_acq_rel);
  if (capture->thread == std::this_thread::get_id() && thread_captures > 0) thread_captures -= 1;
  std::lock_guard<std::mutex> capture_lock(capture->mu);
  if (!capture->invalid.empty()) {
    return fail(mluErrorStreamCaptureInvalidated, "the capture was invalidated: " + capture->invalid);
  }
  std::string unjoined;
  if (!all_joined(*capture, &unjoined)) return fail(mluErrorStreamCaptureUnjoined, unjoined);
  *graph = new_graph_handle(std::shared_ptr<GraphBody>(std::move(capture->graph)));
  return mluSuccess;
}

mluError_t mluQueueGetCaptureInfo(mluQueue_t queue, mluQueueCaptureStatus* status_out, uint64_t* id) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  mluQueueCaptureStatus s = mluQueueCaptureStatusNone;
  uint64_t capture_id = 0;
  Registry& r = registry();
  // No capture anywhere (the common case: random ops and the allocator ask on every call): no lock.
  std::unique_lock<std::mutex> lock(r.mu, std::defer_lock);
  if (active_captures.load(std::memory_order_acquire) != 0) lock.lock();
  if (lock.owns_lock() && q->capture) {
    std::lock_guard<std::mutex> capture_lock(q->capture->mu);
    s = q->capture->invalid.empty() ? mluQueueCaptureStatusActive : mluQueueCaptureStatusInvalidated;
    capture_id = q->capture->id;
  }
  if (status_out != nullptr) *status_out = s;
  if (id != nullptr) *id = capture_id;
  return mluSuccess;
}

mluError_t mluQueueRefuseInCapture(mluQueue_t queue, const char* what) {
  if (what == nullptr) return fail(mluErrorInvalidValue, "what must not be null");
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  return refuse_if_capturing(q, what);
}

mluError_t mluQueueGetCaptureArguments(mluQueue_t queue, const void** arguments) {
  if (arguments == nullptr) return fail(mluErrorInvalidValue, "arguments must not be null");
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!q->capture) return fail(mluErrorInvalidValue, "the queue is not capturing");
  std::lock_guard<std::mutex> capture_lock(q->capture->mu);
  *arguments = q->capture->graph->arguments;
  return mluSuccess;
}

mluError_t mluGraphLaunch(mluGraph_t graph, mluQueue_t queue) {
  return mluGraphLaunchWithArguments(graph, queue, nullptr, 0);
}

mluError_t mluGraphLaunchWithArguments(mluGraph_t graph, mluQueue_t queue, const void* arguments, size_t bytes) {
  if (bytes > kGraphArgumentBytes || (bytes > 0 && arguments == nullptr)) {
    return fail(mluErrorInvalidValue, "graph arguments must be at most " + std::to_string(kGraphArgumentBytes) +
                                          " bytes and not null");
  }
  struct Arguments {
    unsigned char bytes[kGraphArgumentBytes];
    size_t size;
  } copied{};
  if (bytes > 0) std::memcpy(copied.bytes, arguments, bytes);
  copied.size = bytes;
  std::shared_ptr<GraphBody> body;
  if (mluError_t status = check_graph(graph, &body)) return status;
  if (!body) return fail(mluErrorInvalidResourceHandle, "the graph was destroyed");
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (q->device != body->device) {
    return fail(mluErrorInvalidValue, "a graph captured on device " + std::to_string(body->device) +
                                          " cannot be launched on a queue of device " + std::to_string(q->device));
  }
  return mluLaunchTask(q, "graph replay", [body = std::move(body), copied](TaskContext& context) {
    std::lock_guard<std::mutex> lock(body->replay_mu);
    if (copied.size > 0) std::memcpy(body->arguments, copied.bytes, copied.size);
    std::string first_failure;
    for (TaskSlot& slot : body->tasks) {
      TaskContext task(context.device());
      // Note [Fault injection]: a recorded kernel is decided at each replay.
      run_or_inject(slot, task, faults_active() ? fault_for_task(slot.kind, slot.name) : nullptr);
      if (task.failed() && first_failure.empty()) first_failure = std::string(task_name(slot)) + ": " + task.message();
    }
    if (!first_failure.empty()) context.fail(std::move(first_failure));
  });
}

mluError_t mluGraphDestroy(mluGraph_t graph) {
  std::shared_ptr<GraphBody> body;
  if (mluError_t status = check_graph(graph, &body)) return status;
  uint32_t expected = mluGraph_st::kLive;
  if (!graph->magic.compare_exchange_strong(expected, 0)) {
    return fail(mluErrorInvalidResourceHandle, "the graph handle was already destroyed");
  }
  std::lock_guard<std::mutex> lock(graph->mu);
  graph->body.reset();  // replays in flight hold their own reference
  return mluSuccess;
}

mluError_t mluGraphGetTaskCount(mluGraph_t graph, size_t* count) {
  if (count == nullptr) return fail(mluErrorInvalidValue, "count must not be null");
  std::shared_ptr<GraphBody> body;
  if (mluError_t status = check_graph(graph, &body)) return status;
  *count = body->tasks.size();
  return mluSuccess;
}

mluError_t mluGraphDebugDotPrint(mluGraph_t graph, const char* path) {
  if (path == nullptr) return fail(mluErrorInvalidValue, "path must not be null");
  std::shared_ptr<GraphBody> body;
  if (mluError_t status = check_graph(graph, &body)) return status;
  std::ofstream out(path);
  if (!out) return fail(mluErrorInvalidValue, std::string("cannot write ") + path);
  out << "digraph mlu_graph {\n  label=\"device " << body->device << ", " << body->tasks.size()
      << " tasks, replayed in order\";\n";
  size_t i = 0;
  for (const TaskSlot& slot : body->tasks) {
    std::string name = task_name(slot);
    std::replace(name.begin(), name.end(), '"', '\'');
    out << "  t" << i << " [shape=box, label=\"" << i << ": " << name << "\"];\n";
    if (i > 0) out << "  t" << i - 1 << " -> t" << i << ";\n";
    ++i;
  }
  out << "}\n";
  return out ? mluSuccess : fail(mluErrorInvalidValue, std::string("cannot write ") + path);
}

}  // namespace mlu
