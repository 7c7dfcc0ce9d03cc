// Status codes of the software MLU runtime.
//
// Every runtime entry point returns an mluError_t and never throws. When a call
// fails it also leaves a human-readable explanation in a thread-local slot that
// mluGetLastErrorDetail() returns until the next failing call on the same host
// thread. Errors raised by device tasks are stored on the task's queue and
// reported (then cleared) by the next synchronizing call that covers that
// task; see Note [Errors belong to queues] in queue.h.
#pragma once

namespace mlu {

enum mluError_t : int {
  mluSuccess = 0,
  mluErrorInvalidValue = 1,           // a bad argument (size, kind, flag, range)
  mluErrorInvalidDevice = 2,          // a device ordinal that is not visible
  mluErrorMemoryAllocation = 3,       // device or host memory exhausted
  mluErrorInvalidDevicePointer = 4,   // free/copy of a pointer the runtime did not hand out
  mluErrorInvalidResourceHandle = 5,  // a destroyed or foreign queue/event handle
  mluErrorNotReady = 6,               // query: the work has not finished yet
  mluErrorLaunchFailure = 7,          // a device task failed (see the detail)
  mluErrorInvalidMemcpyDirection = 8, // pointer kinds do not match the copy kind
  mluErrorNotSupported = 9,           // valid request the runtime does not do
  mluErrorInitialization = 10,        // an invalid TORCH_MLU_* setting (the detail names it)
  mluErrorForkedChild = 11,           // a child forked after the runtime started (Note [Forked children])
  mluErrorStreamCaptureUnsupported = 12,  // not permitted while a queue captures (graph.h); invalidates the capture
  mluErrorStreamCaptureInvalidated = 13,  // the capture failed earlier; only ending it is left
  mluErrorStreamCaptureUnjoined = 14,     // a queue that joined the capture was not joined back
  mluErrorStreamCaptureWrongThread = 15,  // ending a global/thread-local capture from another thread
};

const char* mluGetErrorName(mluError_t error);
const char* mluGetErrorString(mluError_t error);

// The explanation of the last failing call on this host thread ("" if none).
const char* mluGetLastErrorDetail();

}  // namespace mlu
