// The torch_mlu side of the compiled-kernel ABI
// (torch_mlu/_inductor/include/torch_mlu/compiled_kernel_api.h).
//
// Note [Compiled kernels are stream tasks]
// Inductor's C++ kernels for mlu run where a real accelerator would run them:
// on the device, as tasks of the current stream. The Python wrapper Inductor
// generates calls a kernel module's entry point, which enqueues the kernel
// with its raw pointers and returns at once; the stream's device thread runs
// it after every op enqueued before it, and ops enqueued after it (eager ops,
// extern kernels such as mm, copies) run after it has finished. So nothing is
// drained around a compiled kernel, and the rules that keep eager ops safe
// keep compiled ones safe too: a buffer the wrapper frees (`del buf3`) is
// reused only in stream order (Note [Stream-ordered reuse] in
// csrc/core/MLUCachingAllocator.h). A kernel that throws (an integer division
// by zero) fails its task: the error is raised, naming the kernel, at the
// next synchronizing call, like any device-side error. Its OpenMP regions run
// as teams on the device's compute threads (Note [Teams] in the kernel
// library's parallel.h), never on a second thread pool.
#pragma once

#include "torch_mlu/compiled_kernel_api.h"

namespace torch_mlu {

// The table handed to compiled kernel modules; lives as long as the process.
const TorchMluCompiledKernelApi& compiled_kernel_api();

}  // namespace torch_mlu
