// Binary arithmetic, comparison, bitwise and logical ops on mlu: the
// structured ones through their meta functions (StructuredPointwise.h), the
// logical ops through TensorIterator::comparison_op as on the CPU.
#include <ATen/ops/add_meta.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/atan2_meta.h>
#include <ATen/ops/atan2_ops.h>
#include <ATen/ops/bitwise_and_meta.h>
#include <ATen/ops/bitwise_and_ops.h>
#include <ATen/ops/bitwise_left_shift_meta.h>
#include <ATen/ops/bitwise_left_shift_ops.h>
#include <ATen/ops/bitwise_or_meta.h>
#include <ATen/ops/bitwise_or_ops.h>
#include <ATen/ops/bitwise_right_shift_meta.h>
#include <ATen/ops/bitwise_right_shift_ops.h>
#include <ATen/ops/bitwise_xor_meta.h>
#include <ATen/ops/bitwise_xor_ops.h>
#include <ATen/ops/copysign_meta.h>
#include <ATen/ops/copysign_ops.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/eq_ops.h>
#include <ATen/ops/floor_divide_ops.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmax_ops.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/fmin_ops.h>
#include <ATen/ops/fmod_meta.h>
#include <ATen/ops/fmod_ops.h>
#include <ATen/ops/gcd_meta.h>
#include <ATen/ops/gcd_ops.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/ge_ops.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/gt_ops.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/heaviside_ops.h>
#include <ATen/ops/hypot_meta.h>
#include <ATen/ops/hypot_ops.h>
#include <ATen/ops/lcm_meta.h>
#include <ATen/ops/lcm_ops.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/le_ops.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp2_ops.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/logaddexp_ops.h>
#include <ATen/ops/logical_and_ops.h>
#include <ATen/ops/logical_or_ops.h>
#include <ATen/ops/logical_xor_ops.h>
#include <ATen/ops/lshift_ops.h>  // __lshift__
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/lt_ops.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/maximum_ops.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/minimum_ops.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/ne_ops.h>
#include <ATen/ops/nextafter_meta.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/nextafter_ops.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/remainder_ops.h>
#include <ATen/ops/rshift_ops.h>  // __rshift__
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/xlogy_meta.h>
#include <ATen/ops/xlogy_ops.h>

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


}  // namespace

