// multi_margin_loss and multilabel_margin_loss (forward and backward) on mlu,
// as the CPU kernels compute them (LossMultiMargin.cpp, LossMultiLabelMargin.cpp)
// over native ops, on the [frames, classes] view of the input:
//   multi_margin:  loss_t = sum_{d != y_t} w_{y_t} max(0, margin - x_{t,y_t} + x_{t,d})^p / classes
//   multilabel:    loss_t = sum_{k valid} sum_{d not a target} max(0, 1 - x_{t,y_{t,k}} + x_{t,d}) / classes
// where a multilabel target row lists class indices up to the first -1 ("valid"). Shapes are checked with
// PyTorch's own LossMulti.h checks; out-of-range targets are device-side errors with the CPU's texts (the
// indices are clamped before use, so no second error follows). 16-bit inputs compute in float, rounded once.
#include <ATen/OpMathType.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/LossMulti.h>
#include <ATen/ops/_assert_async.h>
#include <ATen/ops/all.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;
using OptTensor = std::optional<at::Tensor>;

at::Tensor reduce(const at::Tensor& per_frame, int64_t reduction, bool keep_frames) {
  if (reduction == at::Reduction::Mean) return per_frame.mean();
  if (reduction == at::Reduction::Sum) return per_frame.sum();
  return keep_frames ? per_frame : per_frame.reshape({});
}

// The per-frame factor of grad_output: a vector under reduction none (with a frame dim), else one value.
at::Tensor grad_scale(T grad_output, int64_t reduction, int64_t frames, bool keep_frames, at::ScalarType type) {
  at::Tensor g = grad_output.to(type);
  return reduction == at::Reduction::None && keep_frames ? g.reshape({frames, 1}) : g.reshape({});
}

// ---- multi_margin_loss ----------------------------------------------------------------------------------------------

struct MultiMargin {
  int64_t frames = 0, classes = 0;
  at::Tensor x, y, margin_terms, not_target, target_weight;  // [F, C] float, [F] long, [F, C], [F, C] bool, [F, 1]
};

