// Fault injection: making the runtime fail on purpose, to test recovery code.
//
// Note [Fault injection]
// Rules come from TORCH_MLU_FAULT_INJECT (read at the first runtime call; a
// malformed value makes device calls fail with mluErrorInitialization, like
// any bad variable) or from mluFaultInjectSet, which replaces them at any
// time. A spec is rules separated by ';' (or ','):
//   alloc:N       the Nth device allocation from now fails as out of memory
//   alloc:N+      ... and every later one
//   host_alloc:N[+]  the same for pinned host memory (mluHostMalloc)
//   kernel:N[+]   the Nth kernel launched from now fails on the device
//   kernel:NAME   every kernel whose name contains NAME fails on the device
//   kernel:NAME@N only the Nth such kernel
//   copy:N[+]     the Nth copy (mluMemcpy*) fails on the device
//   delay:MS      every kernel and copy waits MS milliseconds before it runs
//                 on its queue (small tasks are not run inline meanwhile)
//   capacity:SIZE each device's capacity drops to SIZE (e.g. 64M; memory
//                 already allocated stays; mluMemGetInfo reports the limit)
//   corrupt:NAME[@N]  the results of every op (or only the Nth) whose name
//                 contains NAME (an ATen op name, e.g. aten::addmm) are
//                 perturbed: scaled by 1 + 2^-6 (the plugin applies it,
//                 csrc/core/FaultCorruption.h; the op itself succeeds), to
//                 prove that the accuracy tools find a wrong kernel
// Counting starts when the rules are set; each rule counts on its own.
// Whether a launched kernel or copy fails is decided at its launch, so
// failures are deterministic; kernels recorded into a graph are decided
// each time the graph replays. A failed task does not run: it is stored as
// its queue's error (Note [Errors belong to queues]) with the detail
// "injected fault (TORCH_MLU_FAULT_INJECT '<rule>')", exactly as a device
// error of the task itself would be. With no rules the cost is one relaxed
// atomic load per launch and allocation.
#pragma once

#include <cstdint>
#include <string>

#include "mlu_runtime/status.h"

namespace mlu {

// Replaces the rules with `spec` (null or "" clears them). A malformed spec
// returns mluErrorInvalidValue, explaining the grammar, and keeps the old rules.
mluError_t mluFaultInjectSet(const char* spec);
// The rules in force, as set.
std::string mluFaultInjectSpec();
// How many faults were injected since the rules were last set.
uint64_t mluFaultInjectCount();
// Whether any corrupt: rule is set (one relaxed load).
bool mluFaultCorruptRulesActive();
// For an op named `name` that produced device results: whether its results
// must be perturbed now (counts a match for every corrupt: rule it matches).
bool mluFaultCorruptOp(const char* name);

}  // namespace mlu
