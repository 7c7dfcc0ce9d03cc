// The three variants (functional, in-place, out=) of a structured
// TensorIterator op whose impl is one pointwise kernel:
//   return pointwise_functional<at::meta::structured_exp>(
//       PointwiseOp::Exp, {}, [&] { return cpu_fallback<at::_ops::exp>(self); }, self);
// The meta function checks the arguments and builds the iterator exactly as
// on the CPU; when the kernel library has no kernel for the computation's
// dtype (complex), the op runs through the CPU fallback instead.
// tools/gen_mlu_ops.py writes these calls for the `pointwise:` entries of
// csrc/aten/mlu_functions.yaml.
#pragma once

#include <c10/core/DeviceGuard.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/PointwiseLaunch.h"
#include "csrc/aten/Structured.h"

namespace torch_mlu {

template <class Meta, class Fallback, class... Args>
at::Tensor pointwise_functional(PointwiseOp op, const OpParams& params, Fallback&& fallback, const at::Tensor& self,
                                const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> iter;
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return std::move(iter.output());
}

template <class Meta, class Fallback, class... Args>
at::Tensor& pointwise_inplace(PointwiseOp op, const OpParams& params, Fallback&& fallback, at::Tensor& self,
                              const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUInplace<Meta> iter(self);
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return self;
}

// `out` comes last, as in the out= overloads' C++ signatures.
template <class Meta, class Fallback, class... Args>
at::Tensor& pointwise_out(PointwiseOp op, const OpParams& params, Fallback&& fallback, at::Tensor& out,
                          const at::Tensor& self, const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> iter(out);
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return out;
}

}  // namespace torch_mlu
