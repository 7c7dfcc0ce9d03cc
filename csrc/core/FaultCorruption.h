// FaultCorruption: the plugin's half of the corrupt: fault rule (Note
// [Fault injection] in mlu_runtime/fault.h).
//
// Note [Corrupting an op's results]
// The runtime decides which op a corrupt:NAME[@N] rule hits; only the plugin
// sees an op's results. While such a rule is set, a global RecordFunction
// callback observes every ATen op (forward, and backward on the autograd
// device threads); at the end of an op with floating-point mlu results whose
// name the rule matches, it scales those results in place by 1 + 2^-6 on the
// current stream: a kernel queued after the op's own, so queue order holds.
// The scaling runs below autograd (no graph node, no version bump) and under a
// thread-local guard, so it is not observed itself. Ops without mlu results
// (the accuracy check's CPU re-execution) are neither touched nor counted.
// The callback is installed when the rules are set (TORCH_MLU_FAULT_INJECT at
// import, or torch.mlu's fault-injection API) and removed when none is left:
// a program without the rule pays nothing.
#pragma once

namespace torch_mlu {

// Installs or removes the observer to match the rules now in force.
void sync_fault_corruption();

}  // namespace torch_mlu
