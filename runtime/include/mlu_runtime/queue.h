// Queues (streams) of the software MLU: asynchronous, in-order task execution.
//
// Threading model. Every queue owns one device thread, started on the first
// launch. mluLaunchTask places the task in the queue's fixed-size ring and
// returns at once; the device thread runs the tasks one after another in
// launch order. Different queues run concurrently. An idle device thread
// sleeps on a condition variable (it never spins), and a launch only wakes it
// when it sleeps, so the common launch path is an uncontended lock, a
// placement-new into the ring and an unlock: no heap allocation (tasks up to
// kTaskInlineBytes are stored inline) and no syscall. A full ring blocks the
// launching thread until the device thread frees a slot.
//
// Note [Small tasks run inline]
// mluLaunchSmallTask is mluLaunchTask for work too small to repay the hand-off
// to the device thread (a task's slot and counters migrating to its core and,
// when it sleeps, a wake-up): when the queue is idle (every task launched on
// it has finished), the launch is not captured, and the launcher is a host
// thread (not a device thread) with inline runs enabled, the launching thread
// runs the task itself before returning. Everything else about the task is a
// launched task's: it gets the next sequence number, holds the queue's launch
// lock while it runs (so no other launch on that queue passes it), counts as
// finished only once it has returned, and a failure is stored as the queue's
// error (Note [Errors belong to queues]) and reported by the next
// synchronizing call, never by the launch. Order is unchanged: an idle queue
// has nothing the task could overtake, and later launches wait for the lock.
// MLU_INLINE_SMALL_TASKS=0 turns inline runs off (every task then runs on its
// device thread).
//
// Sequence numbers. A queue counts launched tasks (1, 2, ...) and the number
// of finished ones. "Finished" is published only after a task has returned,
// so everything that waits for a sequence number (events, synchronize) waits
// for completed work, not dequeued work.
//
// Note [Errors belong to queues]
// A task fails by calling TaskContext::fail(message) or by throwing a
// std::exception. The failure is stored on the task's queue together with the
// task's name and sequence number (the first one wins until it is read);
// later tasks still run. It is reported as mluErrorLaunchFailure with the
// detail "device <d>: <task name>: <message>", and cleared, by the next
// synchronizing call that covers the failed task: a synchronize of that queue,
// a blocking copy on it, a synchronize of an event recorded on it after the
// task, or a synchronize of the whole device. Another queue's synchronize never
// reports it, so one host thread's error is not raised in another thread that
// works on its own queue. A destroyed queue hands a pending error to its
// device, where the next device synchronize reports it.
//
// A null mluQueue_t means the default queue of the current device. Default
// queues live as long as the process; mluQueueDestroy waits for the queue's
// work, stops its thread and leaves the handle invalid.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "mlu_runtime/status.h"

namespace mlu {

typedef struct mluQueue_st* mluQueue_t;
typedef struct mluEvent_st* mluEvent_t;

// What a running task knows about itself and how it reports a failure.
class TaskContext {
 public:
  explicit TaskContext(int device) : device_(device) {}
  int device() const { return device_; }
  void fail(std::string message) {
    failed_ = true;
    message_ = std::move(message);
  }
  bool failed() const { return failed_; }
  const std::string& message() const { return message_; }

