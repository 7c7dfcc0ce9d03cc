// The CPU fallback for ops without an mlu kernel, and its report.
//
// Note [CPU fallback]
// An op with no mlu kernel runs on the CPU, in queue order. The mlu arguments
// it only reads are handed to the CPU kernel in place, as CPU tensors over
// device memory, once their devices' current streams have drained, where
// that memory is host-addressable (Note [Zero-copy fallback] in
// Fallback.cpp); so are written arguments whose elements share memory. Other
// mlu arguments are copied to the host (a device-to-host copy waits for the
// work queued before it). The CPU kernel runs, and results and the written
// arguments that were copied are copied back on the current stream. Results
// are those of the CPU kernel. Each op warns once; fallback_counts() says
// which ops fell back and how often. Before anything runs, the arguments'
// devices are checked: an op with a device check gets exactly the one its
// native kernel would (Note [Device checks]); for the others, two mlu
// devices, or an mlu tensor with a non-scalar CPU tensor (CPU indices
// excepted for the index ops), is the same error PyTorch raises for CUDA.
// View ops cannot fall back (a copy is not a view) and fail with a clear
// error instead. TORCH_MLU_FALLBACK=0 turns the fallback off: an op that
// would fall back, whether it has no mlu kernel or its kernel hands it
// inputs it does not handle, raises NotImplementedError naming the op.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/stack.h>
#include <ATen/native/CPUFallback.h>

// The op structs of at::_ops (<ATen/ops/<name>_ops.h>), spelled as in
// <ATen/Operators.h>, which is too heavy to include for them.
#ifndef ATEN_OP
#define ATEN_OP2(op_name, overload) at::_ops::op_name##_##overload
#define ATEN_OP(op_name) at::_ops::op_name
#endif

namespace c10 {
class OperatorHandle;
}

namespace torch_mlu {

// The boxed fallback itself, registered for every op without an mlu kernel.
// Native kernels also call it for inputs they do not handle, e.g. complex,
// through cpu_fallback<Op>() below.
void mlu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The same for ops dispatched to the sparse COO and compressed (CSR, CSC, BSR,
// BSC) keys (Note [Sparse CPU fallback]).
void mlu_sparse_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
void mlu_sparse_csr_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Runs the aten op `Op` through the CPU fallback with these arguments, for
// inputs its native kernel does not handle:
//   return cpu_fallback<ATEN_OP2(hardswish, out)>(self, out);
// Op is an at::_ops struct (its header <ATen/ops/hardswish_ops.h>), which
// names the schema and gives the C++ signature, so neither is spelled here.
// cpu_fallback_symint takes the SymInt forms of SymInt parameters.
template <class Op, class... Args>
decltype(auto) cpu_fallback(Args&&... args) {
  return at::native::call_fallback_fn<&mlu_cpu_fallback, Op>::call(std::forward<Args>(args)...);
}
template <class Op, class... Args>
decltype(auto) cpu_fallback_symint(Args&&... args) {
  return at::native::call_fallback_fn_symint<&mlu_cpu_fallback, Op>::call(std::forward<Args>(args)...);
}

// cpu_fallback for ops dispatched to the sparse COO / compressed keys.
template <class Op, class... Args>
decltype(auto) sparse_cpu_fallback(Args&&... args) {
  return at::native::call_fallback_fn<&mlu_sparse_cpu_fallback, Op>::call(std::forward<Args>(args)...);
}
template <class Op, class... Args>
decltype(auto) sparse_csr_cpu_fallback(Args&&... args) {
  return at::native::call_fallback_fn<&mlu_sparse_csr_cpu_fallback, Op>::call(std::forward<Args>(args)...);
}

std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace torch_mlu
