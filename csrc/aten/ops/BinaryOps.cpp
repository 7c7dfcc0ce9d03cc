// Binary arithmetic, comparison, bitwise and logical ops on mlu: the
// structured ones through their meta functions (StructuredPointwise.h), the
// logical ops through TensorIterator::comparison_op as on the CPU.
#include <ATen/TensorIterator.h>
#include <ATen/Version.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <ATen/ops/add.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/scalar_tensor.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;

// The storage type of a 16-bit result, for the ops whose CPU kernels round an
// intermediate to it: nextafter steps in its bits, xlogy rounds log(y), div
// with rounding_mode rounds the quotient (trunc) or every step (floor) (Notes
// [nextafter in 16 bits], [xlogy in 16 bits], [Division rounding in 16 bits]
// in the kernels' pointwise ops).
OpParams storage_params(const at::Tensor& self, const at::Tensor& other) {
  OpParams params;
  const at::ScalarType type = at::result_type(self, other);
  params.i[0] = type == at::kBFloat16 ? mlu::kernels::kStorageBFloat16
                : type == at::kHalf   ? mlu::kernels::kStorageHalf
                                      : 0;
  return params;
}

// add/sub's alpha: a Float16 / BFloat16 computation reads it rounded to its
// own type, as the CPU's kernels do (Note [16-bit scalars narrowed as on the
// CPU] in PointwiseLaunch.cpp).
OpParams alpha_params(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  const at::ScalarType type = at::result_type(self, other);
  if (type == at::kHalf) return make_params({static_cast<double>(alpha.to<at::Half>())});
  if (type == at::kBFloat16) return make_params({static_cast<double>(alpha.to<at::BFloat16>())});
  return make_params({alpha});
}

// Note [add with alpha as the CPU rounds]
// The CPU's add / sub kernel (add_kernel: self + alpha * other, sub passing
// -alpha) has a vector body that computes in float with one fused
// multiply-add and rounds once, and a scalar loop for the rest that works in
// the 16-bit type's own arithmetic: round(self + round(alpha * other)). Which
// elements take which follows TensorIterator's loops. For operands that are
// contiguous and of the output's shape, or broadcast single elements, the flat
// range is split into one chunk per OpenMP thread (when it has at least
// GRAIN_SIZE elements), and each chunk runs the vector body over its largest
// multiple of 32 elements (AVX512: pairs of 32-lane vectors, then one more;
// AVX2: pairs of 16-lane vectors only, measured on both kinds of host) and
// the scalar loop over the rest; without vector
// support (DEFAULT) every element rounds twice. mlu's kernel rounds once everywhere, so for Float16 / BFloat16
// and an alpha whose products are not exact (not 0 or +-1) the elements of
// the CPU's scalar loop are computed its way beforehand (ScalarLoopPatch, on
// the same stream, so in-place and aliasing outputs read the inputs as they
// were) and written over the kernel's results. Other layouts keep the single
// rounding.
struct ScalarLoopPatch {
  bool whole = false;  // every element takes the scalar loop: values[0] is the whole result
  std::vector<std::pair<int64_t, int64_t>> ranges;  // else [begin, end) in the output's memory order
  std::vector<at::Tensor> values;
};

// How the CPU's add_kernel loops over these operands, from a TensorIterator
// built as its meta function builds one, on meta tensors of the same sizes
// and strides: one coalesced loop that vectorizes (all operands dense in one
// order, or a broadcast single element beside them), rows that never
// vectorize (an operand strided along the inner dim: every element takes the
// scalar loop), or anything else.
enum class CpuLoop { Coalesced, AllScalar, Other };

