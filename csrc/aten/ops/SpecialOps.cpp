// The special functions on mlu: i0, igamma(c), polygamma and the structured
// torch.special ops, each one pointwise kernel (src/pointwise/special_ops.h of
// the kernel library) over PyTorch's own meta and TensorIterator. Ops the CPU
// defines for float and double only (kinds W in the kernels' catalogue) send
// 16-bit inputs to the CPU fallback, which raises the CPU's error.
#include <utility>
#include <vector>

#include <ATen/ops/polygamma_meta.h>
#include <ATen/ops/polygamma_ops.h>
#include <ATen/ops/special_i0e_meta.h>
#include <ATen/ops/special_i0e_ops.h>
#include <ATen/ops/result_type.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;

// The storage type of a 16-bit input, for entr's intermediate rounding.
OpParams storage_params(const at::Tensor& self) {
  OpParams params;
  params.i[0] = self.scalar_type() == at::kBFloat16 ? mlu::kernels::kStorageBFloat16
                : self.scalar_type() == at::kHalf   ? mlu::kernels::kStorageHalf
                                                    : 0;
  return params;
}

// The storage type of a 16-bit common dtype (xlog1py's rounded log1p, i0e's
// scalar loop), else 0.
OpParams storage_params(at::ScalarType type) {
  OpParams params;
  params.i[0] = type == at::kBFloat16 ? mlu::kernels::kStorageBFloat16
                : type == at::kHalf   ? mlu::kernels::kStorageHalf
                                      : 0;
  return params;
}

// xlog1py computes in the operands' result type (a Python scalar is a
// wrapped number, which does not promote).
OpParams storage_params(const at::Tensor& self, const at::Tensor& other) {
  return storage_params(at::result_type(self, other));
}

// Note [i0e's scalar loop]
// The CPU's i0e rounds a Float16 / BFloat16 element one way in cpu_kernel_vec's
// vector body and another in its scalar loop (Note [i0e in 16 bits] in the
// kernels' special_ops.h); which elements take the scalar loop follows Note
// [The CPU's vector body and scalar loop] (PointwiseLaunch.h). The kernel
// computes the vector body's values; the scalar loop's are computed before
// it (so an out= aliasing self reads self as it was) and copied over them:
// for one row, the ranges of cpu_scalar_loop_ranges; for several rows whose
// chunks hold whole rows, the last (row length % 32) elements of every row.
// A row that is not unit-strided, shorter than 32, or a CPU without vector
// body puts every element in the scalar loop (one launch, no patch). Rows
// split between two threads' chunks (an iterator of several rows and at
// least GRAIN_SIZE elements) keep the vector body's values.
struct ScalarLoopPatch {
  bool whole = false;                                    // every element takes the scalar loop
  std::vector<std::pair<at::Tensor, at::Tensor>> parts;  // (destination view, its scalar-loop values)
};

// Operand `arg` of `iter` as the iterator walks it: dims slowest first, the
// row last.
at::Tensor loop_view(const at::TensorIteratorBase& iter, int arg) {
  const at::Tensor& t = iter.tensor(arg);
  const int64_t element = iter.element_size(arg);
  std::vector<int64_t> sizes, strides;
  for (int d = iter.ndim() - 1; d >= 0; --d) {
    sizes.push_back(iter.shape()[d]);
    strides.push_back(iter.strides(arg)[d] / element);
  }
  return t.as_strided(sizes, strides, t.storage_offset());
}

// i0e of `src` computed as the CPU's scalar loop computes it.
at::Tensor i0e_scalar_loop_values(const at::Tensor& src) {
  at::Tensor values;
  auto iter = at::TensorIterator::unary_float_op(values, src);
  TORCH_INTERNAL_ASSERT(launch_pointwise(iter, Op::I0e, storage_params(src.scalar_type())));
  return iter.output();
}

