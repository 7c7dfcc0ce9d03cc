// Binary arithmetic, comparison, bitwise and logical ops on mlu: the
// structured ones through their meta functions (StructuredPointwise.h), the
// logical ops through TensorIterator::comparison_op as on the CPU.
#include <ATen/ops/add_meta.h>
#include <ATen/ops/atan2_meta.h>
#include <ATen/ops/bitwise_and_meta.h>
#include <ATen/ops/bitwise_left_shift_meta.h>
#include <ATen/ops/bitwise_or_meta.h>
#include <ATen/ops/bitwise_right_shift_meta.h>
#include <ATen/ops/bitwise_xor_meta.h>
#include <ATen/ops/copysign_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/fmod_meta.h>
#include <ATen/ops/gcd_meta.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/hypot_meta.h>
#include <ATen/ops/lcm_meta.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/nextafter_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/xlogy_meta.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;

Op div_op(std::optional<c10::string_view> rounding_mode) {
  if (!rounding_mode.has_value()) return Op::Div;
  return *rounding_mode == "trunc" ? Op::DivTrunc : Op::DivFloor;  // meta rejected anything else
}

// logical_and/or/xor.out: a comparison iterator (bool or out's dtype) as on
// the CPU; the inputs are compared in their common dtype.
template <Op kOp>
at::Tensor& logical_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out, const char* schema) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::comparison_op(out, self, other);
  if (!launch_pointwise(iter, kOp)) {
    return cpu_fallback<at::Tensor&(const at::Tensor&, const at::Tensor&, at::Tensor&)>(schema, self, other, out);
  }
  return out;
}

// Non-structured binary ops (floor_divide, the shift operators): a
// TensorIterator::binary_op as the CPU kernels build it.
template <Op kOp>
at::Tensor& binary_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out, const char* schema) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::binary_op(out, self, other);
  if (!launch_pointwise(iter, kOp)) {
    return cpu_fallback<at::Tensor&(const at::Tensor&, const at::Tensor&, at::Tensor&)>(schema, self, other, out);
  }
  return out;
}