MultiMargin multi_margin_setup(T self, T target, const at::Scalar& p, const at::Scalar& margin,
                               const OptTensor& weight) {
  MultiMargin m;
  at::native::multi_margin_loss_shape_check(m.frames, m.classes, self.dim(), self, target, weight);
  TORCH_CHECK(p.toDouble() == 1 || p.toDouble() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
  const at::ScalarType acc = at::toOpMathType(self.scalar_type());
  m.x = self.to(acc).reshape({m.frames, m.classes});
  const at::Tensor y = target.reshape({m.frames});
  at::_assert_async(at::all(at::logical_and(y >= 0, y < m.classes)), "target out of range");
  m.y = y.clamp(0, m.classes - 1);
  const at::Tensor x_target = m.x.gather(1, m.y.unsqueeze(1));
  m.margin_terms = margin.toDouble() - x_target + m.x;
  m.not_target = at::arange(m.classes, target.options()).unsqueeze(0) != m.y.unsqueeze(1);
  if (weight.has_value() && weight->defined()) {
    m.target_weight = weight->to(acc).reshape({m.classes}).index_select(0, m.y).unsqueeze(1);
  }
  return m;
}

at::Tensor multi_margin_loss_mlu(T self, T target, const at::Scalar& p, const at::Scalar& margin,
                                 const OptTensor& weight, int64_t reduction) {
  MultiMargin m = multi_margin_setup(self, target, p, margin, weight);
  const at::Tensor& z = m.margin_terms;
  at::Tensor h = at::where(at::logical_and(z > 0, m.not_target), p.toDouble() == 1 ? z : z * z, 0);
  if (m.target_weight.defined()) h = h * m.target_weight;
  const at::Tensor per_frame = h.sum(1) / static_cast<double>(m.classes);
  return reduce(per_frame, reduction, target.dim() > 0).to(self.scalar_type());
}

at::Tensor multi_margin_loss_backward_mlu(T grad_output, T self, T target, const at::Scalar& p,
                                          const at::Scalar& margin, const OptTensor& weight, int64_t reduction) {
  MultiMargin m = multi_margin_setup(self, target, p, margin, weight);
  const double g = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(m.frames * m.classes)
                                                    : 1.0 / static_cast<double>(m.classes);
  const at::Tensor& z = m.margin_terms;
  at::Tensor h =
      at::where(at::logical_and(z > 0, m.not_target), p.toDouble() == 1 ? at::full_like(z, g) : 2 * g * z, 0);
  if (m.target_weight.defined()) h = h * m.target_weight;
  // The target class gets minus the sum of the others (its own entry is 0 in h).
  at::Tensor grad = h.scatter(1, m.y.unsqueeze(1), -h.sum(1, /*keepdim=*/true));
  grad = grad * grad_scale(grad_output, reduction, m.frames, target.dim() > 0, grad.scalar_type());
  return grad.reshape(self.sizes()).to(self.scalar_type());
}

// ---- multilabel_margin_loss -----------------------------------------------------------------------------------------

struct MultiLabel {
  int64_t frames = 0, classes = 0;
  at::Tensor x, y, valid, is_target, active;  // [F, C]; y clamped; active [F, K, C]: the terms that count
  at::Tensor terms;                           // [F, K, C] 1 - x_{t,y_k} + x_{t,d}
};

MultiLabel multilabel_setup(T self, T target) {
  MultiLabel m;
  at::native::multilabel_margin_loss_shape_check(m.frames, m.classes, self.dim(), self, target);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
  const at::ScalarType acc = at::toOpMathType(self.scalar_type());
  m.x = self.to(acc).reshape({m.frames, m.classes});
  const at::Tensor y = target.reshape({m.frames, m.classes});
  // Valid entries: those before a row's first negative one.
  m.valid = (y < 0).cumsum(1) == 0;
  at::_assert_async(at::all(at::logical_not(at::logical_and(m.valid, y >= m.classes))),
                    "argument #2 'target' is out of range");
  m.y = y.clamp(0, m.classes - 1);
  m.is_target = at::zeros({m.frames, m.classes}, m.x.options()).scatter_add(1, m.y, m.valid.to(acc)) > 0;
  m.terms = 1 - m.x.gather(1, m.y).unsqueeze(2) + m.x.unsqueeze(1);
  m.active =
      at::logical_and(at::logical_and(m.valid.unsqueeze(2), at::logical_not(m.is_target).unsqueeze(1)), m.terms > 0);
  return m;
}

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward_mlu(T self, T target, int64_t reduction) {
  MultiLabel m = multilabel_setup(self, target);
  const at::Tensor per_frame = at::where(m.active, m.terms, 0).sum({1, 2}) / static_cast<double>(m.classes);
  at::Tensor loss = reduce(per_frame, reduction, target.dim() > 1).to(self.scalar_type());
  return {loss, m.is_target.to(self.scalar_type()).reshape(target.sizes())};
}

at::Tensor multilabel_margin_loss_backward_mlu(T grad_output, T self, T target, int64_t reduction, T is_target) {
  (void)is_target;  // recomputed from target: same values, and no trust in a caller-made tensor
  MultiLabel m = multilabel_setup(self, target);
  const double g = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(m.frames * m.classes)
                                                    : 1.0 / static_cast<double>(m.classes);
  const at::Tensor counts = m.active.to(m.x.scalar_type()) * g;  // [F, K, C]
  // d loss / d x_{t,d} = sum_k counts[t,k,d]; d loss / d x_{t,y_k} -= sum_d counts[t,k,d].
  at::Tensor grad = counts.sum(1).scatter_add(1, m.y, -counts.sum(2));
  grad = grad * grad_scale(grad_output, reduction, m.frames, target.dim() > 1, grad.scalar_type());
  return grad.reshape(self.sizes()).to(self.scalar_type());
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/MarginLossOps.inc"
