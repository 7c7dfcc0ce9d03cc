// nll_loss (the loss part of cross_entropy) and its backward op on mlu
// (mlu_kernels/loss.h), on the current stream; nll_loss2d (per-position
// losses of [N, C, H, W] inputs) as nll_loss over the positions (mse_loss
// and the other element-wise losses: ElementwiseLossOps.cpp). PyTorch's meta functions
// check the arguments and size the results; an out-of-range target is a
// device-side error naming the op, raised at the next synchronisation, like
// an out-of-range gather index.
#include <ATen/native/Resize.h>
#include <ATen/ops/nll_loss_backward.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <mlu_kernels/loss.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using W = const std::optional<at::Tensor>&;

bool has_loss_kernel(const at::Tensor& self, const std::optional<at::Tensor>& weight) {
  const bool floating = at::isFloatingType(self.scalar_type()) && kernel_dtype(self.scalar_type()).has_value();
  return floating && (!weight.has_value() || !weight->defined() || weight->scalar_type() == self.scalar_type());
}

at::OptionalTensorRef optional_ref(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? at::OptionalTensorRef(*t) : at::OptionalTensorRef();
}

std::string target_message(const char* op, int64_t bad) {
  return std::string(op) + "(): Target " + std::to_string(bad) + " is out of bounds.";
}

void launch_forward(T self, T target_, W weight_opt, int64_t reduction, int64_t ignore_index, T output,
                    T total_weight) {
  const at::Tensor input = self.contiguous(), target = target_.to(at::kLong).contiguous();
  const at::Tensor weight = weight_opt.has_value() && weight_opt->defined() ? weight_opt->contiguous() : at::Tensor();
  const int64_t n = input.dim() == 1 ? 1 : input.size(0), classes = input.size(-1);
  const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "nll_loss");
  const void *x = device_ptr<const void>(input), *w = device_ptr<const void>(weight);
  const int64_t* t = device_ptr<const int64_t>(target);
  void *out = device_ptr(output), *tw = device_ptr(total_weight);
  const auto red = static_cast<k::LossReduction>(reduction);
  const bool per_sample = reduction == 0 && input.dim() == 2;
  launch_kernel(self.device().index(), "nll_loss", [=](mlu::TaskContext& context) {
    // A 1-D input with reduction None gives a 0-dim loss: the Sum of one sample.
    const k::IndexCheck check = k::nll_loss_forward(
        type, n, classes, x, t, w, per_sample ? red : (red == k::LossReduction::None ? k::LossReduction::Sum : red),
        ignore_index, out, tw);
    if (!check.ok) context.fail(target_message("nll_loss", check.bad_index));
  });
}

void launch_backward(T grad_output_, T self, T target_, W weight_opt, int64_t reduction, int64_t ignore_index,
                     T total_weight_, T grad_input) {
  const at::Tensor grad_output = grad_output_.contiguous(), target = target_.to(at::kLong).contiguous();
  const at::Tensor total_weight = total_weight_.contiguous();
  const at::Tensor weight = weight_opt.has_value() && weight_opt->defined() ? weight_opt->contiguous() : at::Tensor();
  const int64_t n = self.dim() == 1 ? 1 : self.size(0), classes = self.size(-1);
  const k::ScalarType type = require_kernel_dtype(self.scalar_type(), "nll_loss_backward");
  const void *g = device_ptr<const void>(grad_output), *w = device_ptr<const void>(weight),
             *tw = device_ptr<const void>(total_weight);
  const int64_t* t = device_ptr<const int64_t>(target);
  void* gi = device_ptr(grad_input);
  const bool per_sample = reduction == 0 && self.dim() == 2;
  const auto red = per_sample ? k::LossReduction::None
                              : (reduction == 0 ? k::LossReduction::Sum : static_cast<k::LossReduction>(reduction));
  launch_kernel(self.device().index(), "nll_loss_backward", [=](mlu::TaskContext& context) {
    const k::IndexCheck check = k::nll_loss_backward(type, n, classes, g, t, w, red, ignore_index, tw, gi);
    if (!check.ok) context.fail(target_message("nll_loss_backward", check.bad_index));
  });
}

// nll_loss2d: the loss per spatial position, as nll_loss over the positions
// (input [N, C, *] with the classes moved last, target flattened).
void check_spatial(T self, T target) {
  TORCH_CHECK(target.dim() == 3,
              "only batches of spatial targets supported (3D tensors) but got targets of "
              "dimension: ",
              target.dim());
  TORCH_CHECK(self.dim() == 4,
              "only batches of spatial inputs supported (4D tensors), but got input of dimension: ", self.dim());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ", self.sizes());
}

