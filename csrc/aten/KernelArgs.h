// Translating at::Tensor metadata into the kernel library's arguments
// (launching: csrc/core/MLULaunch.h).
//
// A kernel closure captures raw pointers and by-value shape/stride arrays
// (mlu::kernels::Shape/Strides), never at::Tensor: tensors may be resized or
// freed by the host before the task runs, while the memory itself stays valid
// because a freed block is reused only in stream order (Note
// [Stream-ordered reuse] in csrc/core/MLUCachingAllocator.h).
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <mlu_kernels/dtype.h>
#include <mlu_kernels/layout.h>
#include <mlu_kernels/pointwise.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLULaunch.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

// The kernel library's dtype for `type`, if it has one.
std::optional<mlu::kernels::ScalarType> kernel_dtype(at::ScalarType type);
// Whether the element-wise/indexing kernels take t's dtype (not complex).
inline bool has_kernel(const at::Tensor& t) { return !t.is_complex() && kernel_dtype(t.scalar_type()).has_value(); }
// Note [Complex elements moved as bits]
// Kernels that only move elements (gathers, index_put without accumulation,
// masked_select, nonzero's test against zero) copy them by their size or
// convert them to bool, so they take complex64 / complex128 as they are;
// arithmetic kernels do not (has_kernel). Ops that add or fill complex
// elements work on the real and imaginary planes (at::real / at::imag
// views, or view_as_real) with the real kernels.
inline bool has_move_kernel(const at::Tensor& t) { return kernel_dtype(t.scalar_type()).has_value(); }
// Like kernel_dtype, but throws a clear error naming `op` when unsupported.
mlu::kernels::ScalarType require_kernel_dtype(at::ScalarType type, const char* op);
// kernel_dtype and the float8 types, which the kernels only copy, convert
// and fill (Note [Storage-only types] in kernels/src/common/dispatch.h):
// for copy_, fill_, flip and the ops that convert float8 operands first.
// Every other op maps with kernel_dtype, so float8 reaches the CPU fallback.
std::optional<mlu::kernels::ScalarType> storage_dtype(at::ScalarType type);
mlu::kernels::ScalarType require_storage_dtype(at::ScalarType type, const char* op);
// storage_dtype and, for ops that move bits unchanged (a copy between equal
// dtypes, fill_ with a value converted on the host), the unsigned types
// PyTorch supports only barely (uint16, uint32, uint64) as the signed kernel
// type of their width. A converting copy of those types is refused.
std::optional<mlu::kernels::ScalarType> bits_dtype(at::ScalarType type);
mlu::kernels::ScalarType require_bits_dtype(at::ScalarType type, const char* op);

mlu::kernels::Shape kernel_shape(const at::Tensor& t);
// t's strides (zero beyond t.dim()).
mlu::kernels::Strides kernel_strides(const at::Tensor& t);

// t as a kernel operand: its data, the kernels' dtype for it (an error
// naming `op` where there is none) and its strides, or `strides` (t's,
// permuted or regrouped by the caller).
mlu::kernels::Operand kernel_operand(const at::Tensor& t, const char* op);
mlu::kernels::Operand kernel_operand(const at::Tensor& t, const mlu::kernels::Strides& strides, const char* op);

// Note [Collapsed dims]
// The kernels take at most kMaxDims dims (PyTorch allows more). A shape seen
// through one or two stride vectors loses nothing when size-1 dims are dropped
// and neighbouring dims d, d+1 are merged wherever every stride vector has
// stride[d] == stride[d+1] * size[d+1]: the elements are visited in the same
// row-major order. That is how deeper tensors reach the kernels; only a shape
// with more than kMaxDims unmergeable dims is refused (a clear error).
struct Collapsed {
  mlu::kernels::Shape shape;
  mlu::kernels::Strides first, second;
};
Collapsed collapse_dims(at::IntArrayRef sizes, at::IntArrayRef first, at::IntArrayRef second);
// Like collapse_dims, but nullopt instead of the error.
std::optional<Collapsed> try_collapse_dims(at::IntArrayRef sizes, at::IntArrayRef first, at::IntArrayRef second);
// kernel_shape/kernel_strides of t, collapsed when t is deeper than the kernels take.
Collapsed kernel_layout(const at::Tensor& t);
// The same for two tensors of one shape.
Collapsed kernel_layout(const at::Tensor& first, const at::Tensor& second);

}  // namespace torch_mlu