ScalarLoopPatch i0e_scalar_loop(const at::TensorIteratorBase& iter) {
  ScalarLoopPatch patch;
  const at::ScalarType type = iter.common_dtype();
  if (type != at::kHalf && type != at::kBFloat16) return patch;
  // An out= of another dtype: the CPU computes into a temporary of the
  // common dtype, laid out as it likes; left to the vector body's values.
  if (iter.dtype(0) != type || iter.dtype(1) != type || iter.numel() == 0) return patch;
  const int64_t element = static_cast<int64_t>(c10::elementSize(type));
  const int64_t n = iter.numel();
  const int64_t row = iter.ndim() == 0 ? 1 : iter.shape()[0];
  const bool unit =
      iter.ndim() > 0 && iter.strides(0)[0] == element && (iter.strides(1)[0] == element || iter.strides(1)[0] == 0);
  constexpr int64_t width = 32;  // Note [The CPU's vector body and scalar loop]
  if (cpu_loop_all_scalar() || !unit || row < width) {
    patch.whole = true;
    return patch;
  }
  const at::Tensor src = loop_view(iter, 1), dst = loop_view(iter, 0);
  if (row == n) {  // one row
    for (const auto& [begin, end] : cpu_scalar_loop_ranges(n)) {
      patch.parts.emplace_back(dst.slice(0, begin, end), i0e_scalar_loop_values(src.slice(0, begin, end)));
    }
    return patch;
  }
  const int64_t chunk = cpu_loop_chunk(n);
  if (chunk < n && chunk % row != 0) return patch;  // rows split between threads: not reproduced
  const int64_t tail = row % width;
  if (tail == 0) return patch;
  const int64_t last = src.dim() - 1;
  patch.parts.emplace_back(dst.slice(last, row - tail, row), i0e_scalar_loop_values(src.slice(last, row - tail, row)));
  return patch;
}

// special_i0e's impl: PointwiseOp::I0e over the structured iterator, with the
// CPU's scalar loop reproduced for 16-bit types (Note [i0e's scalar loop]).
bool launch_i0e(const at::TensorIteratorBase& iter) {
  const ScalarLoopPatch patch = i0e_scalar_loop(iter);
  if (patch.whole) return launch_pointwise(iter, Op::I0e, storage_params(iter.common_dtype()));
  if (!launch_pointwise(iter, Op::I0e)) return false;
  for (const auto& [destination, values] : patch.parts) destination.copy_(values);
  return true;
}

at::Tensor special_i0e_mlu(const at::Tensor& self) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<at::meta::structured_special_i0e> iter;
  iter.meta(self);
  if (!launch_i0e(iter)) return cpu_fallback<ATEN_OP(special_i0e)>(self);
  return std::move(iter.output());
}

at::Tensor& special_i0e_out_mlu(const at::Tensor& self, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<at::meta::structured_special_i0e> iter(out);
  iter.meta(self);
  if (!launch_i0e(iter)) return cpu_fallback<ATEN_OP(special_i0e_out)>(self, out);
  return out;
}

// polygamma(n, self): n = 0 is digamma; n >= 1 reads n from i[0].
OpParams polygamma_params(int64_t n) {
  OpParams params;
  params.i[0] = n;
  return params;
}
Op polygamma_op(int64_t n) { return n == 0 ? Op::Digamma : Op::Polygamma; }

at::Tensor polygamma_mlu(int64_t n, const at::Tensor& self) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<at::meta::structured_polygamma> iter;
  iter.meta(n, self);
  if (!launch_pointwise(iter, polygamma_op(n), polygamma_params(n))) {
    return cpu_fallback<ATEN_OP(polygamma)>(n, self);
  }
  return std::move(iter.output());
}

at::Tensor& polygamma_out_mlu(int64_t n, const at::Tensor& self, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<at::meta::structured_polygamma> iter(out);
  iter.meta(n, self);
  if (!launch_pointwise(iter, polygamma_op(n), polygamma_params(n))) {
    return cpu_fallback<ATEN_OP(polygamma_out)>(n, self, out);
  }
  return out;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SpecialOps.inc"
