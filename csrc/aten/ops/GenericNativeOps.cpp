// Ops whose PyTorch implementation is device-generic code (it only calls other
// ATen ops) but which native_functions.yaml registers for CPU and CUDA alone:
// mlu registers the same exported at::native functions, so they run natively
// on top of mlu's kernels instead of through the CPU fallback. Each one was
// read in PyTorch 2.13's source to be generic; one that touches host data or
// checks the device type does not belong here, nor one whose result layout
// differs from the CPU's dedicated kernel (channel_shuffle: the generic path
// returns a contiguous tensor where the CPU keeps channels-last).
#include <ATen/ops/count_nonzero_native.h>
#include <ATen/ops/mvlgamma_native.h>
#include <ATen/ops/remainder_native.h>
#include <ATen/ops/rsub_native.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {

TORCH_MLU_ATEN_IMPL(m) {
  // at::sub(other, self, alpha).
  m.impl("rsub.Tensor",
         TORCH_FN(static_cast<at::Tensor (*)(const at::Tensor&, const at::Tensor&, const at::Scalar&)>(
             at::native::rsub)));
  // at::remainder(wrapped_scalar_tensor(self), other).
  m.impl("remainder.Scalar_Tensor",
         TORCH_FN(static_cast<at::Tensor (*)(const at::Scalar&, const at::Tensor&)>(at::native::remainder)));
  // (self != 0).sum(dims): CUDA's implementation, compiled into the CPU library.
  m.impl("count_nonzero.dim_IntList", TORCH_FN(at::native::count_nonzero_cuda));
  // self.mvlgamma(p) copied into out.
  m.impl("mvlgamma.out", TORCH_FN(at::native::mvlgamma_out));
}

}  // namespace torch_mlu
