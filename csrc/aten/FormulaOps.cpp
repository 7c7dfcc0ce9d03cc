// Ops written as the CPU kernels' formulas over mlu's native element-wise
// ops and reductions (each a kernel on the current stream, in queue order):
// the element-wise losses mse / smooth_l1 / huber / binary_cross_entropy and
// their backward ops (Loss.cpp, LossKernel.cpp, PointwiseOpsKernel.cpp), glu
// and its backward op (Activation.cpp), native_group_norm_backward
// (GroupNormKernel.cpp), whose forward PyTorch already composes from native
// ops, cdist's direct path (_cdist_forward / _cdist_backward) and pdist, and the
// transformer fast path's padding-mask check. 16-bit inputs
// compute in float where the CPU does (group norm) and are rounded once.
#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/_assert_async.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/any.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/log.h>
#include <ATen/ops/log1p.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/Structured.h"

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

// ---- element-wise losses ----
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

// ---- cdist's direct path (p != 2, or few rows; p = 2 on many rows takes
// PyTorch's matmul-based _euclidean_dist, native already) ----

// The pairwise differences x1[..., i, :] - x2[..., j, :]: [..., r1, r2, m].
at::Tensor pair_differences(T x1, T x2) { return x1.unsqueeze(-2) - x2.unsqueeze(-3); }

at::Tensor cdist_forward(T x1, T x2, double p, std::optional<int64_t> /*compute_mode*/) {
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  const at::Tensor diff = at::abs(pair_differences(x1, x2));
  if (p == 0) return at::sum(diff != 0, {-1}).to(x1.scalar_type());
  if (std::isinf(p)) return diff.size(-1) == 0 ? at::sum(diff, {-1}) : at::amax(diff, {-1});
  if (p == 1) return at::sum(diff, {-1});
  if (p == 2) return at::sqrt(at::sum(diff * diff, {-1}));
  return at::pow(at::sum(at::pow(diff, p), {-1}), 1.0 / p);
}

// d cdist / d x1, summed over x2's rows with grad (the CPU's pdist_calc backward formulas).
at::Tensor cdist_backward(T grad, T x1, T x2, double p, T cdist) {
  if (p == 0 || x1.numel() == 0 || x2.numel() == 0) return at::zeros_like(x1, at::MemoryFormat::Contiguous);
  const at::Tensor diff = pair_differences(x1, x2);
  const at::Tensor g = grad.unsqueeze(-1), dist = cdist.unsqueeze(-1);
  at::Tensor term;
  if (p == 1) {
    term = at::sign(diff) * g;
  } else if (std::isinf(p)) {
    term = at::sign(diff) * (at::abs(diff) == dist) * g;
  } else if (p == 2) {
    term = at::where(dist == 0, at::zeros_like(diff), diff * g / dist);
  } else if (p < 2) {
    const at::Tensor value = at::sign(diff) * at::pow(at::abs(diff), p - 1) * g / at::pow(dist, p - 1);
    term = at::where(dist == 0, at::zeros_like(diff), value);
    if (p < 1) term = at::where(diff == 0, at::zeros_like(diff), term);
  } else {
    const at::Tensor value = diff * at::pow(at::abs(diff), p - 2) * g / at::pow(dist, p - 1);
    term = at::where(dist == 0, at::zeros_like(diff), value);
  }
  return at::sum(term, {-2}).contiguous();
}

// pdist: the upper triangle (i < j, row-major) of cdist(self, self); its
// backward is cdist's with the gradient made symmetric.
// The (i, j) pairs with i < j of n rows, row-major: [pairs, 2] on self's device.
at::Tensor upper_pairs(T self) {
  const int64_t n = self.size(0);
  return at::ones({n, n}, self.options().dtype(at::kBool)).triu(1).nonzero();
}

at::Tensor pdist_forward(T self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const at::Tensor pairs = upper_pairs(self);
  return cdist_forward(self, self, p, std::nullopt).index({pairs.select(1, 0), pairs.select(1, 1)});
}

