// Launching a pointwise kernel (mlu_kernels/pointwise.h) over a built
// TensorIterator, on the current stream of the iterator's device.
//
// The iterator's operands go to the kernel as they are: each keeps its own
// dtype and strides (the kernel converts while it loads and stores), so no
// temporary is made for type promotion or for an out= tensor of another
// dtype. A CPU scalar operand (a Python number or 0-dim CPU tensor) is read on
// the host and travels inside the task.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/TensorIterator.h>
#include <mlu_kernels/pointwise.h>

namespace torch_mlu {

using mlu::kernels::OpParams;
using mlu::kernels::PointwiseOp;

// Launches `op` over `iter`, computing in `compute` (default: the iterator's
// common dtype, else its first input's dtype). Returns false, launching
// nothing, when the kernel library has no kernel for that compute type
// (complex): the caller then takes the CPU fallback.
bool launch_pointwise(const at::TensorIteratorBase& iter, PointwiseOp op, const OpParams& params = {},
                      std::optional<at::ScalarType> compute = std::nullopt);

// The first branch of the CPU's unary_op_impl_with_complex_to_float_out: a
// complex `self` into a real `result` (abs, angle), which receives the real
// part of the complex computation, resized to self's shape as the CPU's copy
// does; the CPU's error where the real type cannot be cast to result's.
// False, launching nothing, for a dtype without kernels (ComplexHalf).
bool launch_complex_to_real(const at::Tensor& self, at::Tensor& result, PointwiseOp op);

// Note [The CPU's vector body and scalar loop]
// cpu_kernel_vec, the loop of most of the CPU's element-wise kernels, has a
// vector body and a scalar loop, which for Float16 / BFloat16 may round
// differently (add with alpha, i0e). TensorIterator::for_each splits the
// flat range of an iterator with at least GRAIN_SIZE elements into one chunk
// per OpenMP thread; within a chunk each row (the iterator's dim 0) runs the
// vector body over its largest multiple of 32 elements (AVX512: pairs of
// 32-lane vectors, then one more; AVX2: pairs of 16-lane vectors; measured on
// both kinds of host) and the scalar loop over the rest, when its operands
// are unit-strided along the row (or one input is broadcast along it), and
// the scalar loop over all of it otherwise. Without vector support (DEFAULT)
// every element takes the scalar loop.
//
// The length of the chunks of a flat range of n elements (n: one chunk).
int64_t cpu_loop_chunk(int64_t n);
// Whether the CPU has no vector body (capability DEFAULT).
bool cpu_loop_all_scalar();
// The [begin, end) ranges of a flat, unit-strided loop over n elements that
// the scalar loop computes.
std::vector<std::pair<int64_t, int64_t>> cpu_scalar_loop_ranges(int64_t n);

// OpParams holding `value` at index k, as double (f) and as int64 (i).
void set_param(OpParams& params, int k, const at::Scalar& value);
OpParams make_params(std::initializer_list<at::Scalar> values);

}  // namespace torch_mlu
