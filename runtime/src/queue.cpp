#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "capture.h"
#include "device_state.h"
#include "error_state.h"
#include "fork_state.h"
#include "mlu_runtime/queue.h"
#include "queue_impl.h"
#include "tracer_state.h"

namespace {

// Note [Spin before sleep]
// Sleeping on a condition variable costs a futex wake-up on both sides, and
// a thread that sleeps lets its core go idle: on a virtual machine, waking
// an idle core costs tens of microseconds, more than most tasks take
// (docs/bench_linalg_fft.md, session 28). Work comes in bursts (a device
// thread finishes a task and the host is launching the next one; a host
// thread waits for a result that is nearly done), so a waiter first polls,
// yielding between polls, and only then sleeps. Yielding rather than
// spinning on `pause` gives the core to any runnable device or pool thread
// (on a machine with few cores, the one the waiter is waiting for), while
// the waiter still sees the change within microseconds. How long it polls:
// - a device thread waiting for work, kIdlePoll: an idle device must not
//   keep a core busy;
// - a thread waiting for a task to finish (a synchronize, a copy to the
//   host, an event), kResultPoll: long enough to cover a typical kernel.
constexpr auto kIdlePoll = std::chrono::microseconds(20);
constexpr auto kResultPoll = std::chrono::microseconds(1000);

// Polls `done()`, yielding in between, for at most `limit`; returns done().
template <class Done>
bool poll_until(Done done, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
  return true;
}

// Wakes the sleepers of `cv` after a change to the counter they watch (Note
// [Lock-free launches]): taking `mu` orders the wake-up after their re-check.
void notify_under(std::mutex& mu, std::condition_variable& cv) {
  { std::lock_guard<std::mutex> lock(mu); }
  cv.notify_all();
}

// The queue whose device thread is the calling thread (nullptr on host threads).
thread_local mlu::mluQueue_st* tls_worker_queue = nullptr;
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -1;
}  // namespace

namespace mlu {

uint64_t mluQueue_st::last_launched() { return launched_published.load(std::memory_order_acquire); }

bool mluQueue_st::on_own_thread() const { return tls_worker_queue == this; }

bool detail::on_device_thread() { return tls_worker_queue != nullptr; }

void mluQueue_st::wait_for(uint64_t seq) {
  if (poll_until([&] { return has_finished(seq); }, kResultPoll)) return;  // Note [Spin before sleep]
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    // Announce, then re-check (Note [Lock-free launches]). A wake-up that is
    // not ours reset wake_at: announce again.
    if (seq < wake_at.load()) wake_at.store(seq);
    if (finished.load() >= seq) return;
    done_cv.wait(lock);
  }
}

void mluQueue_st::run_worker() {
  tls_worker_queue = this;
  uint64_t done = 0;  // == finished; written here and by inline launches
  bool busy = false;  // for the monitor (Note [Monitor registry])
  for (;;) {
    uint64_t available = launched_published.load(std::memory_order_acquire);
    if (available == done) {
      if (busy) mlu::detail::monitor_idle(device);
      busy = false;
      // Note [Spin before sleep], then Note [Lock-free launches].
      poll_until([&] { return launched_published.load(std::memory_order_acquire) != done || stop.load(); },
                 kIdlePoll);
      std::unique_lock<std::mutex> lock(mu);
      worker_sleeping.store(true);
      for (;;) {
        // `stop` before the counter: a stop seen here follows every commit.
        const bool stopping = stop.load();
        available = launched_published.load();
        if (available != done) break;
        if (stopping) return;  // stopped and drained
        work_cv.wait(lock);
      }
      worker_sleeping.store(false);
    }
    // Tasks run inline by their launcher (Note [Small tasks run inline]) are
    // finished before they are published.
    done = finished.load();
    if (!busy && done < available) {
      mlu::detail::monitor_busy(device);
      busy = true;
    }
    for (; done < available; ++done) {
      mlu::detail::TaskSlot& slot = ring[done % kCapacity];
      mlu::TaskContext context(device);
      if (!abandoned.load(std::memory_order_relaxed)) {  // Note [Device threads at exit]
        const bool record = mlu::detail::records(slot);  // Note [Activity tracing]
        const int64_t start_ns = record ? mlu::detail::trace_now_ns() : 0;
        mlu::detail::run_or_inject(slot, context, slot.fault);
        if (record) mlu::detail::record_activity(slot, this, device, start_ns, mlu::detail::trace_now_ns());
      }
      slot.destroy(slot.storage);
      if (context.failed()) store_error(done + 1, mlu::detail::task_name(slot), context.message());
      finished.store(done + 1);
      if (done + 1 >= wake_at.load()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          wake_at.store(kNoWaiter);
        }
        done_cv.notify_all();
      }
      if (space_waiters.load() > 0) notify_under(mu, space_cv);
    }
  }
}

