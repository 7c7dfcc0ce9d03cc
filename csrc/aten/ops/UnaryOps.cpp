// Unary math on mlu: the structured unary ops, each one pointwise kernel
// over PyTorch's own TensorIterator (see StructuredPointwise.h), and the few
// unary ops that are not structured (abs, logical_not, nan_to_num, isnan, ...).
#include <ATen/ops/abs_ops.h>
#include <ATen/ops/acos_ops.h>
#include <ATen/ops/acosh_ops.h>
#include <ATen/ops/asin_ops.h>
#include <ATen/ops/asinh_ops.h>
#include <ATen/ops/atan_ops.h>
#include <ATen/ops/atanh_ops.h>
#include <ATen/ops/bitwise_not_ops.h>
#include <ATen/ops/ceil_ops.h>
#include <ATen/ops/cos_ops.h>
#include <ATen/ops/cosh_ops.h>
#include <ATen/ops/digamma_ops.h>
#include <ATen/ops/erf_ops.h>
#include <ATen/ops/erfc_ops.h>
#include <ATen/ops/erfinv_ops.h>
#include <ATen/ops/exp2_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/expm1_ops.h>
#include <ATen/ops/floor_ops.h>
#include <ATen/ops/frac_ops.h>
#include <ATen/ops/isneginf_ops.h>
#include <ATen/ops/isposinf_ops.h>
#include <ATen/ops/lgamma_ops.h>
#include <ATen/ops/log10_ops.h>
#include <ATen/ops/log1p_ops.h>
#include <ATen/ops/log2_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/logical_not_ops.h>
#include <ATen/ops/nan_to_num_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/reciprocal_ops.h>
#include <ATen/ops/round_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sgn_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sign_ops.h>
#include <ATen/ops/signbit_ops.h>
#include <ATen/ops/sin_ops.h>
#include <ATen/ops/sinc_ops.h>
#include <ATen/ops/sinh_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/tan_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/trunc_ops.h>
#include <limits>

#include <ATen/ops/abs_native.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/acosh_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/asinh_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/atanh_meta.h>
#include <ATen/ops/bitwise_not_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/digamma_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/erfinv_meta.h>
#include <ATen/ops/exp2_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/isneginf_meta.h>
#include <ATen/ops/isposinf_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sgn_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/signbit_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sinc_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/trunc_meta.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;

// Launches `op` over a TensorIterator built here (non-structured ops), or
// fails over to the CPU for dtypes without a kernel.
template <class Fallback>
at::Tensor& run_or_fallback(const at::TensorIteratorBase& iter, Op op, const OpParams& params, at::Tensor& out,
                            Fallback&& fallback, std::optional<at::ScalarType> compute = std::nullopt) {
  if (!launch_pointwise(iter, op, params, compute)) return fallback();
  return out;
}

at::Tensor& abs_out_mlu(const at::Tensor& self, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  if (self.is_complex() && !out.is_complex()) {
    if (!launch_complex_to_real(self, out, Op::Abs)) return cpu_fallback<ATEN_OP2(abs, out)>(self, out);
    return out;
  }
  auto iter = at::TensorIterator::unary_op(out, self);
  return run_or_fallback(iter, Op::Abs, {}, out,
                         [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(abs, out)>(self, out); });
}

at::Tensor& logical_not_out_mlu(const at::Tensor& self, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  return run_or_fallback(
      iter, Op::LogicalNot, {}, out,
      [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(logical_not, out)>(self, out); }, self.scalar_type());
}

// isnan: a kernel of its own instead of PyTorch's `self != self`.
at::Tensor isnan_mlu(const at::Tensor& self) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options().dtype(at::kBool));
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  if (!launch_pointwise(iter, Op::IsNan, {}, self.scalar_type())) return self.ne(self);
  return out;
}

at::Tensor& nan_to_num_out_mlu(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                               std::optional<double> neginf, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
    return out;
  }
  auto fallback = [&]() -> at::Tensor& {
    return cpu_fallback<ATEN_OP2(nan_to_num, out)>(self, nan, posinf, neginf, out);
  };
  if (self.is_complex()) return fallback();
  auto iter = at::TensorIterator::unary_op(out, self);
  OpParams params;
  params.f[0] = nan.value_or(0.0);
  // Infinities become the dtype's largest / lowest finite value by default.
  double max = std::numeric_limits<double>::max();
  switch (self.scalar_type()) {
    case at::kFloat:
      max = std::numeric_limits<float>::max();
      break;
    case at::kHalf:
      max = 65504.0;
      break;
    case at::kBFloat16:
      max = 3.3895313892515355e38;
      break;
    default:
      break;
  }
  params.f[1] = posinf.value_or(max);
  params.f[2] = neginf.value_or(-max);
  return run_or_fallback(iter, Op::NanToNum, params, out, fallback);
}

// pow(tensor, exponent) with a Float16 / BFloat16 result: the CPU rounds the
// exponent to that type, and for BFloat16 multiplies in it (PowScalar in the
// kernels' ops.h).
OpParams pow_scalar_params(const at::Tensor& self, const at::Scalar& exponent) {
  const at::ScalarType type = at::result_type(self, exponent);
  if (type == at::kHalf) return make_params({static_cast<double>(exponent.to<at::Half>())});
  if (type == at::kBFloat16) {
    OpParams params = make_params({static_cast<double>(exponent.to<at::BFloat16>())});
    params.i[0] = mlu::kernels::kStorageBFloat16;
    return params;
  }
  return make_params({exponent});
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/UnaryOps.inc"
