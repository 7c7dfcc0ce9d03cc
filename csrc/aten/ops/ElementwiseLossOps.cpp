// The element-wise losses mse / smooth_l1 / huber / binary_cross_entropy and
// their backward ops, written as the CPU kernels' formulas (Loss.cpp,
// LossKernel.cpp, PointwiseOpsKernel.cpp) over mlu's native element-wise ops
// and reductions: each a kernel on the current stream, in queue order.
#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/_assert_async.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/all.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/log.h>
#include <ATen/ops/log1p.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

at::Tensor reduce(const at::Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return at::mean(loss);
  if (reduction == at::Reduction::Sum) return at::sum(loss);
  return loss;
}

double norm(const at::Tensor& self, int64_t reduction) {
  return reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
}

// `value` in the layout empty_like(self) would have (the CPU's outputs that
// follow their input's layout): self's strides where self is dense, else its
// suggested memory format. Copied only where value is not laid out so.
at::Tensor laid_out_like(const at::Tensor& value, const at::Tensor& self) {
  if (!self.is_non_overlapping_and_dense()) return value.contiguous(self.suggest_memory_format());
  if (value.strides() == self.strides()) return value;
  return at::empty_like(self).copy_(value);
}

// The backward ops return contiguous gradients, as the CPU's (zeros_like(input, contiguous)).

at::Tensor mse(T self, T target, int64_t reduction) {
  const at::Tensor diff = at::sub(self, target);
  return reduce(at::mul(diff, diff), reduction);
}

at::Tensor mse_backward(T grad_output, T self, T target, int64_t reduction) {
  return at::mul(at::mul(at::sub(self, target), 2.0 * norm(self, reduction)), grad_output).contiguous();
}

// z < beta ? 0.5 z^2 / beta : z - 0.5 beta, z = |self - target| (beta 0: l1).
at::Tensor smooth_l1(T self, T target, int64_t reduction, double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  const at::Tensor z = at::abs(at::sub(self, target));
  if (beta == 0) return reduce(z, reduction);
  return reduce(at::where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta), reduction);
}

// x <= -beta ? -norm g : x >= beta ? norm g : norm x g / beta, x = self - target.
at::Tensor smooth_l1_backward(T grad_output, T self, T target, int64_t reduction, double beta) {
  const at::Tensor x = at::sub(self, target);
  const double n = norm(self, reduction);
  const at::Tensor g = at::mul(grad_output, n);
  const at::Tensor inside = beta == 0 ? at::zeros_like(x) : x * g / beta;
  return at::where(x <= -beta, -g, at::where(x >= beta, g, inside)).contiguous();
}

// z < delta ? 0.5 z^2 : delta (z - 0.5 delta).
at::Tensor huber(T self, T target, int64_t reduction, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  const at::Tensor z = at::abs(at::sub(self, target));
  return reduce(at::where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta), reduction);
}

// x <= -delta ? -norm delta g : x >= delta ? norm delta g : norm x g.
at::Tensor huber_backward(T grad_output, T self, T target, int64_t reduction, double delta) {
  const at::Tensor x = at::sub(self, target);
  const at::Tensor g = at::mul(grad_output, norm(self, reduction));
  return at::where(x <= -delta, g * -delta, at::where(x >= delta, g * delta, x * g)).contiguous();
}

// -w ((1 - t) max(log(1 - x), -100) + t max(log(x), -100)); x and t must
// lie in [0, 1], checked on the device (_assert_async) with the CPU's texts.
void check_probabilities(T self, T target) {
  at::_assert_async(at::all(at::logical_and(self >= 0, self <= 1)), "all elements of input should be between 0 and 1");
  at::_assert_async(at::all(at::logical_and(target >= 0, target <= 1)),
                    "all elements of target should be between 0 and 1");
}

at::Tensor bce_mlu(T self, T target, const std::optional<at::Tensor>& weight, int64_t reduction) {
  check_probabilities(self, target);
  at::Tensor loss = (target - 1) * at::clamp_min(at::log1p(-self), -100) - target * at::clamp_min(at::log(self), -100);
  if (weight.has_value() && weight->defined()) loss = loss * *weight;
  return reduction == at::Reduction::None ? laid_out_like(loss, self) : reduce(loss, reduction);
}

// grad w (x - t) / max(x (1 - x), 1e-12), / numel for the mean.
at::Tensor bce_backward_mlu(T grad_output, T self, T target, const std::optional<at::Tensor>& weight,
                            int64_t reduction) {
  at::Tensor grad = grad_output * (self - target) / at::clamp_min((1 - self) * self, 1e-12);
  if (weight.has_value() && weight->defined()) grad = grad * *weight;
  return laid_out_like(reduction == at::Reduction::Mean ? grad / static_cast<double>(self.numel()) : grad, self);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ElementwiseLossOps.inc"