void mluQueue_st::store_error(uint64_t seq, const char* task_name, const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu);
  if (error_seq.load() != 0) return;  // the first error wins until it is taken
  error_detail = "device " + std::to_string(device) + ": " + task_name + ": " + message;
  error_seq.store(seq);
}

bool mluQueue_st::take_error_detail(uint64_t upto, std::string* detail) {
  if (error_seq.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(error_mu);
  const uint64_t seq = error_seq.load();
  if (seq == 0 || seq > upto) return false;
  detail->swap(error_detail);
  error_detail.clear();
  error_seq.store(0);
  return true;
}

mluError_t mluQueue_st::take_error(uint64_t upto) {
  std::string detail;
  if (!take_error_detail(upto, &detail)) return mluSuccess;
  return mlu::detail::fail(mluErrorLaunchFailure, std::move(detail));
}

void mluQueue_st::drain_and_stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    closing.store(true);
  }
  space_cv.notify_all();  // launchers waiting for a slot now fail
  // Once launch_mu is free, a launch that passed the closing check has
  // committed, and every later one sees `closing`: the ring holds all there
  // will ever be.
  { std::lock_guard<std::mutex> lock(launch_mu); }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop.store(true);
  }
  work_cv.notify_one();
  if (worker.joinable()) worker.join();
}

}  // namespace mlu

namespace mlu::detail {

namespace {

struct QueueRegistry {
  std::mutex mu;
  std::unordered_set<const void*> queues;
};

QueueRegistry& queue_registry() {
  static auto* registry = new QueueRegistry();  // never destroyed: device threads outlive static destructors
  return *registry;
}

}  // namespace

void register_queue(const mluQueue_st* queue) {
  QueueRegistry& registry = queue_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.queues.insert(queue);
}

bool is_registered_queue(const void* queue) {
  QueueRegistry& registry = queue_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.queues.count(queue) > 0;
}

mluQueue_st* resolve_queue(mluQueue_t queue, mluError_t* status) {
  if (in_forked_child()) {
    *status = fail_in_forked_child();
    return nullptr;
  }
  if (queue == nullptr) {
    *status = check_device(current_device());
    return *status == mluSuccess ? default_queue(*device_state(current_device())) : nullptr;
  }
  if (!queue->live()) {
    *status = fail(mluErrorInvalidResourceHandle, "the queue handle was destroyed or is not a queue");
    return nullptr;
  }
  *status = mluSuccess;
  return queue;
}

mluError_t reserve_slot(mluQueue_t* queue, TaskSlot** slot) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(*queue, &status);
  if (q == nullptr) return status;
  std::unique_lock<std::mutex> launch(q->launch_mu);
  if (q->capture) {  // Note [Stream capture]: the task goes into the graph
    if (mluError_t status = capture_reserve(q, slot)) return status;
    launch.release();  // stays locked until commit_slot
    *queue = q;
    return mluSuccess;
  }
  if (mluError_t status = check_capturing_thread(q)) return status;
  auto full = [q] { return q->launched - q->finished.load() >= mluQueue_st::kCapacity; };
  if (!q->closing.load(std::memory_order_acquire) && full()) {
    if (q->on_own_thread()) {
      return fail(mluErrorNotSupported, "a task cannot launch onto its own full queue");
    }
    std::unique_lock<std::mutex> lock(q->mu);
    q->space_waiters.fetch_add(1);
    q->space_cv.wait(lock, [&] { return q->closing.load() || !full(); });
    q->space_waiters.fetch_sub(1);
  }
  // A concurrent mluQueueDestroy may have begun after resolve_queue: its worker
  // may already be gone, so a task committed now would never run.
  if (q->closing.load()) return fail(mluErrorInvalidResourceHandle, "the queue was destroyed during the launch");
  launch.release();  // stays locked until commit_slot
  *queue = q;
  *slot = &q->ring[q->launched % mluQueue_st::kCapacity];
  return mluSuccess;
}

