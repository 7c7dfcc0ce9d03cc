// Ops whose generic (CompositeExplicitAutograd) definitions would lose the
// CPU's memory format on mlu: the CPU kernels write their outputs in the
// input's suggested memory format (channels-last in, channels-last out);
// the composites reshape and permute into a contiguous result. Each is the
// composite's computation followed by the CPU's layout.
#include <ATen/ops/pixel_shuffle_native.h>
#include <ATen/ops/pixel_unshuffle_native.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

at::Tensor in_suggested_format(const at::Tensor& result, const at::Tensor& input) {
  return result.contiguous(input.suggest_memory_format());
}

at::Tensor pixel_shuffle_mlu(const at::Tensor& self, int64_t upscale_factor) {
  return in_suggested_format(at::native::math_pixel_shuffle(self, upscale_factor), self);
}

at::Tensor pixel_unshuffle_mlu(const at::Tensor& self, int64_t downscale_factor) {
  return in_suggested_format(at::native::math_pixel_unshuffle(self, downscale_factor), self);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/LayoutOps.inc"
