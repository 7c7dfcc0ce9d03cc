// Events. See Note [Event versioning] in event.h.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "capture.h"
#include "error_state.h"
#include "fork_state.h"
#include "mlu_runtime/event.h"
#include "queue_impl.h"

namespace mlu {

// Never freed: see mluEventDestroy.
struct mluEvent_st {
  static constexpr uint32_t kLive = 0x4d4c5545;  // "MLUE"
  std::atomic<uint32_t> magic{kLive};
  unsigned flags = 0;
  std::mutex mu;
  // The current record; replaced as a whole by each mluEventRecord.
  mluQueue_st* queue = nullptr;
  uint64_t seq = 0;
  std::shared_ptr<std::atomic<int64_t>> stamp_ns;  // timing events only; -1 until reached
  detail::CapturedRecord captured;  // a record made inside a capture (then queue is null)

  bool timing() const { return (flags & mluEventDisableTiming) == 0; }
};

using namespace detail;
namespace {

struct Record {
  mluQueue_st* queue;
  uint64_t seq;
  std::shared_ptr<std::atomic<int64_t>> stamp_ns;
  CapturedRecord captured;
};

mluError_t snapshot(mluEvent_t event, Record* record) {
  if (in_forked_child()) return fail_in_forked_child();
  if (event == nullptr || event->magic.load(std::memory_order_acquire) != mluEvent_st::kLive) {
    return fail(mluErrorInvalidResourceHandle, "the event handle was destroyed or is not an event");
  }
  std::lock_guard<std::mutex> lock(event->mu);
  *record = Record{event->queue, event->seq, event->stamp_ns, event->captured};
  return mluSuccess;
}

// Every event ever created, so that they stay reachable (they are never
// freed, see mluEventDestroy; a leak checker would report them otherwise).
void remember(mluEvent_st* event) {
  static std::mutex mu;
  static auto* all = new std::vector<mluEvent_st*>();
  std::lock_guard<std::mutex> lock(mu);
  all->push_back(event);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

mluError_t mluEventCreateWithFlags(mluEvent_t* event, unsigned flags) {
  if (event == nullptr) return fail(mluErrorInvalidValue, "event must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  if ((flags & ~unsigned(mluEventBlockingSync | mluEventDisableTiming)) != 0) {
    return fail(mluErrorInvalidValue, "unknown event flags");
  }
  auto* e = new mluEvent_st();
  e->flags = flags;
  remember(e);
  *event = e;
  return mluSuccess;
}

mluError_t mluEventCreate(mluEvent_t* event) { return mluEventCreateWithFlags(event, mluEventDefault); }

mluError_t mluEventDestroy(mluEvent_t event) {
  Record record;
  if (mluError_t status = snapshot(event, &record)) return status;
  uint32_t expected = mluEvent_st::kLive;
  if (!event->magic.compare_exchange_strong(expected, 0)) {
    return fail(mluErrorInvalidResourceHandle, "the event handle was already destroyed");
  }
  // Like queues (queue_impl.h), event objects are never freed, so a stale
  // handle is detected by its magic instead of reading freed or recycled
  // memory. Only the record goes; pending waits hold their own copy of it.
  std::lock_guard<std::mutex> lock(event->mu);
  event->queue = nullptr;
  event->stamp_ns.reset();
  event->captured = CapturedRecord{};
  return mluSuccess;
}

mluError_t mluEventRecord(mluEvent_t event, mluQueue_t queue) {
  Record unused;
  if (mluError_t status = snapshot(event, &unused)) return status;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  CapturedRecord captured;
  if (capture_event_record(q, &captured)) {  // Note [Stream capture]: orders the graph, launches nothing
    std::lock_guard<std::mutex> lock(event->mu);
    event->queue = nullptr;
    event->seq = 0;
    event->stamp_ns.reset();
    event->captured = std::move(captured);
    return mluSuccess;
  }
  Record record{q, 0, nullptr, {}};
  if (event->timing()) {
    record.stamp_ns = std::make_shared<std::atomic<int64_t>>(-1);
    auto marker = [stamp = record.stamp_ns] { stamp->store(now_ns(), std::memory_order_release); };
    if (mluError_t s = launch_task(q, "event record", TaskKind::Internal, std::move(marker), &record.seq)) return s;
  } else {
    record.seq = q->last_launched();
  }
  std::lock_guard<std::mutex> lock(event->mu);
  event->queue = record.queue;
  event->seq = record.seq;
  event->stamp_ns = std::move(record.stamp_ns);
  event->captured = CapturedRecord{};
  return mluSuccess;
}

namespace {

// A record made inside a capture that is still underway cannot be waited
// for by the host; once the capture has ended it counts as never made.
mluError_t refuse_captured(const Record& record, const char* what) {
  if (record.captured.queue == nullptr) return mluSuccess;
  std::shared_ptr<Capture> capture = live_capture(record.captured);
  if (!capture) return mluSuccess;
  return refuse_if_capturing(record.captured.queue, what);
}

}  // namespace

mluError_t mluEventQuery(mluEvent_t event) {
  Record record;
  if (mluError_t status = snapshot(event, &record)) return status;
  if (mluError_t status = refuse_captured(record, "querying an event recorded in a capture")) return status;
  if (record.queue == nullptr || record.queue->has_finished(record.seq)) return mluSuccess;
  return mluErrorNotReady;
}

mluError_t mluEventSynchronize(mluEvent_t event) {
  Record record;
  if (mluError_t status = snapshot(event, &record)) return status;
  if (mluError_t status = refuse_captured(record, "synchronizing an event recorded in a capture")) return status;
  if (record.queue == nullptr) return mluSuccess;
  if (record.queue->on_own_thread() && !record.queue->has_finished(record.seq)) {
    return fail(mluErrorInvalidValue, "a task cannot wait for later work of its own queue");
  }
  record.queue->wait_for(record.seq);
  return record.queue->take_error(record.seq);
}

mluError_t mluQueueWaitEvent(mluQueue_t queue, mluEvent_t event) {
  Record record;
  if (mluError_t status = snapshot(event, &record)) return status;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (record.captured.queue != nullptr) {
    std::shared_ptr<Capture> capture = live_capture(record.captured);
    return capture ? capture_wait(q, capture, record.captured) : mluSuccess;
  }
  mluQueue_st* source = record.queue;
  // In-order queues need no wait on themselves, nor for finished work.
  if (source == nullptr || source == q || source->has_finished(record.seq)) return mluSuccess;
  if (mluError_t s = refuse_if_capturing(q, "a capturing queue waiting for unfinished work recorded outside the capture")) {
    return s;
  }
  uint64_t seq = record.seq;
  uint64_t unused = 0;
  return launch_task(q, "queue wait event", TaskKind::Internal, [source, seq] { source->wait_for(seq); }, &unused);
}

mluError_t mluEventElapsedTime(float* ms, mluEvent_t start, mluEvent_t end) {
  if (ms == nullptr) return fail(mluErrorInvalidValue, "ms must not be null");
  Record a, b;
  if (mluError_t status = snapshot(start, &a)) return status;
  if (mluError_t status = snapshot(end, &b)) return status;
  if (!start->timing() || !end->timing()) {
    return fail(mluErrorInvalidResourceHandle, "both events must be created with timing enabled");
  }
  if (a.queue == nullptr || b.queue == nullptr) {
    return fail(mluErrorInvalidResourceHandle, "both events must be recorded before measuring time");
  }
  int64_t t0 = a.stamp_ns->load(std::memory_order_acquire);
  int64_t t1 = b.stamp_ns->load(std::memory_order_acquire);
  if (t0 < 0 || t1 < 0) return fail(mluErrorNotReady, "the recorded work has not finished yet");
  *ms = static_cast<float>(double(t1 - t0) / 1e6);
  return mluSuccess;
}

}  // namespace mlu
