// The ops that make, take apart or conjugate complex numbers on mlu: abs and
// angle of a complex tensor (a real result), conj_physical, torch.complex
// and torch.polar. Each builds the CPU's TensorIterator and runs one
// pointwise kernel computing in the complex type (Note [Complex pointwise]
// in kernels/src/pointwise/complex.cpp); the checks and messages are the
// CPU's (UnaryOps.cpp, TensorFactories.cpp in aten/src/ATen/native).
#include <ATen/ops/angle_ops.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/Fallback.h"
#include "csrc/aten/PointwiseLaunch.h"

namespace torch_mlu {
namespace {

using Op = PointwiseOp;
using T = const at::Tensor&;

at::Tensor& angle_out_mlu(T self, at::Tensor& result) {
  c10::OptionalDeviceGuard guard(self.device());
  if (self.is_complex() && !result.is_complex()) {
    if (!launch_complex_to_real(self, result, Op::Angle)) return cpu_fallback<ATEN_OP2(angle, out)>(self, result);
    return result;
  }
  auto iter =
      self.is_complex() ? at::TensorIterator::unary_op(result, self) : at::TensorIterator::unary_float_op(result, self);
  if (!launch_pointwise(iter, Op::Angle)) return cpu_fallback<ATEN_OP2(angle, out)>(self, result);
  return result;
}

at::Tensor angle_mlu(T self) {
  c10::OptionalDeviceGuard guard(self.device());
  if (self.is_complex()) {
    at::Tensor result = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
    return angle_out_mlu(self, result);
  }
  at::Tensor result;
  auto iter = at::TensorIterator::unary_float_op(result, self);
  if (!launch_pointwise(iter, Op::Angle)) return cpu_fallback<ATEN_OP(angle)>(self);
  return iter.output();
}

at::Tensor& conj_physical_out_mlu(T self, at::Tensor& result) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::unary_op(result, self);
  TORCH_CHECK(launch_pointwise(iter, self.is_complex() ? Op::Conj : Op::Copy), "conj_physical on mlu: no kernel for ",
              self.scalar_type());
  return result;
}

// complex_check_floating / complex_check_dtype of TensorFactories.cpp.
void check_complex_parts(T result, T a, T b) {
  const auto floating = [](at::ScalarType t) { return t == at::kFloat || t == at::kDouble || t == at::kHalf; };
  TORCH_CHECK(floating(a.scalar_type()) && floating(b.scalar_type()),
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(), " and ",
              b.scalar_type());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(result.scalar_type() == c10::toComplexType(a.scalar_type()), "Expected object of scalar type ",
              c10::toComplexType(a.scalar_type()), " but got scalar type ", result.scalar_type(),
              " for argument 'out'");
}

// torch.complex (op MakeComplex) and torch.polar: two real tensors into a
// complex one; complex32 (from Half) has no kernel and falls back to AtenOp
// (at::_ops::complex_out, polar_out) on the CPU.
template <class AtenOp>
at::Tensor& complex_from_parts(Op op, T a, T b, at::Tensor& result) {
  c10::OptionalDeviceGuard guard(a.device());
  check_complex_parts(result, a, b);
  auto iter = at::TensorIteratorConfig()
                  .add_output(result)
                  .add_const_input(a)
                  .add_const_input(b)
                  .check_all_same_dtype(false)
                  .build();
  if (!launch_pointwise(iter, op, {}, result.scalar_type())) return cpu_fallback<AtenOp>(a, b, result);
  return result;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ComplexOps.inc"
