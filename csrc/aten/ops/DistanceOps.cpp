// cdist's direct path (_cdist_forward / _cdist_backward) and pdist, written
// as the CPU kernels' formulas (Distance.cpp) over mlu's native ops.
#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/sqrt.h>
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

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/DistanceOps.inc"
