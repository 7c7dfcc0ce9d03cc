// Internal: the state of stream captures (Note [Stream capture] in graph.h).
//
// Locking. A queue's `capture` pointer changes only under both the queue's
// launch_mu and the registry's mutex, so a launcher (holding launch_mu) and a
// checker (holding the registry mutex) may each read it. Lock order:
// launch_mu, then the registry mutex, then a Capture's mu. A launcher into a
// capture holds launch_mu and the capture's mu from reserve_slot to
// commit_slot, so tasks of all member queues are appended one at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mlu_runtime/graph.h"
#include "mlu_runtime/queue.h"

namespace mlu::detail {

// The tasks of a graph, shared by its handle and by replays in flight.
struct GraphBody {
  explicit GraphBody(int device) : device(device) {}
  ~GraphBody();
  GraphBody(const GraphBody&) = delete;
  GraphBody& operator=(const GraphBody&) = delete;

  int device;
  std::deque<TaskSlot> tasks;  // replay order; slots stay where they are
  std::mutex replay_mu;        // one replay at a time; guards `arguments` while it runs
  alignas(64) unsigned char arguments[kGraphArgumentBytes] = {};
};

struct Capture {
  // A member numbers its captured operations (tasks, event records, waits)
  // 1, 2, ...; positions below are such numbers.
  struct Member {
    mluQueue_st* queue;
    uint64_t ops = 0;           // operations so far
    uint64_t last_task_op = 0;  // position of its last task (0: none)
    uint64_t covered = 0;       // operations known to precede the end (all_joined)
  };
  // `waiter` waited (its operation waiter_op) for `source` up to source_op.
  struct Wait {
    mluQueue_st* waiter;
    uint64_t waiter_op;
    mluQueue_st* source;
    uint64_t source_op;
  };

  uint64_t id = 0;
  int device = 0;
  mluQueueCaptureMode mode = mluQueueCaptureModeGlobal;
  std::thread::id thread;  // the thread that began it
  mluQueue_st* origin = nullptr;

  std::mutex mu;  // guards the fields below
  bool ending = false;  // mluQueueEndCapture began: nobody joins any more
  std::string invalid;  // why the capture failed; empty while it is valid
  std::unique_ptr<GraphBody> graph;
  std::vector<Member> members;  // the origin first
  std::vector<Wait> waits;

  Member* member(mluQueue_st* queue);
};

// Where an event was recorded inside a capture.
struct CapturedRecord {
  std::weak_ptr<Capture> capture;
  mluQueue_st* queue = nullptr;  // null: the record was not made in a capture
  uint64_t op = 0;               // the record's position on that queue
};

// Launch path (the caller holds q->launch_mu and q->capture is set): on
// success, *slot is a new graph slot and the capture's mu stays locked until
// capture_commit.
mluError_t capture_reserve(mluQueue_st* q, TaskSlot** slot);
void capture_commit(mluQueue_st* q);
// Launch path for a queue that does not capture (the caller holds
// q->launch_mu): refuses work on another device from a thread that captures.
mluError_t check_capturing_thread(const mluQueue_st* q);

// Refuses `what` on q when q captures (invalidating the capture).
mluError_t refuse_if_capturing(mluQueue_st* q, const char* what);
// Refuses `what` when a queue of `device` captures (invalidating those captures).
mluError_t refuse_if_device_captures(int device, const char* what);
// Refuses a potentially unsafe call while a global-mode capture (any thread)
// or a thread-local one of this thread is underway.
mluError_t refuse_unsafe_call(const char* what);

// Events. If q captures, fills *record and returns true (nothing is launched).
bool capture_event_record(mluQueue_st* q, CapturedRecord* record);
// The capture an event record belongs to while that capture is underway;
// nullptr for a record made outside any capture or in one that has ended.
std::shared_ptr<Capture> live_capture(const CapturedRecord& record);
// mluQueueWaitEvent on a record made inside a live capture: q joins it (or is
// in it already) and the wait is noted. Launches nothing.
mluError_t capture_wait(mluQueue_st* q, const std::shared_ptr<Capture>& capture, const CapturedRecord& record);
bool is_capturing(mluQueue_st* q);

}  // namespace mlu::detail