CpuLoop cpu_loop(const at::Tensor& self, const at::Tensor& other, const at::Tensor* out, at::ScalarType type) {
  const auto meta = [](const at::Tensor& t) {
    return t.is_cpu() ? t : at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
  };
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false)
      .add_owned_output(out != nullptr && out->defined() ? meta(*out) : at::Tensor())
      .add_owned_const_input(meta(self))
      .add_owned_const_input(meta(other))
      .allow_cpu_scalars(true)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true);
  const at::TensorIterator iter = config.build();
  if (iter.numel() <= 1 || iter.ndim() == 0) return CpuLoop::Coalesced;
  const int64_t element = static_cast<int64_t>(c10::elementSize(type));
  const int64_t inner[3] = {iter.strides(0)[0], iter.strides(1)[0], iter.strides(2)[0]};
  const bool dense = inner[0] == element && inner[1] == element && inner[2] == element;
  const bool one_broadcast =
      inner[0] == element && ((inner[1] == 0 && inner[2] == element) || (inner[1] == element && inner[2] == 0));
  if (!dense && !one_broadcast) return CpuLoop::AllScalar;
  return iter.ndim() == 1 ? CpuLoop::Coalesced : CpuLoop::Other;
}

std::optional<ScalarLoopPatch> scalar_loop_patch(const at::Tensor& self, const at::Tensor& other,
                                                 const at::Scalar& alpha, bool negate, const at::Tensor* out) {
  const at::ScalarType type = at::result_type(self, other);
  if (type != at::kHalf && type != at::kBFloat16) return std::nullopt;
  // Operands on one mlu device, or a 0-dim CPU tensor (a Python scalar) beside one.
  const at::Tensor& device_operand = self.is_cpu() ? other : self;
  if (device_operand.device().type() != c10::DeviceType::PrivateUse1) return std::nullopt;
  for (const at::Tensor* t : {&self, &other}) {
    if (t->device() != device_operand.device() && !(t->is_cpu() && t->dim() == 0)) return std::nullopt;
  }
  if (out != nullptr && out->defined() && out->scalar_type() != type) return std::nullopt;
  const double a = (negate ? -1.0 : 1.0) * (type == at::kHalf ? static_cast<double>(alpha.to<at::Half>())
                                                              : static_cast<double>(alpha.to<at::BFloat16>()));
  if (a == 0 || a == 1 || a == -1) return std::nullopt;
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), other.sizes());
  if (out != nullptr && out->defined() && out->sizes().vec() != shape) return std::nullopt;  // resized: a new layout
  const CpuLoop loop = cpu_loop(self, other, out, type);
  if (loop == CpuLoop::Other) return std::nullopt;
  const at::Tensor factor = at::scalar_tensor(a, device_operand.options().dtype(type));
  ScalarLoopPatch patch;
  if (loop == CpuLoop::AllScalar) {
    patch.whole = true;
    patch.values.push_back(at::add(self.to(type), at::mul(other.to(type), factor)));
    return patch;
  }
  // One coalesced loop: every operand is dense (or a single element), its
  // elements visited in memory order.
  const at::Tensor typed_self = self.to(type), typed_other = other.to(type);  // once, not per range
  const auto slice = [&](const at::Tensor& t, int64_t begin, int64_t end) {
    return t.numel() == 1 ? t.reshape({}) : t.as_strided({end - begin}, {1}, t.storage_offset() + begin);
  };
  patch.ranges = cpu_scalar_loop_ranges(c10::multiply_integers(shape));  // PointwiseLaunch.h
  for (const auto& [begin, end] : patch.ranges) {
    patch.values.push_back(at::add(slice(typed_self, begin, end), at::mul(slice(typed_other, begin, end), factor)));
  }
  return patch;
}

void apply_patch(const std::optional<ScalarLoopPatch>& patch, const at::Tensor& result) {
  if (!patch.has_value()) return;
  if (patch->whole) {
    result.copy_(patch->values[0]);
    return;
  }
  for (size_t i = 0; i < patch->ranges.size(); ++i) {
    const auto [begin, end] = patch->ranges[i];
    result.as_strided({end - begin}, {1}, result.storage_offset() + begin).copy_(patch->values[i]);
  }
}

Op div_op(std::optional<c10::string_view> rounding_mode) {
  if (!rounding_mode.has_value()) return Op::Div;
  return *rounding_mode == "trunc" ? Op::DivTrunc : Op::DivFloor;  // meta rejected anything else
}

