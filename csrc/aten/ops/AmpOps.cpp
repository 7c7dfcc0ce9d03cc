// GradScaler's two ops on mlu, as CUDA's AmpKernels.cu computes them, written
// with native element-wise ops and reductions so that nothing waits for the
// device (the skip decision stays a device tensor, as on CUDA):
//   _amp_foreach_non_finite_check_and_unscale_: found_inf = 1 if any element
//     of any tensor is inf or NaN (checked before unscaling), each tensor *=
//     inv_scale;
//   _amp_update_scale_: after an overflow scale *= backoff and the tracker
//     resets; otherwise the tracker counts up and at growth_interval the scale
//     grows (only to a finite value) and the tracker resets.
#include <ATen/TensorOperators.h>
#include <ATen/ops/any.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

void check_scalar_float(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.numel() == 1, what, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == at::kFloat, what, " must be a float tensor.");
}

void non_finite_check_and_unscale(at::TensorList self, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  check_scalar_float(inv_scale, "inv_scale");
  check_scalar_float(found_inf, "found_inf");
  for (const at::Tensor& t : self) {
    TORCH_CHECK(t.device() == inv_scale.device(),
                "_amp_foreach_non_finite_check_and_unscale_: all tensors must be "
                "on ",
                inv_scale.device(), ", got one on ", t.device());
    TORCH_CHECK(at::isFloatingType(t.scalar_type()),
                "_amp_foreach_non_finite_check_and_unscale_: expected floating "
                "point gradients, got ",
                t.scalar_type());
    if (t.numel() == 0) continue;
    const at::Tensor non_finite = at::any(at::logical_not(at::isfinite(t))).to(at::kFloat).reshape(found_inf.sizes());
    found_inf.copy_(at::maximum(found_inf, non_finite));
    t.mul_(inv_scale.to(t.scalar_type()));
  }
}

at::Tensor& update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  check_scalar_float(scale, "current_scale");
  check_scalar_float(found_inf, "found_inf");
  TORCH_CHECK(growth_tracker.numel() == 1 && growth_tracker.scalar_type() == at::kInt,
              "growth_tracker must be a 1-element int tensor.");
  const at::Tensor overflow = found_inf > 0;
  const at::Tensor counted = at::where(overflow, at::zeros_like(growth_tracker), growth_tracker + 1);
  const at::Tensor grown = scale * growth_factor;
  const at::Tensor grow = at::logical_and(counted == growth_interval, at::isfinite(grown));
  const at::Tensor reset = counted == growth_interval;
  scale.copy_(at::where(overflow, scale * backoff_factor, at::where(grow, grown, scale)));
  growth_tracker.copy_(at::where(reset, at::zeros_like(counted), counted));
  return scale;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/AmpOps.inc"
