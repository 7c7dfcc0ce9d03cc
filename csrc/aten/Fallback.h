// The CPU fallback for ops without an mlu kernel, and its report.
//
// Note [CPU fallback]
// An op with no mlu kernel runs on the CPU: its mlu arguments are copied to
// the host (a device-to-host copy waits for the work queued before it, so the
// fallback sees results in queue order), the CPU kernel runs, and results and
// mutated arguments are copied back on the current stream. Results are those
// of the CPU kernel. Each op warns once; fallback_counts() says which ops fell
// back and how often. Before anything runs, the arguments' devices are
// checked: two mlu devices, or an mlu tensor with a non-scalar CPU tensor, is
// the same error PyTorch raises for CUDA. View ops cannot fall back (a copy is
// not a view) and fail with a clear error instead. TORCH_MLU_FALLBACK=0
// turns the fallback off: an op without an mlu kernel raises NotImplementedError.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/stack.h>

namespace c10 {
class OperatorHandle;
}

namespace torch_mlu {

// The boxed fallback itself: native kernels call it (through
// at::native::call_fallback_fn) for inputs they do not handle, e.g. complex.
void mlu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace torch_mlu
