// Activity tracing: what a profiler needs to draw the device's rows.
//
// Note [Activity tracing]
// Between mluTracerStart and mluTracerStop every kernel, copy and marker a
// queue runs is recorded as an mluActivity: its task name, device, queue,
// start and end on the device thread (system_clock nanoseconds since the
// epoch: the clock of PyTorch's profiler and Kineto), and what the launching
// host thread had pushed when it launched the task: its correlation id (the
// profiler's id of the op that launched it) and innermost annotation (a cnpx
// range), its system thread id and the launch time. They are captured at launch, because the task runs later on its
// device thread; which tasks are recorded is also decided at launch, so a task
// launched before the start is never half-recorded. Tasks run inline (Note
// [Small tasks run inline]) are recorded alike; internal tasks (event records,
// event waits, stream-ordered frees) are not activities, and a graph replay is
// one activity. Tracing never changes what runs or in which order; off, it
// costs a relaxed atomic load per launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

namespace mlu {

enum class mluActivityKind : uint8_t { Kernel, Memcpy, Marker };

struct mluActivity {
  mluActivityKind kind;
  const char* name;  // the task's name (static); a marker's is its annotation's
  int device;
  mluQueue_t queue;
  int64_t start_ns;
  int64_t end_ns;
  uint64_t correlation;  // 0: launched outside any profiled op
  uint64_t annotation;   // 0: outside any range; else an mluAnnotation id
  int64_t launch_ns;     // when the host launched it
  int32_t launch_tid;    // the launching host thread's system thread id
};

// A range pushed (or a mark made) while tracing.
struct mluAnnotation {
  uint64_t id;
  std::string name;
  int64_t push_ns;  // host time of the push
  int64_t pop_ns;   // host time of the pop; -1 while open
};

// Starts recording (activities of an earlier session not yet collected are dropped).
mluError_t mluTracerStart();
// Waits for the work launched so far on every device to finish, then stops
// recording; the activities stay until collected.
mluError_t mluTracerStop();
bool mluTracerEnabled();
// Appends the recorded activities and annotations and forgets them.
mluError_t mluTracerCollect(std::vector<mluActivity>* activities, std::vector<mluAnnotation>* annotations);

// The calling thread's correlation stack: tasks it launches carry the top.
void mluTracerPushCorrelation(uint64_t id);
void mluTracerPopCorrelation();

// The calling thread's annotation ranges (cnpx): tasks it launches carry the
// innermost. Push returns the depth before the push (0 for the outermost);
// pop returns the depth after it, or -1 with nothing to pop (nvtx's
// conventions). Ranges work whether or not tracing is on.
int mluTracerRangePush(const char* name);
int mluTracerRangePop();
// Launches a marker named `name` on `queue`: an activity of zero length at the
// point where the queue reaches it. Nothing is launched while tracing is off.
mluError_t mluTracerMark(mluQueue_t queue, const char* name);

}  // namespace mlu
