// Internal: the queue object behind mluQueue_t. See queue.h for the model.
//
// Note [Lock-free launches]
// Launchers and the device thread share no lock on the common path. Launchers
// (host threads, or tasks launching onto another queue) serialise among
// themselves on `launch_mu`, which the device thread never takes; they fill
// ring slot `launched` and publish it through `launched_published`. The device
// thread runs the published slots in order and publishes its progress through
// `finished`. `mu` and the condition variables serve only sleeping: the device
// thread when the ring is empty, launchers when it is full, host threads
// waiting for a task. Each side announces its sleep (worker_sleeping,
// space_waiters, wake_at) before re-checking the other side's counter,
// and the other side publishes its counter before reading the announcement,
// all sequentially consistent: one of them sees the other, so no wake-up is
// lost; a waker takes `mu` before notifying, so the sleeper is either before
// its re-check or already waiting. Host waiters announce the task they wait
// for (wake_at: the earliest such task, or "none"), so the device thread wakes
// them once, when that task finishes, not after every task before it (each
// wake-up would take a core from the device threads for a context switch).
//
// Invariants: finished <= launched_published <= launched (a task run inline,
// Note [Small tasks run inline], stores `finished` just before publishing
// itself), and
// launched - finished <= capacity (the ring never overwrites a slot that has
// not run). Task k (1-based) lives in ring[(k - 1) % capacity].
// Queue objects are never freed: a destroyed queue only loses its thread and
// ring, so a stale handle is detected (magic) instead of being undefined.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fault_state.h"
#include "mlu_runtime/queue.h"

namespace mlu::detail {
struct Capture;
}

namespace mlu {

struct mluQueue_st {
  static constexpr uint32_t kLive = 0x4d4c5551;  // "MLUQ"
  static constexpr uint32_t kDestroyed = 0xdeadd00d;
  static constexpr size_t kCapacity = 1024;

  std::atomic<uint32_t> magic{kLive};
  int device = 0;
  int priority = 0;
  bool is_default = false;
  std::unique_ptr<mlu::detail::TaskSlot[]> ring{new mlu::detail::TaskSlot[kCapacity]};

  // Each group on its own cache line: the device thread polls
  // launched_published and writes finished once per task, so neither may share
  // a line with the launchers' own fields.
  alignas(64) std::mutex launch_mu;             // launcher side, guards `launched` and `worker`
  uint64_t launched = 0;
  std::thread worker;                           // started by the first launch
  // The capture this queue records into (Note [Stream capture] in graph.h);
  // changed under launch_mu and the capture registry's mutex (capture.h).
  std::shared_ptr<detail::Capture> capture;
  std::atomic<bool> closing{false};             // destroy began: launches fail
  alignas(64) std::atomic<uint64_t> launched_published{0};  // `launched`, for the device thread and queries
  // Written by the device thread, and by a launcher that runs a task inline
  // on an idle queue (Note [Small tasks run inline]), never both at once.
  alignas(64) std::atomic<uint64_t> finished{0};
  alignas(64) std::atomic<bool> worker_sleeping{false};
  // The earliest task a sleeping host waiter waits for; kNoWaiter when none.
  // Lowered by waiters, reset by the device thread, both under `mu`.
  static constexpr uint64_t kNoWaiter = UINT64_MAX;
  std::atomic<uint64_t> wake_at{kNoWaiter};
  std::atomic<int> space_waiters{0};
  std::atomic<bool> stop{false};  // no launch is in flight any more: exit once drained
  std::atomic<bool> abandoned{false};  // Note [Device threads at exit]: tasks finish without running

  // The pending failure of one of this queue's tasks (Note [Errors belong to
  // queues]): error_seq is that task's sequence number, 0 when none is pending.
  // Written under error_mu; read without it to skip the lock when it is 0.
  alignas(64) std::atomic<uint64_t> error_seq{0};
  std::mutex error_mu;
  std::string error_detail;

  // Sleeping only (Note [Lock-free launches]).
  alignas(64) std::mutex mu;
  std::condition_variable work_cv;   // the device thread sleeps here
  std::condition_variable space_cv;  // launchers wait here when the ring is full
  std::condition_variable done_cv;   // host waiters wait here for `finished`

  bool live() const { return magic.load(std::memory_order_acquire) == kLive; }
  uint64_t last_launched();
  // Blocks until task `seq` has finished.
  void wait_for(uint64_t seq);
  bool has_finished(uint64_t seq) const { return finished.load(std::memory_order_acquire) >= seq; }
  // True when called from this queue's own device thread.
  bool on_own_thread() const;
  void run_worker();
  // Waits for the launched work, then stops and joins the device thread.
  void drain_and_stop();
  // Keeps the first failure until it is taken.
  void store_error(uint64_t seq, const char* task_name, const std::string& message);
  // Takes the pending error when its task is numbered <= `upto`: returns
  // mluErrorLaunchFailure with the detail; mluSuccess when there is none.
  mluError_t take_error(uint64_t upto = UINT64_MAX);
  // Like take_error, but hands back the detail instead of reporting it.
  bool take_error_detail(uint64_t upto, std::string* detail);
};

}  // namespace mlu

namespace mlu::detail {

// True on any queue's device thread: such a thread must not wait for a
// whole device (it would wait for itself).
bool on_device_thread();

// Records `queue` as a queue of this runtime (queues are never freed).
void register_queue(const mluQueue_st* queue);
// Whether `queue` is a pointer register_queue saw; never dereferences it.
bool is_registered_queue(const void* queue);

// A live queue for `queue` (null: the current device's default queue), or
// nullptr with the thread's error detail set.
mluQueue_st* resolve_queue(mluQueue_t queue, mluError_t* status);
uint64_t commit_slot_seq(mluQueue_t queue, bool small = false);

// Runs a task, turning an exception it throws into its failure.
inline void run_task(TaskSlot& slot, TaskContext& context) {
  try {
    slot.run(slot.storage, context);
  } catch (const std::exception& e) {
    context.fail(e.what());
  } catch (...) {
    context.fail("unknown exception");
  }
}

// Runs a launched (or replayed) task, or fails it when Note [Fault injection]
// said so at its launch (`fault`), after any injected delay.
inline void run_or_inject(TaskSlot& slot, TaskContext& context, const char* fault) {
  if (slot.kind == TaskKind::Kernel || slot.kind == TaskKind::Memcpy) {
    if (faults_active()) {
      if (int ms = fault_delay_ms()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    if (fault != nullptr) return context.fail(fault);
  }
  run_task(slot, context);
}

inline const char* task_name(const TaskSlot& slot) { return slot.name != nullptr ? slot.name : "unnamed task"; }

// Like mluLaunchTask, also returning the task's sequence number.
template <class F>
mluError_t launch_task(mluQueue_t queue, const char* name, TaskKind kind, F&& fn, uint64_t* seq) {
  static_assert(sizeof(std::decay_t<F>) <= kTaskInlineBytes, "internal tasks are small");
  using Fn = std::decay_t<F>;
  TaskSlot* slot = nullptr;
  mluError_t status = reserve_slot(&queue, &slot);
  if (status != mluSuccess) return status;
  new (slot->storage) Fn(std::forward<F>(fn));
  slot->run = [](void* s, TaskContext& c) { invoke_task(*static_cast<Fn*>(s), c); };
  slot->destroy = [](void* s) { static_cast<Fn*>(s)->~Fn(); };
  slot->name = name;
  slot->kind = kind;
  *seq = commit_slot_seq(queue);
  return mluSuccess;
}

}  // namespace mlu::detail