// MLU_INLINE_SMALL_TASKS=0 turns Note [Small tasks run inline] off.
bool small_tasks_run_inline() {
  static const bool enabled = [] {
    const char* env = std::getenv("MLU_INLINE_SMALL_TASKS");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

uint64_t commit_slot_seq(mluQueue_t q, bool small) {
  if (q->capture) {  // captured, not launched: there is no sequence number
    capture_commit(q);
    q->launch_mu.unlock();
    return 0;
  }
  TaskSlot& launched_slot = q->ring[q->launched % mluQueue_st::kCapacity];
  launched_slot.traced = false;  // slots are reused: a stale tag must not survive
  launched_slot.fault = faults_active() ? fault_for_task(launched_slot.kind, launched_slot.name) : nullptr;
  if (tracing()) tag_launch(launched_slot);  // Note [Activity tracing]
  // An injected delay holds the queue, not the launching thread (Note [Fault injection]).
  const bool delayed = faults_active() && fault_delay_ms() > 0;
  if (small && !delayed && q->finished.load() == q->launched && !on_device_thread() && small_tasks_run_inline()) {
    // Note [Small tasks run inline]. The device thread has run every
    // published task and only looks at this slot once launched_published
    // names it; `finished` is stored first, so by then it knows the task ran
    // (run_worker rereads `finished`).
    const uint64_t seq = ++q->launched;
    TaskSlot& slot = q->ring[(seq - 1) % mluQueue_st::kCapacity];
    TaskContext context(q->device);
    const bool record = records(slot);
    const int64_t start_ns = record ? trace_now_ns() : 0;
    const int64_t ran_from = monitor_now_ns();
    run_or_inject(slot, context, slot.fault);
    monitor_ran_inline(q->device, ran_from, monitor_now_ns());
    if (record) record_activity(slot, q, q->device, start_ns, trace_now_ns());
    slot.destroy(slot.storage);
    if (context.failed()) q->store_error(seq, task_name(slot), context.message());
    q->finished.store(seq);
    q->launched_published.store(seq);
    q->launch_mu.unlock();
    return seq;
  }
  uint64_t seq = ++q->launched;
  q->launched_published.store(seq);
  if (!q->worker.joinable()) {
    note_runtime_started();
    q->worker = std::thread([q] { q->run_worker(); });
  }
  const bool wake = q->worker_sleeping.load();
  q->launch_mu.unlock();
  if (wake) notify_under(q->mu, q->work_cv);
  return seq;
}

void commit_slot(mluQueue_t queue, bool small) { commit_slot_seq(queue, small); }

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

mluError_t mluDeviceGetQueuePriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = kLeastPriority;
  if (greatest != nullptr) *greatest = kGreatestPriority;
  return mluSuccess;
}

mluError_t mluQueueCreateWithPriority(mluQueue_t* queue, int priority) {
  if (queue == nullptr) return fail(mluErrorInvalidValue, "queue must not be null");
  if (in_forked_child()) return fail_in_forked_child();
  if (mluError_t status = check_device(current_device())) return status;
  DeviceState* state = device_state(current_device());
  auto* q = new mluQueue_st();
  q->device = state->index;
  q->priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
  register_queue(q);
  {
    std::lock_guard<std::mutex> lock(state->queues_mu);
    state->queues.push_back(q);
  }
  monitor_queues(state->index, 1);
  *queue = q;
  return mluSuccess;
}

mluError_t mluQueueCreate(mluQueue_t* queue) { return mluQueueCreateWithPriority(queue, kLeastPriority); }

mluError_t mluQueueDestroy(mluQueue_t queue) {
  mluError_t status;
  if (queue == nullptr) return fail(mluErrorInvalidResourceHandle, "the default queue cannot be destroyed");
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (q->is_default) return fail(mluErrorInvalidResourceHandle, "the default queue cannot be destroyed");
  if (q->on_own_thread()) return fail(mluErrorInvalidValue, "a queue cannot destroy itself from its own task");
  if (mluError_t s = refuse_if_capturing(q, "destroying a capturing queue")) return s;
  uint32_t expected = mluQueue_st::kLive;
  if (!q->magic.compare_exchange_strong(expected, mluQueue_st::kDestroyed)) {
    return fail(mluErrorInvalidResourceHandle, "the queue handle was already destroyed");
  }
  DeviceState* state = device_state(q->device);
  {
    std::lock_guard<std::mutex> lock(state->queues_mu);
    state->queues.erase(std::remove(state->queues.begin(), state->queues.end(), q), state->queues.end());
  }
  monitor_queues(state->index, -1);
  q->drain_and_stop();
  q->ring.reset();  // the object itself stays, see queue_impl.h
  std::string detail;
  if (q->take_error_detail(UINT64_MAX, &detail)) state->adopt_error(std::move(detail));
  return mluSuccess;
}

mluError_t mluGetDefaultQueue(int device, mluQueue_t* queue) {
  if (queue == nullptr) return fail(mluErrorInvalidValue, "queue must not be null");
  if (mluError_t status = check_device(device)) return status;
  *queue = default_queue(*device_state(device));
  return mluSuccess;
}

mluError_t mluQueueGetPriority(mluQueue_t queue, int* priority) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (priority != nullptr) *priority = q->priority;
  return mluSuccess;
}

