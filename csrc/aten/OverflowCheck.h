// The overflow check: a sticky per-device flag that every op producing a NaN
// or an Inf sets, read on the device without a sync (torch_mlu.accuracy's
// overflow_check / overflow_flag; docs/accuracy.md).
//
// Note [Overflow flag]
// Each device has one 32-bit flag word in its own memory, allocated when the
// check is first turned on (or the flag first read) and kept for the process.
// While the check is on, a global RecordFunction end callback sees every aten
// op (forward, backward on the autograd device threads, the CPU fallback's
// ops, graph captures) that computes its results (not views, whose results
// alias an input they do not write, nor the factories of uninitialised
// memory, whose stale bits may hold NaN: empty, resize_, ...); for each
// floating-point mlu result, and each argument a result-less _foreach_ or
// _fused_ op writes (complex: its real
// view) it queues a scan on the current stream of the result's device, after
// the op's own kernels: the absolute maximum of the result (the reduction
// kernels' AbsMax, which propagates NaN), and if that is not finite, the scan
// stores 1 in the flag. Nothing ever stores 0 but clear_overflow_flag, a
// kernel queued like the others: the flag is sticky. Reading it is a kernel
// too, copying the word into a new 0-d bool tensor on that device's current
// stream: no host sync, and on one stream the value covers everything queued
// before the read (work on other streams counts once it has run). The scans
// run as tasks of the op's stream, so queue order is unchanged, and a captured
// graph captures them (its replays scan). Under a Python dispatch mode an op
// is recorded twice (the call the mode intercepts and the mode's own call of
// it); only the inner record is scanned. Not scanned: what Inductor's fused
// kernels compute (their extern calls, such as mm, are aten ops and are),
// and dtypes the reduction kernels lack (float8).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace torch_mlu {

// Turns the scans on or off (process-wide); returns whether they were on.
bool set_overflow_check(bool enabled);
bool overflow_check_enabled();
// The flag of `device` as a new 0-d bool tensor on it, filled in stream order.
at::Tensor overflow_flag(c10::DeviceIndex device);
// Queues the flag's reset to 0 on the current stream of `device`.
void clear_overflow_flag(c10::DeviceIndex device);

}  // namespace torch_mlu
