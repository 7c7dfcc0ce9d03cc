// Internal side of activity tracing (Note [Activity tracing] in tracer.h):
// the launch path tags a slot, the running side records it.
#pragma once

#include <atomic>
#include <cstdint>

#include "mlu_runtime/queue.h"

namespace mlu::detail {

extern std::atomic<bool> g_tracing;

inline bool tracing() { return g_tracing.load(std::memory_order_relaxed); }

// Called with the queue's launch lock held, before the slot is published:
// marks the slot as traced and stores the launching thread's correlation id
// and innermost annotation.
void tag_launch(TaskSlot& slot);

inline bool records(const TaskSlot& slot) {
  return slot.traced && slot.kind != TaskKind::Internal && slot.kind != TaskKind::Marker;
}

int64_t trace_now_ns();
void record_activity(const TaskSlot& slot, mluQueue_t queue, int device, int64_t start_ns, int64_t end_ns);

}  // namespace mlu::detail