at::Tensor pdist_backward(T grad, T self, double p, T pdist) {
  const int64_t n = self.size(0);
  const at::Tensor pairs = upper_pairs(self);
  const auto square = [&](const at::Tensor& upper) {
    at::Tensor full = at::zeros({n, n}, upper.options());
    full.index_put_({pairs.select(1, 0), pairs.select(1, 1)}, upper);
    return full + full.t();
  };
  return cdist_backward(square(grad), self, self, p, square(pdist));
}

// ---- glu: first half * sigmoid(second half) along dim ----

void check_glu(T self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              self.size(d));
}

at::Tensor glu_mlu(T self, int64_t dim) {
  check_glu(self, dim);
  const auto halves = self.chunk(2, dim);
  return at::mul(halves[0], at::sigmoid(halves[1]));
}

at::Tensor glu_backward_mlu(T grad_output, T self, int64_t dim) {
  check_glu(self, dim);
  const auto halves = self.chunk(2, dim);
  const at::Tensor gate = at::sigmoid(halves[1]);
  const at::Tensor grad_first = at::mul(grad_output, gate);
  const at::Tensor grad_second = grad_first * halves[0] * (1 - gate);
  return at::cat({grad_first, grad_second}, dim).contiguous();  // the CPU's grad_input is contiguous
}

// ---- group norm backward ----

// With X [N, G, D, HxW] (D = C / G channels per group), mean / rstd [N, G],
// in float: ds = sum_hw dY X, db = sum_hw dY per channel, then the CPU's
//   dX = rstd gamma dY + c2 X + c3,
//   c2 = (sum_c db gamma * mean - sum_c ds gamma) rstd^3 / (D HxW),
//   c3 = -c2 mean - sum_c db gamma * rstd / (D HxW),
//   dgamma = sum_n (ds - db mean) rstd,  dbeta = sum_n db.
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward(T grad_out, T input, T mean, T rstd,
                                                                   const std::optional<at::Tensor>& weight,
                                                                   int64_t n, int64_t c, int64_t hxw, int64_t group,
                                                                   std::array<bool, 3> mask) {
  TORCH_CHECK(group > 0 && c % group == 0, "native_group_norm_backward: ", c, " channels are not a multiple of ",
              group, " groups");
  const int64_t d = c / group;
  const auto wide = [](const at::Tensor& t) { return t.scalar_type() == at::kDouble ? t : t.to(at::kFloat); };
  const at::Tensor x = wide(input).reshape({n, group, d, hxw});
  const at::Tensor dy = wide(grad_out).reshape({n, group, d, hxw});
  const at::Tensor mu = wide(mean).reshape({n, group, 1});
  const at::Tensor rs = wide(rstd).reshape({n, group, 1});
  const at::Tensor ds = at::sum(dy * x, {-1});  // [N, G, D]
  const at::Tensor db = at::sum(dy, {-1});
  const bool has_weight = weight.has_value() && weight->defined();
  const at::Tensor gamma = has_weight ? wide(*weight).reshape({1, group, d}) : at::Tensor();
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) {
    const at::Tensor ds_gamma = at::sum(has_weight ? ds * gamma : ds, {-1}, true);  // [N, G, 1]
    const at::Tensor db_gamma = at::sum(has_weight ? db * gamma : db, {-1}, true);
    const double s = 1.0 / static_cast<double>(d * hxw);
    const at::Tensor c1 = has_weight ? rs * gamma : rs.expand({n, group, d});
    const at::Tensor c2 = (db_gamma * mu - ds_gamma) * rs * rs * rs * s;
    const at::Tensor c3 = -c2 * mu - db_gamma * rs * s;
    grad_input = (c1.unsqueeze(-1) * dy + c2.unsqueeze(-1) * x + c3.unsqueeze(-1))
                     .reshape(input.sizes())
                     .to(input.scalar_type())
                     .contiguous(input.suggest_memory_format());
  }
  const at::ScalarType param_type = has_weight ? weight->scalar_type() : input.scalar_type();
  if (mask[1]) grad_weight = at::sum((ds - db * mu) * rs, {0}).reshape({c}).to(param_type);
  if (mask[2]) grad_bias = at::sum(db, {0}).reshape({c}).to(param_type);
  return {grad_input, grad_weight, grad_bias};
}

