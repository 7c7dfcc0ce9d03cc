// Activation functions and their backward ops on mlu.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/hardswish_ops.h>
#include <ATen/ops/hardtanh_backward_ops.h>
#include <ATen/ops/hardtanh_ops.h>
#include <ATen/ops/logit_ops.h>
#include <ATen/ops/softplus.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

using Op = PointwiseOp;

bool gelu_is_tanh(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}
Op gelu_op(c10::string_view approximate) { return gelu_is_tanh(approximate) ? Op::GeluTanh : Op::Gelu; }
Op gelu_backward_op(c10::string_view approximate) {
  return gelu_is_tanh(approximate) ? Op::GeluTanhBackward : Op::GeluBackward;
}

OpParams eps_params(std::optional<double> eps) {
  OpParams p;
  p.f[0] = eps.value_or(-1.0);
  return p;
}

// logit's: eps, rounded to a 16-bit common dtype with the storage type in
// i[0] (Note [logit in 16 bits] in the kernels' ops.h).
OpParams logit_params(std::optional<double> eps, at::ScalarType type) {
  OpParams p = eps_params(eps);
  if (type == at::kBFloat16) {
    p.f[0] = static_cast<double>(static_cast<at::BFloat16>(p.f[0]));
    p.i[0] = mlu::kernels::kStorageBFloat16;
  } else if (type == at::kHalf) {
    p.f[0] = static_cast<double>(static_cast<at::Half>(p.f[0]));
    p.i[0] = mlu::kernels::kStorageHalf;
  }
  return p;
}

// Non-structured ops: an iterator built here, as the CPU kernel builds it.
template <class Fallback>
at::Tensor& launch_or(const at::TensorIteratorBase& iter, Op op, const OpParams& params, at::Tensor& out,
                      Fallback&& fallback) {
  if (!launch_pointwise(iter, op, params)) return fallback();
  return out;
}

at::Tensor& hardtanh_out_mlu(const at::Tensor& self, const at::Scalar& min, const at::Scalar& max, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_or(iter, Op::Clamp, make_params({min, max}), out,
                   [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(hardtanh, out)>(self, min, max, out); });
}

at::Tensor hardtanh_mlu(const at::Tensor& self, const at::Scalar& min, const at::Scalar& max) {
  at::Tensor out = at::empty({0}, self.options());
  return hardtanh_out_mlu(self, min, max, out);
}

at::Tensor& hardtanh__mlu(at::Tensor& self, const at::Scalar& min, const at::Scalar& max) {
  return hardtanh_out_mlu(self, min, max, self);
}

at::Tensor& hardtanh_backward_out_mlu(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& min,
                                      const at::Scalar& max, at::Tensor& grad_input) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  return launch_or(iter, Op::HardtanhBackward, make_params({min, max}), grad_input, [&]() -> at::Tensor& {
    return cpu_fallback<ATEN_OP2(hardtanh_backward, grad_input)>(grad, self, min, max, grad_input);
  });
}

at::Tensor hardtanh_backward_mlu(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& min,
                                 const at::Scalar& max) {
  at::Tensor grad_input;
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  if (!launch_pointwise(iter, Op::HardtanhBackward, make_params({min, max}))) {
    return cpu_fallback<ATEN_OP(hardtanh_backward)>(grad, self, min, max);
  }
  return iter.output();
}

at::Tensor& hardswish_out_mlu(const at::Tensor& self, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_or(iter, Op::Hardswish, {}, out,
                   [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(hardswish, out)>(self, out); });
}

at::Tensor hardswish_mlu(const at::Tensor& self) {
  at::Tensor out = at::empty({0}, self.options());
  return hardswish_out_mlu(self, out);
}

at::Tensor& hardswish__mlu(at::Tensor& self) { return hardswish_out_mlu(self, self); }

// Backward ops that return a fresh tensor from a binary iterator.
template <Op kOp, class AtenOp>  // AtenOp: what falls back (Fallback.h)
at::Tensor binary_backward(const at::Tensor& grad, const at::Tensor& self) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor grad_input;
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  if (!launch_pointwise(iter, kOp)) {
    return cpu_fallback<AtenOp>(grad, self);
  }
  return iter.output();
}

at::Tensor& logit_out_mlu(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::unary_float_op(out, self);
  return launch_or(iter, Op::Logit, logit_params(eps, iter.common_dtype()), out,
                   [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(logit, out)>(self, eps, out); });
}

at::Tensor logit_mlu(const at::Tensor& self, std::optional<double> eps) {
  at::Tensor out;
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIterator::unary_float_op(out, self);
  if (!launch_pointwise(iter, Op::Logit, logit_params(eps, iter.common_dtype()))) {
    return cpu_fallback<ATEN_OP(logit)>(self, eps);
  }
  return iter.output();
}

at::Tensor& logit__mlu(at::Tensor& self, std::optional<double> eps) { return logit_out_mlu(self, eps, self); }

at::Tensor relu_mlu(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min(self, 0);
}

at::Tensor& relu__mlu(at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min_(self, 0);
}

// log_sigmoid = -softplus(-x), its backward grad * sigmoid(-x): compositions
// of native kernels. The buffer output is unused (our backward does not read
// it), but laid out as PyTorch's shape function declares it for every device
// but CUDA and XPU (the decomposition's exp(-|x|), like the output), which
// compiled graphs rely on: an uninitialised tensor like the output.
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward_mlu(const at::Tensor& self) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor out = at::softplus(self.neg(), 1, 20).neg_();
  return {out, at::empty_like(out)};
}

at::Tensor log_sigmoid_backward_mlu(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer) {
  c10::OptionalDeviceGuard guard(self.device());
  return grad.mul(self.neg().sigmoid_());
}

// ---- glu: first half * sigmoid(second half) along dim (the forward is the
// fused Glu kernel over PyTorch's structured meta, registered in the yaml) ----

void check_glu(T self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ", self.size(d));
}

at::Tensor glu_backward_mlu(T grad_output, T self, int64_t dim) {
  check_glu(self, dim);
  const auto halves = self.chunk(2, dim);
  const at::Tensor gate = at::sigmoid(halves[1]);
  const at::Tensor grad_first = at::mul(grad_output, gate);
  const at::Tensor grad_second = grad_first * halves[0] * (1 - gate);
  return at::cat({grad_first, grad_second}, dim).contiguous();  // the CPU's grad_input is contiguous
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ActivationOps.inc"
