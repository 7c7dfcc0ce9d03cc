// Stream capture and graphs: record a queue's work once, replay it as one task.
//
// Note [Stream capture]
// mluQueueBeginCapture puts a queue in capture mode: from then on every task
// launched on it (kernels, copies, memsets, graph launches) is appended to a
// graph instead of running; nothing reaches the device thread. Another queue
// joins the capture by waiting for an event recorded on a capturing queue
// (mluQueueWaitEvent), as on CUDA, and must be joined back before the end: the
// origin queue (directly or through other members) waits for an event
// recorded on it after its last task. Event records and waits inside a
// capture launch nothing; they only order the graph. mluQueueEndCapture on the
// origin queue ends the capture of every member and hands out the graph.
//
// A graph's tasks run in the order they were launched, across all member
// queues. That order respects every dependency the capture expressed (a wait
// is launched after the record it waits for), so it is a valid schedule of the
// graph; replay runs it serially as one task (mluGraphLaunch), in order with
// the other work of the queue it is launched on. Captured tasks are run again
// at every replay and destroyed with the graph, so a task must be re-runnable:
// it reads its arguments, it does not consume them.
//
// What capture refuses (mluErrorStreamCaptureUnsupported, and the capture is
// invalidated: later launches into it fail with
// mluErrorStreamCaptureInvalidated, and ending it frees the graph and reports
// the first reason):
//  * in every mode, what conflicts with capture itself: synchronizing or
//    querying a capturing queue or its device, a blocking copy (a pageable host
//    side) or a stream-ordered free on a capturing queue, querying or
//    synchronizing an event recorded in the capture, a capturing queue waiting
//    for unfinished work recorded outside the capture, work launched by the
//    capturing thread onto another device, capture on a default queue, and
//    beginning a capture on a queue that already captures;
//  * in global mode (any thread) and thread-local mode (the thread that began
//    the capture), "potentially unsafe" calls that may synchronize: mluMemcpy,
//    mluFree, mluHostMalloc, mluFreeHost. Relaxed mode permits them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

namespace mlu {

typedef struct mluGraph_st* mluGraph_t;

enum mluQueueCaptureMode : int {
  mluQueueCaptureModeGlobal = 0,
  mluQueueCaptureModeThreadLocal = 1,
  mluQueueCaptureModeRelaxed = 2,
};

enum mluQueueCaptureStatus : int {
  mluQueueCaptureStatusNone = 0,
  mluQueueCaptureStatusActive = 1,
  mluQueueCaptureStatusInvalidated = 2,
};

mluError_t mluQueueBeginCapture(mluQueue_t queue, mluQueueCaptureMode mode);
// Ends the capture that began on `queue`. On success *graph is the recorded
// graph (possibly empty); on failure (invalidated, unjoined) the capture is
// over all the same, its members capture no more and *graph is null.
mluError_t mluQueueEndCapture(mluQueue_t queue, mluGraph_t* graph);
// Whether `queue` captures; *id (optional) is the capture's id, unique in the
// process, 0 when it does not.
mluError_t mluQueueGetCaptureInfo(mluQueue_t queue, mluQueueCaptureStatus* status, uint64_t* id);

// For layers above the runtime that refuse an operation of their own inside a
// capture (a host fallback, a host read of device data): if `queue` captures,
// invalidates the capture and fails with mluErrorStreamCaptureUnsupported,
// its detail naming `what`; mluSuccess otherwise.
mluError_t mluQueueRefuseInCapture(mluQueue_t queue, const char* what);

// Replay arguments. Every graph has a block of kGraphArgumentBytes that each
// launch fills before the graph's tasks run and that captured tasks may read:
// values that must differ per replay (a random generator's seed and offset)
// reach the tasks this way, in stream order, like the device-memory
// arguments a CUDA graph's kernels read. A task captured on `queue` finds the
// block at the address mluQueueGetCaptureArguments gives during the capture;
// the block lives as long as the graph's tasks. Launches without arguments
// leave it as the previous launch left it (zeros at first).
constexpr size_t kGraphArgumentBytes = 64;
mluError_t mluQueueGetCaptureArguments(mluQueue_t queue, const void** arguments);

// Enqueues one replay of `graph` on `queue` (a queue of the graph's device).
// Replays of one graph run one at a time. A failing task fails the replay
// task with "graph replay: <task>: <message>"; the rest still run, as eager
// work after a failed task would.
mluError_t mluGraphLaunch(mluGraph_t graph, mluQueue_t queue);
// mluGraphLaunch that first copies `bytes` (<= kGraphArgumentBytes) of
// `arguments` into the graph's argument block.
mluError_t mluGraphLaunchWithArguments(mluGraph_t graph, mluQueue_t queue, const void* arguments, size_t bytes);
// Releases the graph; replays already launched still run.
mluError_t mluGraphDestroy(mluGraph_t graph);
mluError_t mluGraphGetTaskCount(mluGraph_t graph, size_t* count);
// Writes the graph as a Graphviz digraph: one node per task, named, in
// replay order.
mluError_t mluGraphDebugDotPrint(mluGraph_t graph, const char* path);

}  // namespace mlu
