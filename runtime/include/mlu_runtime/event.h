// Events: points in a queue's sequence of tasks.
//
// Note [Event versioning]
// mluEventRecord captures (queue, sequence number of the last task launched on
// it so far). A later record replaces that pair, but everything that used the
// event before the re-record keeps the pair it saw: a mluQueueWaitEvent
// launched before a re-record waits for the earlier point; query, synchronize
// and elapsed time always refer to the record that existed when they were
// called. An event never recorded is complete. "Complete" means every task up
// to the recorded point has finished running.
//
// Timing events (created without mluEventDisableTiming) launch a marker task
// on record that stamps the time at which the queue reached that point;
// mluEventElapsedTime needs two completed timing records.
#pragma once

#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

namespace mlu {

enum mluEventFlags : unsigned {
  mluEventDefault = 0,
  mluEventBlockingSync = 1,   // accepted; host waits always block (never spin)
  mluEventDisableTiming = 2,
};

mluError_t mluEventCreate(mluEvent_t* event);
mluError_t mluEventCreateWithFlags(mluEvent_t* event, unsigned flags);
mluError_t mluEventDestroy(mluEvent_t event);
mluError_t mluEventRecord(mluEvent_t event, mluQueue_t queue);
// mluSuccess if the recorded work has finished, else mluErrorNotReady.
mluError_t mluEventQuery(mluEvent_t event);
mluError_t mluEventSynchronize(mluEvent_t event);
// Milliseconds between two completed timing records.
mluError_t mluEventElapsedTime(float* ms, mluEvent_t start, mluEvent_t end);

}  // namespace mlu