// logical_and/or/xor.out: a comparison iterator (bool or out's dtype) as on
// the CPU; the inputs are compared in their common dtype.
template <Op kOp, class AtenOp>  // AtenOp: what falls back (Fallback.h)
at::Tensor& logical_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::comparison_op(out, self, other);
  if (!launch_pointwise(iter, kOp)) {
    return cpu_fallback<AtenOp>(self, other, out);
  }
  return out;
}

// Non-structured binary ops (floor_divide, the shift operators): a
// TensorIterator::binary_op as the CPU kernels build it.
template <Op kOp, class AtenOp>  // AtenOp: what falls back (Fallback.h)
at::Tensor& binary_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::binary_op(out, self, other);
  if (!launch_pointwise(iter, kOp, storage_params(self, other))) {
    return cpu_fallback<AtenOp>(self, other, out);
  }
  return out;
}

template <Op kOp, class AtenOp>  // AtenOp: what falls back (Fallback.h)
at::Tensor binary_functional(const at::Tensor& self, const at::Tensor& other) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor out;
  auto iter = at::TensorIterator::binary_op(out, self, other);
  if (!launch_pointwise(iter, kOp, storage_params(self, other))) {
    return cpu_fallback<AtenOp>(self, other);
  }
  return iter.output();
}

at::Tensor wrap(const at::Scalar& s) {
  at::Tensor t = at::scalar_tensor(s, at::TensorOptions().dtype(s.type()));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// pow.Scalar (a number raised to a tensor): its meta sizes the result, then
// the CPU's impl: ones for a base of 1, otherwise pow of the wrapped number.
at::Tensor& pow_scalar_impl(const at::Scalar& base, const at::Tensor& exponent, const at::Tensor& out) {
  at::Tensor& result = const_cast<at::Tensor&>(out);
  if (base.equal(1.0)) return result.fill_(1);
  return binary_out<Op::Pow, ATEN_OP2(pow, Tensor_Tensor_out)>(wrap(base), exponent, result);
}

// add / sub (Tensor, Tensor, alpha): the structured op, then Note [add with
// alpha as the CPU rounds]. Meta: the op's meta class; AtenOp: what falls back
// (Fallback.h); kernel_op and kernel_negate: the kernel, and the sign of alpha
// it computes with.
template <class Meta, class AtenOp>
at::Tensor add_sub_mlu(Op kernel_op, bool kernel_negate, const at::Tensor& self, const at::Tensor& other,
                       const at::Scalar& alpha) {
  const auto patch = scalar_loop_patch(self, other, alpha, kernel_negate, nullptr);
  at::Tensor result = pointwise_functional<Meta>(
      kernel_op, alpha_params(self, other, alpha), [&] { return cpu_fallback<AtenOp>(self, other, alpha); }, self,
      other, alpha);
  apply_patch(patch, result);
  return result;
}

template <class Meta, class AtenOp>
at::Tensor& add_sub__mlu(Op kernel_op, bool kernel_negate, at::Tensor& self, const at::Tensor& other,
                         const at::Scalar& alpha) {
  const auto patch = scalar_loop_patch(self, other, alpha, kernel_negate, &self);
  pointwise_inplace<Meta>(
      kernel_op, alpha_params(self, other, alpha),
      [&]() -> at::Tensor& { return cpu_fallback<AtenOp>(self, other, alpha); }, self, other, alpha);
  apply_patch(patch, self);
  return self;
}

template <class Meta, class AtenOp>
at::Tensor& add_sub_out_mlu(Op kernel_op, bool kernel_negate, const at::Tensor& self, const at::Tensor& other,
                            const at::Scalar& alpha, at::Tensor& out) {
  const auto patch = scalar_loop_patch(self, other, alpha, kernel_negate, &out);
  pointwise_out<Meta>(
      kernel_op, alpha_params(self, other, alpha),
      [&]() -> at::Tensor& { return cpu_fallback<AtenOp>(self, other, alpha, out); }, out, self, other, alpha);
  apply_patch(patch, out);
  return out;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/BinaryOps.inc"