 private:
  int device_;
  bool failed_ = false;
  std::string message_;
};

mluError_t mluQueueCreate(mluQueue_t* queue);
// Priorities follow CUDA: lower numbers are higher priority (see the range).
mluError_t mluQueueCreateWithPriority(mluQueue_t* queue, int priority);
mluError_t mluDeviceGetQueuePriorityRange(int* least, int* greatest);
mluError_t mluQueueDestroy(mluQueue_t queue);
mluError_t mluGetDefaultQueue(int device, mluQueue_t* queue);
mluError_t mluQueueGetPriority(mluQueue_t queue, int* priority);
mluError_t mluQueueGetDevice(mluQueue_t queue, int* device);
// mluSuccess when `queue` is a handle this runtime created (live or destroyed:
// the other calls report a destroyed one themselves) or null (the default
// queue); mluErrorInvalidResourceHandle otherwise. Unlike the other calls it
// never dereferences the handle, so it vets handles from outside (an external
// stream's) before they are used.
mluError_t mluQueueCheckHandle(mluQueue_t queue);
// How many tasks were ever launched on `queue` (copies, kernels, event
// records, waits): a profiling and testing aid.
mluError_t mluQueueGetLaunchCount(mluQueue_t queue, uint64_t* count);
// mluSuccess when all launched work has finished, else mluErrorNotReady.
mluError_t mluQueueQuery(mluQueue_t queue);
mluError_t mluQueueSynchronize(mluQueue_t queue);
// Work launched on `queue` after this call starts only once the work recorded
// in `event` (at the time of this call) has finished. See event.h.
mluError_t mluQueueWaitEvent(mluQueue_t queue, mluEvent_t event);

// Note [Device threads at exit]
// Device threads are never joined at exit: static destructors may run while
// one still runs a kernel, and a kernel in a library whose statics are gone
// (oneDNN's primitive caches) crashes the exiting process. So a program that
// may end with work still queued calls mluDrainAtExit once its last launch is
// done and before static destruction (torch_mlu's atexit handler does): it
// waits until every queue has run what was launched on it. A queue stuck in a
// task (a wait for an event that will never come, a collective whose peer is
// gone) must not hang the exit: when no queue has finished a task for
// stall_ms, the undrained queues are abandoned (their remaining tasks, and
// any launched later, are skipped: finished without running) and the call
// returns. Work launched after the call runs as usual on the other queues.
// In a forked child (whose queues have no threads) it does nothing.
void mluDrainAtExit(int stall_ms);

namespace detail {

constexpr std::size_t kTaskInlineBytes = 448;

// What a task is, for activity tracing (Note [Activity tracing] in tracer.h).
enum class TaskKind : uint8_t { Kernel, Memcpy, Marker, Internal };

struct TaskSlot {
  void (*run)(void* storage, TaskContext& context);
  void (*destroy)(void* storage);
  const char* name;
  TaskKind kind = TaskKind::Kernel;
  // Set at launch when tracing is on (Note [Activity tracing]): the launching
  // thread's correlation id, innermost annotation, system thread id and clock.
  bool traced = false;
  int32_t launch_tid = 0;
  uint64_t correlation = 0;
  uint64_t annotation = 0;
  int64_t launch_ns = 0;
  // Set at launch when Note [Fault injection] (fault.h) fails the task: the
  // reason, which it reports instead of running.
  const char* fault = nullptr;
  alignas(std::max_align_t) unsigned char storage[kTaskInlineBytes];
};

// Reserves the next ring slot of *queue (a null queue is replaced by the
// default queue it stands for); on success that queue stays locked until
// commit_slot. Blocks while the ring is full.
mluError_t reserve_slot(mluQueue_t* queue, TaskSlot** slot);
// `small`: may run the task on the calling thread (Note [Small tasks run
// inline]).
void commit_slot(mluQueue_t queue, bool small = false);

template <class Fn>
void invoke_task(Fn& fn, TaskContext& context) {
  if constexpr (std::is_invocable_v<Fn&, TaskContext&>) {
    fn(context);
  } else {
    fn();
  }
}

template <class F>
mluError_t launch(mluQueue_t queue, const char* name, F&& fn, bool small) {
  using Fn = std::decay_t<F>;
  constexpr bool kInline = sizeof(Fn) <= detail::kTaskInlineBytes &&
      alignof(Fn) <= alignof(std::max_align_t) &&
      std::is_nothrow_constructible_v<Fn, F&&>;  // nothing may throw while the queue is locked
  if constexpr (kInline) {
    detail::TaskSlot* slot = nullptr;
    mluError_t status = detail::reserve_slot(&queue, &slot);
    if (status != mluSuccess) return status;
    new (slot->storage) Fn(std::forward<F>(fn));
    slot->run = [](void* s, TaskContext& c) { detail::invoke_task(*static_cast<Fn*>(s), c); };
    slot->destroy = [](void* s) { static_cast<Fn*>(s)->~Fn(); };
    slot->name = name;
    slot->kind = TaskKind::Kernel;
    detail::commit_slot(queue, small);
    return mluSuccess;
  } else {
    // Rare: a large closure lives on the heap; only its pointer is inline.
    Fn* boxed = new (std::nothrow) Fn(std::forward<F>(fn));
    if (boxed == nullptr) return mluErrorMemoryAllocation;
    detail::TaskSlot* slot = nullptr;
    mluError_t status = detail::reserve_slot(&queue, &slot);
    if (status != mluSuccess) {
      delete boxed;
      return status;
    }
    std::memcpy(slot->storage, &boxed, sizeof boxed);
    slot->run = [](void* s, TaskContext& c) {
      Fn* f;
      std::memcpy(&f, s, sizeof f);
      detail::invoke_task(*f, c);
    };
    slot->destroy = [](void* s) {
      Fn* f;
      std::memcpy(&f, s, sizeof f);
      delete f;
    };
    slot->name = name;
    slot->kind = TaskKind::Kernel;
    detail::commit_slot(queue);
    return mluSuccess;
  }
}

}  // namespace detail

// Enqueues fn (callable as fn(TaskContext&) or fn()) on `queue`. `name` must
// outlive the task (a string literal); it names the task in error reports.
template <class F>
mluError_t mluLaunchTask(mluQueue_t queue, const char* name, F&& fn) {
  return detail::launch(queue, name, std::forward<F>(fn), false);
}

// mluLaunchTask that may run `fn` on the calling thread when the queue is idle
// (Note [Small tasks run inline]).
template <class F>
mluError_t mluLaunchSmallTask(mluQueue_t queue, const char* name, F&& fn) {
  return detail::launch(queue, name, std::forward<F>(fn), true);
}

}  // namespace mlu