TORCH_MLU_ATEN_IMPL(m) {
  m.impl("pow.Scalar", [](const at::Scalar& base, const at::Tensor& exponent) {
    c10::OptionalDeviceGuard guard(exponent.device());
    MLUFunctional<at::meta::structured_pow_Scalar> meta;
    meta.meta(base, exponent);
    pow_scalar_impl(base, exponent, meta.output());
    return std::move(meta.output());
  });
  m.impl("pow.Scalar_out", [](const at::Scalar& base, const at::Tensor& exponent, at::Tensor& out) -> at::Tensor& {
    c10::OptionalDeviceGuard guard(exponent.device());
    MLUOut<at::meta::structured_pow_Scalar> meta(out);
    meta.meta(base, exponent);
    pow_scalar_impl(base, exponent, meta.maybe_get_output(0));
    meta.finish();
    return out;
  });
  MLU_REGISTER_POINTWISE(m, add_Tensor, add_Tensor, add__Tensor, add_out, Op::Add, (alpha_params(self, other, alpha)),
                         (const at::Tensor& other, const at::Scalar& alpha), (other, alpha));
  MLU_REGISTER_POINTWISE(m, sub_Tensor, sub_Tensor, sub__Tensor, sub_out, Op::Sub, (alpha_params(self, other, alpha)),
                         (const at::Tensor& other, const at::Scalar& alpha), (other, alpha));
  MLU_REGISTER_BINARY(m, mul_Tensor, mul_Tensor, mul__Tensor, mul_out, Op::Mul);
  MLU_REGISTER_BINARY(m, div_Tensor, div_Tensor, div__Tensor, div_out, Op::Div);
  MLU_REGISTER_POINTWISE(m, div_Tensor_mode, div_Tensor_mode, div__Tensor_mode, div_out_mode,
                         div_op(rounding_mode), (storage_params(self, other)),
                         (const at::Tensor& other, std::optional<c10::string_view> rounding_mode),
                         (other, rounding_mode));
  MLU_REGISTER_BINARY(m, remainder_Tensor, remainder_Tensor, remainder__Tensor, remainder_Tensor_out,
                      Op::Remainder);
  MLU_REGISTER_BINARY(m, fmod_Tensor, fmod_Tensor, fmod__Tensor, fmod_Tensor_out, Op::Fmod);
  MLU_REGISTER_POINTWISE(m, pow_Tensor_Tensor, pow_Tensor_Tensor, pow__Tensor, pow_Tensor_Tensor_out,
                         Op::Pow, {}, (const at::Tensor& exponent), (exponent));
  MLU_REGISTER_BINARY(m, atan2, atan2, atan2_, atan2_out, Op::Atan2);
  MLU_REGISTER_BINARY(m, hypot, hypot, hypot_, hypot_out, Op::Hypot);
  MLU_REGISTER_BINARY(m, copysign_Tensor, copysign_Tensor, copysign__Tensor, copysign_out, Op::Copysign);
  MLU_REGISTER_POINTWISE(m, nextafter, nextafter, nextafter_, nextafter_out, Op::Nextafter,
                         (storage_params(self, other)), (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE(m, xlogy_Tensor, xlogy_Tensor, xlogy__Tensor, xlogy_OutTensor, Op::Xlogy,
                         (storage_params(self, other)), (const at::Tensor& other), (other));
  MLU_REGISTER_BINARY(m, heaviside, heaviside, heaviside_, heaviside_out, Op::Heaviside);
  MLU_REGISTER_BINARY(m, gcd, gcd, gcd_, gcd_out, Op::Gcd);
  MLU_REGISTER_BINARY(m, lcm, lcm, lcm_, lcm_out, Op::Lcm);
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, logaddexp, logaddexp, logaddexp_out, Op::Logaddexp, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, logaddexp2, logaddexp2, logaddexp2_out, Op::Logaddexp2, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, maximum, maximum, maximum_out, Op::Maximum, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, minimum, minimum, minimum_out, Op::Minimum, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, fmax, fmax, fmax_out, Op::Fmax, {}, (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, fmin, fmin, fmin_out, Op::Fmin, {}, (const at::Tensor& other), (other));

#define MLU_REGISTER_COMPARISON(name, OP)                                                                   \
  MLU_REGISTER_BINARY(m, name##_Tensor, name##_Tensor, name##__Tensor, name##_Tensor_out, OP);             \
  MLU_REGISTER_POINTWISE(m, name##_Scalar, name##_Scalar, name##__Scalar, name##_Scalar_out, OP, {},        \
                         (const at::Scalar& other), (other))
  MLU_REGISTER_COMPARISON(eq, Op::Eq);
  MLU_REGISTER_COMPARISON(ne, Op::Ne);
  MLU_REGISTER_COMPARISON(lt, Op::Lt);
  MLU_REGISTER_COMPARISON(le, Op::Le);
  MLU_REGISTER_COMPARISON(gt, Op::Gt);
  MLU_REGISTER_COMPARISON(ge, Op::Ge);
#undef MLU_REGISTER_COMPARISON

  MLU_REGISTER_BINARY(m, bitwise_and_Tensor, bitwise_and_Tensor, bitwise_and__Tensor, bitwise_and_Tensor_out,
                      Op::BitwiseAnd);
  MLU_REGISTER_BINARY(m, bitwise_or_Tensor, bitwise_or_Tensor, bitwise_or__Tensor, bitwise_or_Tensor_out,
                      Op::BitwiseOr);
  MLU_REGISTER_BINARY(m, bitwise_xor_Tensor, bitwise_xor_Tensor, bitwise_xor__Tensor, bitwise_xor_Tensor_out,
                      Op::BitwiseXor);
  MLU_REGISTER_BINARY(m, bitwise_left_shift_Tensor, bitwise_left_shift_Tensor, bitwise_left_shift__Tensor,
                      bitwise_left_shift_Tensor_out, Op::LeftShift);
  MLU_REGISTER_BINARY(m, bitwise_right_shift_Tensor, bitwise_right_shift_Tensor, bitwise_right_shift__Tensor,
                      bitwise_right_shift_Tensor_out, Op::RightShift);

  m.impl("floor_divide", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::DivFloor, ATEN_OP(floor_divide)>(self, other);
  });
  m.impl("floor_divide_.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::DivFloor, ATEN_OP2(floor_divide, out)>(self, other, self);
  });
  m.impl("floor_divide.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return binary_out<Op::DivFloor, ATEN_OP2(floor_divide, out)>(self, other, out);
  });
  m.impl("__lshift__.Tensor", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::LeftShift, ATEN_OP2(__lshift__, Tensor)>(self, other);
  });
  m.impl("__lshift__.Scalar", [](const at::Tensor& self, const at::Scalar& other) {
    return binary_functional<Op::LeftShift, ATEN_OP2(__lshift__, Tensor)>(self, wrap(other));
  });
  m.impl("__ilshift__.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::LeftShift, ATEN_OP2(bitwise_left_shift, Tensor_out)>(self, other, self);
  });
  m.impl("__ilshift__.Scalar", [](at::Tensor& self, const at::Scalar& other) -> at::Tensor& {
    return binary_out<Op::LeftShift, ATEN_OP2(bitwise_left_shift, Tensor_out)>(self, wrap(other), self);
  });
  m.impl("__rshift__.Tensor", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::RightShift, ATEN_OP2(__rshift__, Tensor)>(self, other);
  });
  m.impl("__rshift__.Scalar", [](const at::Tensor& self, const at::Scalar& other) {
    return binary_functional<Op::RightShift, ATEN_OP2(__rshift__, Tensor)>(self, wrap(other));
  });
  m.impl("__irshift__.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::RightShift, ATEN_OP2(bitwise_right_shift, Tensor_out)>(self, other, self);
  });
  m.impl("__irshift__.Scalar", [](at::Tensor& self, const at::Scalar& other) -> at::Tensor& {
    return binary_out<Op::RightShift, ATEN_OP2(bitwise_right_shift, Tensor_out)>(self, wrap(other), self);
  });
  m.impl("logical_and.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalAnd, ATEN_OP2(logical_and, out)>(self, other, out);
  });
  m.impl("logical_or.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalOr, ATEN_OP2(logical_or, out)>(self, other, out);
  });
  m.impl("logical_xor.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalXor, ATEN_OP2(logical_xor, out)>(self, other, out);
  });
}

}  // namespace torch_mlu