// ---- _nested_tensor_from_mask_left_aligned ----

// Whether every row of mask [N, L] is some Trues followed by only Falses
// (TransformerEncoder's fast path asks before packing a padded batch). The
// answer is a host bool: it waits for the queue, as the CPU's .item() would.
bool mask_left_aligned(T /*t*/, T mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of type bool");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  if (mask.size(1) <= 1) return true;
  const at::Tensor later = mask.narrow(1, 1, mask.size(1) - 1), earlier = mask.narrow(1, 0, mask.size(1) - 1);
  return !at::logical_and(later, at::logical_not(earlier)).any().item<bool>();
}

}  // namespace

TORCH_MLU_ATEN_IMPL(m) {
  m.impl("mse_loss", TORCH_FN(mse));
  m.impl("mse_loss.out", [](T self, T target, int64_t reduction, at::Tensor& out) -> at::Tensor& {
    return copy_into(out, mse(self, target, reduction));
  });
  m.impl("mse_loss_backward", TORCH_FN(mse_backward));
  m.impl("mse_loss_backward.grad_input", [](T grad_output, T self, T target, int64_t reduction,
                                            at::Tensor& grad_input) -> at::Tensor& {
    return copy_into(grad_input, mse_backward(grad_output, self, target, reduction));
  });
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1));
  m.impl("smooth_l1_loss.out", [](T self, T target, int64_t reduction, double beta, at::Tensor& out) -> at::Tensor& {
    return copy_into(out, smooth_l1(self, target, reduction, beta));
  });
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_backward));
  m.impl("smooth_l1_loss_backward.grad_input", [](T grad_output, T self, T target, int64_t reduction, double beta,
                                                  at::Tensor& grad_input) -> at::Tensor& {
    return copy_into(grad_input, smooth_l1_backward(grad_output, self, target, reduction, beta));
  });
  m.impl("huber_loss", TORCH_FN(huber));
  m.impl("huber_loss.out", [](T self, T target, int64_t reduction, double delta, at::Tensor& out) -> at::Tensor& {
    return copy_into(out, huber(self, target, reduction, delta));
  });
  m.impl("huber_loss_backward", TORCH_FN(huber_backward));
  m.impl("huber_loss_backward.out", [](T grad_output, T self, T target, int64_t reduction, double delta,
                                       at::Tensor& grad_input) -> at::Tensor& {
    return copy_into(grad_input, huber_backward(grad_output, self, target, reduction, delta));
  });
  m.impl("binary_cross_entropy", TORCH_FN(bce_mlu));
  m.impl("binary_cross_entropy.out", [](T self, T target, const std::optional<at::Tensor>& weight, int64_t reduction,
                                        at::Tensor& out) -> at::Tensor& {
    return copy_into(out, bce_mlu(self, target, weight, reduction));
  });
  m.impl("binary_cross_entropy_backward", TORCH_FN(bce_backward_mlu));
  m.impl("binary_cross_entropy_backward.grad_input",
         [](T grad_output, T self, T target, const std::optional<at::Tensor>& weight, int64_t reduction,
            at::Tensor& grad_input) -> at::Tensor& {
           return copy_into(grad_input, bce_backward_mlu(grad_output, self, target, weight, reduction));
         });
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
  m.impl("glu", TORCH_FN(glu_mlu));
  m.impl("glu.out", [](T self, int64_t dim, at::Tensor& out) -> at::Tensor& { return copy_into(out, glu_mlu(self, dim)); });
  m.impl("glu_backward", TORCH_FN(glu_backward_mlu));
  m.impl("glu_backward.grad_input", [](T grad_output, T self, int64_t dim, at::Tensor& grad_input) -> at::Tensor& {
    return copy_into(grad_input, glu_backward_mlu(grad_output, self, dim));
  });
  m.impl("native_group_norm_backward", TORCH_FN(group_norm_backward));
  m.impl("_nested_tensor_from_mask_left_aligned", TORCH_FN(mask_left_aligned));
}

}  // namespace torch_mlu