at::Tensor positions(T self) { return self.movedim(1, -1).reshape({-1, self.size(1)}); }

std::tuple<at::Tensor, at::Tensor> spatial_nll_loss(T self, T target, W weight, int64_t reduction,
                                                    int64_t ignore_index) {
  check_spatial(self, target);
  auto [output, total_weight] =
      at::nll_loss_forward(positions(self), target.reshape(-1), weight, reduction, ignore_index);
  if (reduction == 0) output = output.reshape(target.sizes());
  return {output, total_weight};
}

at::Tensor spatial_nll_loss_backward(T grad_output, T self, T target, W weight, int64_t reduction, int64_t ignore_index,
                                     T total_weight) {
  check_spatial(self, target);
  const at::Tensor grad = at::nll_loss_backward(reduction == 0 ? grad_output.reshape(-1) : grad_output, positions(self),
                                                target.reshape(-1), weight, reduction, ignore_index, total_weight);
  return grad.reshape({self.size(0), self.size(2), self.size(3), self.size(1)}).movedim(-1, 1).contiguous();
}

// The out= forms of nll_loss2d: resized (PyTorch's resize_output) and copied into.
std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out_mlu(T self, T target, W weight, int64_t reduction,
                                                                int64_t ignore_index, at::Tensor& output,
                                                                at::Tensor& total_weight) {
  auto [out, tw] = spatial_nll_loss(self, target, weight, reduction, ignore_index);
  at::native::resize_output(output, out.sizes());
  at::native::resize_output(total_weight, tw.sizes());
  output.copy_(out);
  total_weight.copy_(tw);
  return std::tuple<at::Tensor&, at::Tensor&>(output, total_weight);
}

at::Tensor& nll_loss2d_backward_out_mlu(T grad_output, T self, T target, W weight, int64_t reduction,
                                        int64_t ignore_index, T total_weight, at::Tensor& grad_input) {
  const at::Tensor grad =
      spatial_nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  at::native::resize_output(grad_input, grad.sizes());
  return grad_input.copy_(grad);
}

// nll_loss and its backward, after the CPU fallback's condition and the device guard (the yaml): PyTorch's meta
// function sizes the results (its weight is an OptionalTensorRef), the kernel fills them.
std::tuple<at::Tensor, at::Tensor> nll_loss_forward_mlu(T self, T target, W weight, int64_t reduction,
                                                        int64_t ignore_index) {
  MLUFunctional<at::meta::structured_nll_loss_forward, 2> meta;
  meta.meta(self, target, optional_ref(weight), reduction, ignore_index);
  launch_forward(self, target, weight, reduction, ignore_index, meta.output(0), meta.output(1));
  return std::make_tuple(std::move(meta.output(0)), std::move(meta.output(1)));
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out_mlu(T self, T target, W weight, int64_t reduction,
                                                              int64_t ignore_index, at::Tensor& output,
                                                              at::Tensor& total_weight) {
  MLUOut<at::meta::structured_nll_loss_forward, 2> meta(output, total_weight);
  meta.meta(self, target, optional_ref(weight), reduction, ignore_index);
  launch_forward(self, target, weight, reduction, ignore_index, meta.maybe_get_output(0), meta.maybe_get_output(1));
  meta.finish();
  return std::tuple<at::Tensor&, at::Tensor&>(output, total_weight);
}

at::Tensor nll_loss_backward_mlu(T grad_output, T self, T target, W weight, int64_t reduction, int64_t ignore_index,
                                 T total_weight) {
  MLUFunctional<at::meta::structured_nll_loss_backward> meta;
  meta.meta(grad_output, self, target, optional_ref(weight), reduction, ignore_index, total_weight);
  launch_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight, meta.output());
  return std::move(meta.output());
}

at::Tensor& nll_loss_backward_out_mlu(T grad_output, T self, T target, W weight, int64_t reduction,
                                      int64_t ignore_index, T total_weight, at::Tensor& grad_input) {
  MLUOut<at::meta::structured_nll_loss_backward> meta(grad_input);
  meta.meta(grad_output, self, target, optional_ref(weight), reduction, ignore_index, total_weight);
  launch_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight, meta.maybe_get_output(0));
  meta.finish();
  return grad_input;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/LossOps.inc"