template <Op kOp>
at::Tensor binary_functional(const at::Tensor& self, const at::Tensor& other, const char* schema) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor out;
  auto iter = at::TensorIterator::binary_op(out, self, other);
  if (!launch_pointwise(iter, kOp)) {
    return cpu_fallback<at::Tensor(const at::Tensor&, const at::Tensor&)>(schema, self, other);
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
  return binary_out<Op::Pow>(wrap(base), exponent, result, "aten::pow.Tensor_Tensor_out");
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
  MLU_REGISTER_POINTWISE(m, add_Tensor, "add.Tensor", "add_.Tensor", "add.out", Op::Add, (make_params({alpha})),
                         (const at::Tensor& other, const at::Scalar& alpha), (other, alpha));
  MLU_REGISTER_POINTWISE(m, sub_Tensor, "sub.Tensor", "sub_.Tensor", "sub.out", Op::Sub, (make_params({alpha})),
                         (const at::Tensor& other, const at::Scalar& alpha), (other, alpha));
  MLU_REGISTER_BINARY(m, mul_Tensor, "mul.Tensor", "mul_.Tensor", "mul.out", Op::Mul);
  MLU_REGISTER_BINARY(m, div_Tensor, "div.Tensor", "div_.Tensor", "div.out", Op::Div);
  MLU_REGISTER_POINTWISE(m, div_Tensor_mode, "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode",
                         div_op(rounding_mode), {},
                         (const at::Tensor& other, std::optional<c10::string_view> rounding_mode),
                         (other, rounding_mode));
  MLU_REGISTER_BINARY(m, remainder_Tensor, "remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out",
                      Op::Remainder);
  MLU_REGISTER_BINARY(m, fmod_Tensor, "fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", Op::Fmod);
  MLU_REGISTER_POINTWISE(m, pow_Tensor_Tensor, "pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out",
                         Op::Pow, {}, (const at::Tensor& exponent), (exponent));
  MLU_REGISTER_BINARY(m, atan2, "atan2", "atan2_", "atan2.out", Op::Atan2);
  MLU_REGISTER_BINARY(m, hypot, "hypot", "hypot_", "hypot.out", Op::Hypot);
  MLU_REGISTER_BINARY(m, copysign_Tensor, "copysign.Tensor", "copysign_.Tensor", "copysign.out", Op::Copysign);
  MLU_REGISTER_BINARY(m, nextafter, "nextafter", "nextafter_", "nextafter.out", Op::Nextafter);
  MLU_REGISTER_BINARY(m, xlogy_Tensor, "xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor", Op::Xlogy);
  MLU_REGISTER_BINARY(m, heaviside, "heaviside", "heaviside_", "heaviside.out", Op::Heaviside);
  MLU_REGISTER_BINARY(m, gcd, "gcd", "gcd_", "gcd.out", Op::Gcd);
  MLU_REGISTER_BINARY(m, lcm, "lcm", "lcm_", "lcm.out", Op::Lcm);
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, logaddexp, "logaddexp", "logaddexp.out", Op::Logaddexp, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, logaddexp2, "logaddexp2", "logaddexp2.out", Op::Logaddexp2, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, maximum, "maximum", "maximum.out", Op::Maximum, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, minimum, "minimum", "minimum.out", Op::Minimum, {},
                                    (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, fmax, "fmax", "fmax.out", Op::Fmax, {}, (const at::Tensor& other), (other));
  MLU_REGISTER_POINTWISE_NO_INPLACE(m, fmin, "fmin", "fmin.out", Op::Fmin, {}, (const at::Tensor& other), (other));

#define MLU_REGISTER_COMPARISON(name, OP)                                                                   \
  MLU_REGISTER_BINARY(m, name##_Tensor, #name ".Tensor", #name "_.Tensor", #name ".Tensor_out", OP);        \
  MLU_REGISTER_POINTWISE(m, name##_Scalar, #name ".Scalar", #name "_.Scalar", #name ".Scalar_out", OP, {}, \
                         (const at::Scalar& other), (other))
  MLU_REGISTER_COMPARISON(eq, Op::Eq);
  MLU_REGISTER_COMPARISON(ne, Op::Ne);
  MLU_REGISTER_COMPARISON(lt, Op::Lt);
  MLU_REGISTER_COMPARISON(le, Op::Le);
  MLU_REGISTER_COMPARISON(gt, Op::Gt);
  MLU_REGISTER_COMPARISON(ge, Op::Ge);
#undef MLU_REGISTER_COMPARISON

  MLU_REGISTER_BINARY(m, bitwise_and_Tensor, "bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out",
                      Op::BitwiseAnd);
  MLU_REGISTER_BINARY(m, bitwise_or_Tensor, "bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out",
                      Op::BitwiseOr);
  MLU_REGISTER_BINARY(m, bitwise_xor_Tensor, "bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out",
                      Op::BitwiseXor);
  MLU_REGISTER_BINARY(m, bitwise_left_shift_Tensor, "bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor",
                      "bitwise_left_shift.Tensor_out", Op::LeftShift);
  MLU_REGISTER_BINARY(m, bitwise_right_shift_Tensor, "bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor",
                      "bitwise_right_shift.Tensor_out", Op::RightShift);

  m.impl("floor_divide", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::DivFloor>(self, other, "aten::floor_divide");
  });
  m.impl("floor_divide_.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::DivFloor>(self, other, self, "aten::floor_divide.out");
  });
  m.impl("floor_divide.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return binary_out<Op::DivFloor>(self, other, out, "aten::floor_divide.out");
  });
  m.impl("__lshift__.Tensor", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::LeftShift>(self, other, "aten::__lshift__.Tensor");
  });
  m.impl("__lshift__.Scalar", [](const at::Tensor& self, const at::Scalar& other) {
    return binary_functional<Op::LeftShift>(self, wrap(other), "aten::__lshift__.Tensor");
  });
  m.impl("__ilshift__.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::LeftShift>(self, other, self, "aten::bitwise_left_shift.Tensor_out");
  });
  m.impl("__ilshift__.Scalar", [](at::Tensor& self, const at::Scalar& other) -> at::Tensor& {
    return binary_out<Op::LeftShift>(self, wrap(other), self, "aten::bitwise_left_shift.Tensor_out");
  });
  m.impl("__rshift__.Tensor", [](const at::Tensor& self, const at::Tensor& other) {
    return binary_functional<Op::RightShift>(self, other, "aten::__rshift__.Tensor");
  });
  m.impl("__rshift__.Scalar", [](const at::Tensor& self, const at::Scalar& other) {
    return binary_functional<Op::RightShift>(self, wrap(other), "aten::__rshift__.Tensor");
  });
  m.impl("__irshift__.Tensor", [](at::Tensor& self, const at::Tensor& other) -> at::Tensor& {
    return binary_out<Op::RightShift>(self, other, self, "aten::bitwise_right_shift.Tensor_out");
  });
  m.impl("__irshift__.Scalar", [](at::Tensor& self, const at::Scalar& other) -> at::Tensor& {
    return binary_out<Op::RightShift>(self, wrap(other), self, "aten::bitwise_right_shift.Tensor_out");
  });
  m.impl("logical_and.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalAnd>(self, other, out, "aten::logical_and.out");
  });
  m.impl("logical_or.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalOr>(self, other, out, "aten::logical_or.out");
  });
  m.impl("logical_xor.out", [](const at::Tensor& self, const at::Tensor& other, at::Tensor& out) -> at::Tensor& {
    return logical_out<Op::LogicalXor>(self, other, out, "aten::logical_xor.out");
  });
}

}  // namespace torch_mlu
