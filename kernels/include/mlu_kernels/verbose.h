// MLU_KERNELS_VERBOSE=1: one line on stderr per kernel call, saying which
// path it took, in the manner of oneDNN's ONEDNN_VERBOSE:
//
//   mlu_kernels_verbose,exec,<kernel>,<isa>,<path>,<dtype>,<problem>,<milliseconds>
//
// e.g. `mlu_kernels_verbose,exec,gemm,avx512bf16,amx,bfloat16,m512 n512 k512 batch1,0.412`. <isa> is the
// active instruction set (isa.h); <path> the kernel's own choice (AMX, GEMV,
// by-columns softmax, ...); <problem> its sizes. The time is the call's, on
// the thread that ran it. Off by default; when off a call costs one
// predictable branch. Every family's entry points log (the test in
// tests/test_kernel_contract.py runs one kernel of each); copy, fill and
// pointwise only when not called from inside another kernel, where they are
// its buffers (src/common/verbose_call.h).
#pragma once

namespace mlu::kernels {

// Whether kernel calls are logged: MLU_KERNELS_VERBOSE at first use
// ("1" or any value but "0"), then set_verbose.
bool verbose();
void set_verbose(bool on);

}  // namespace mlu::kernels