mluError_t mluQueueGetLaunchCount(mluQueue_t queue, uint64_t* count) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (count != nullptr) *count = q->launched_published.load(std::memory_order_acquire);
  return mluSuccess;
}

mluError_t mluQueueGetDevice(mluQueue_t queue, int* device) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (device != nullptr) *device = q->device;
  return mluSuccess;
}

mluError_t mluQueueQuery(mluQueue_t queue) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (mluError_t s = refuse_if_capturing(q, "querying a capturing queue")) return s;
  return q->has_finished(q->last_launched()) ? mluSuccess : mluErrorNotReady;
}

mluError_t mluQueueSynchronize(mluQueue_t queue) {
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (q->on_own_thread()) return fail(mluErrorInvalidValue, "a task cannot synchronize its own queue");
  if (mluError_t s = refuse_if_capturing(q, "synchronizing a capturing queue")) return s;
  q->wait_for(q->last_launched());
  return q->take_error();
}

void mluDrainAtExit(int stall_ms) {
  if (in_forked_child()) return;  // the parent's queues have no device threads here
  std::vector<mluQueue_st*> queues;
  {
    QueueRegistry& registry = queue_registry();
    std::lock_guard<std::mutex> lock(registry.mu);
    // Queue objects are never freed (queue_impl.h): the pointers stay valid.
    for (const void* q : registry.queues)
      queues.push_back(const_cast<mluQueue_st*>(static_cast<const mluQueue_st*>(q)));
  }
  std::vector<uint64_t> target(queues.size());
  for (size_t i = 0; i < queues.size(); ++i) target[i] = queues[i]->launched_published.load();
  uint64_t progress = UINT64_MAX;  // the sum of `finished` over the queues, last seen
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    uint64_t finished = 0;
    bool drained = true;
    for (size_t i = 0; i < queues.size(); ++i) {
      finished += queues[i]->finished.load();
      drained = drained && queues[i]->has_finished(target[i]);
    }
    if (drained) return;
    const auto now = std::chrono::steady_clock::now();
    if (finished != progress) {
      progress = finished;
      last_progress = now;
    } else if (now - last_progress >= std::chrono::milliseconds(stall_ms)) {
      for (size_t i = 0; i < queues.size(); ++i) {
        if (!queues[i]->has_finished(target[i])) queues[i]->abandoned.store(true);
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

mluError_t mluQueueCheckHandle(mluQueue_t queue) {
  if (queue == nullptr || is_registered_queue(queue)) return mluSuccess;
  return fail(mluErrorInvalidResourceHandle, "the queue handle is not a queue of this runtime");
}

}  // namespace mlu
