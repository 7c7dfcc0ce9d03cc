// clamp (scalar and tensor bounds), lerp, addcmul, addcdiv and where on mlu.
#include <ATen/ExpandUtils.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/where_ops.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;

// clamp_mlu(self, min?, max?) with scalar bounds, as the CPU impl: a NaN bound
// makes every element NaN; one bound is clamp_min / clamp_max.
template <class Iter, class Fallback>
at::Tensor& clamp_impl(Iter& iter, at::OptionalScalarRef min, at::OptionalScalarRef max, at::Tensor& out,
                       Fallback&& fallback) {
  bool launched = true;
  if (min && max) {
    if (min.get().toDouble() != min.get().toDouble() || max.get().toDouble() != max.get().toDouble()) {
      out.fill_(std::numeric_limits<double>::quiet_NaN());
      return out;
    }
    launched = launch_pointwise(iter, Op::Clamp, make_params({min.get(), max.get()}));
  } else if (max) {
    launched = launch_pointwise(iter, Op::ClampMax, make_params({max.get()}));
  } else if (min) {
    launched = launch_pointwise(iter, Op::ClampMin, make_params({min.get()}));
  }
  return launched ? out : fallback();
}

at::Tensor clamp_mlu(const at::Tensor& self, const std::optional<at::Scalar>& min,
                     const std::optional<at::Scalar>& max) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<at::meta::structured_clamp> iter;
  const at::OptionalScalarRef lo = min ? at::OptionalScalarRef(&*min) : at::OptionalScalarRef();
  const at::OptionalScalarRef hi = max ? at::OptionalScalarRef(&*max) : at::OptionalScalarRef();
  iter.meta(self, lo, hi);
  at::Tensor& out = iter.output();
  return clamp_impl(iter, lo, hi, out, [&]() -> at::Tensor& {
    out = cpu_fallback<ATEN_OP(clamp)>(self, min, max);
    return out;
  });
}

at::Tensor& clamp__mlu(at::Tensor& self, const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUInplace<at::meta::structured_clamp> iter(self);
  const at::OptionalScalarRef lo = min ? at::OptionalScalarRef(&*min) : at::OptionalScalarRef();
  const at::OptionalScalarRef hi = max ? at::OptionalScalarRef(&*max) : at::OptionalScalarRef();
  iter.meta(self, lo, hi);
  return clamp_impl(iter, lo, hi, self, [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP(clamp_)>(self, min, max); });
}

at::Tensor& clamp_out_mlu(const at::Tensor& self, const std::optional<at::Scalar>& min,
                          const std::optional<at::Scalar>& max, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<at::meta::structured_clamp> iter(out);
  const at::OptionalScalarRef lo = min ? at::OptionalScalarRef(&*min) : at::OptionalScalarRef();
  const at::OptionalScalarRef hi = max ? at::OptionalScalarRef(&*max) : at::OptionalScalarRef();
  iter.meta(self, lo, hi);
  return clamp_impl(iter, lo, hi, out,
                    [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(clamp, out)>(self, min, max, out); });
}

// clamp with tensor bounds: the iterator holds the bounds that are given.
Op clamp_tensor_op(const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max) {
  const bool lo = min.has_value() && min->defined(), hi = max.has_value() && max->defined();
  return lo && hi ? Op::ClampTensor : (lo ? Op::ClampMinTensor : Op::ClampMaxTensor);
}

at::OptionalTensorRef ref_of(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? at::OptionalTensorRef(*t) : at::OptionalTensorRef();
}

at::Tensor clamp_tensor_mlu(const at::Tensor& self, const std::optional<at::Tensor>& min,
                            const std::optional<at::Tensor>& max) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<at::meta::structured_clamp_Tensor> iter;
  iter.meta(self, ref_of(min), ref_of(max));
  if (!launch_pointwise(iter, clamp_tensor_op(min, max))) {
    return cpu_fallback<ATEN_OP2(clamp, Tensor)>(self, min, max);
  }
  return std::move(iter.output());
}

at::Tensor& clamp_tensor__mlu(at::Tensor& self, const std::optional<at::Tensor>& min,
                              const std::optional<at::Tensor>& max) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUInplace<at::meta::structured_clamp_Tensor> iter(self);
  iter.meta(self, ref_of(min), ref_of(max));
  if (!launch_pointwise(iter, clamp_tensor_op(min, max))) {
    return cpu_fallback<ATEN_OP2(clamp_, Tensor)>(self, min, max);
  }
  return self;
}

at::Tensor& clamp_tensor_out_mlu(const at::Tensor& self, const std::optional<at::Tensor>& min,
                                 const std::optional<at::Tensor>& max, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<at::meta::structured_clamp_Tensor> iter(out);
  iter.meta(self, ref_of(min), ref_of(max));
  if (!launch_pointwise(iter, clamp_tensor_op(min, max))) {
    return cpu_fallback<ATEN_OP2(clamp, Tensor_out)>(self, min, max, out);
  }
  return out;
}

// where_mlu(condition, self, other): as where_self_out on the CPU, except that
// self and other are not converted up front (the kernel converts on load).
at::Tensor& where_out_mlu(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                          at::Tensor& out) {
  const auto result_type = at::native::result_type(self, other);
  TORCH_CHECK(out.scalar_type() == result_type, "Expected out type to be ", result_type, " but got ",
              out.scalar_type());
  TORCH_CHECK(out.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found out= on ", out.device(), " and inputs on mlu");
  c10::OptionalDeviceGuard guard(out.device());
  at::Tensor condition_ = condition, self_ = self, other_ = other;
  const auto device = out.device();
  if (condition.device() != device && condition.dim() == 0) condition_ = condition.to(device);
  if (self_.device() != device && self_.dim() == 0) self_ = self_.to(device);
  if (other_.device() != device && other_.dim() == 0) other_ = other_.to(device);
  if (condition_.scalar_type() == at::kByte) {
    TORCH_WARN_ONCE(
        "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
        "future version of PyTorch. Use a boolean condition instead.");
    condition_ = condition_.to(at::kBool);
  }
  TORCH_CHECK(condition_.scalar_type() == at::kBool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition_.scalar_type());
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .add_output(out)
                  .add_const_input(condition_)
                  .add_const_input(self_)
                  .add_const_input(other_)
                  .build();
  if (!launch_pointwise(iter, Op::Where, {}, result_type)) {
    return cpu_fallback<ATEN_OP2(where, self_out)>(condition, self, other, out);
  }
  return out;
}

at::Tensor where_mlu(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const auto result_type = at::native::result_type(self, other);
  const c10::Device device = condition.device().type() == c10::DeviceType::PrivateUse1 ? condition.device()
                             : self.device().type() == c10::DeviceType::PrivateUse1    ? self.device()
                                                                                       : other.device();
  at::Tensor out = at::empty({0}, self.options().dtype(result_type).device(device));
  return where_out_mlu(condition, self, other, out);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/TernaryOps.inc"
