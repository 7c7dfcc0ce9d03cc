// native_layer_norm and its backward op on mlu (mlu_kernels/norm.h), fused
// per row on the current stream. Without these, PyTorch's composite layer
// norm would run through batch_norm on the CPU fallback. The kernel takes
// weight / bias and returns mean / rstd and the parameter gradients in the
// accumulation type (float for Float16/BFloat16, like the CPU computes); the
// glue converts them to and from the dtypes the CPU returns: mean / rstd and
// the parameter gradients in the parameters' dtype when it differs from the
// input's (mixed precision), else in the input's.
#include <limits>

#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/norm.h>

#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

at::ScalarType accumulate_type(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

void check_layer_norm_dtype(const at::Tensor& input) {
  TORCH_CHECK(at::isFloatingType(input.scalar_type()) && kernel_dtype(input.scalar_type()).has_value(),
              "layer_norm on mlu supports float32, float64, float16 and bfloat16 inputs, got ", input.scalar_type());
}

// The dtype of mean / rstd and of the parameter gradients, as on the CPU.
at::ScalarType stat_type(const at::Tensor& input, const at::Tensor& weight) {
  return weight.defined() && weight.scalar_type() != input.scalar_type() ? weight.scalar_type() : input.scalar_type();
}

at::Tensor in_accumulate_type(const at::Tensor& t, at::ScalarType acc) {
  return t.defined() ? t.to(acc).contiguous() : at::Tensor();
}

void* ptr(const at::Tensor& t) { return t.defined() ? const_cast<void*>(t.const_data_ptr()) : nullptr; }

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& input_, at::IntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight_opt,
                                                          const std::optional<at::Tensor>& bias_opt, double eps) {
  const at::Tensor weight_ = weight_opt.value_or(at::Tensor()), bias_ = bias_opt.value_or(at::Tensor());
  check_layer_norm_dtype(input_);
  const auto [rows, cols] = at::native::_check_layer_norm_inputs(input_, normalized_shape, weight_, bias_);
  c10::DeviceGuard guard(input_.device());
  const at::ScalarType acc = accumulate_type(input_.scalar_type());
  const at::Tensor input = input_.contiguous();
  const at::Tensor weight = in_accumulate_type(weight_, acc), bias = in_accumulate_type(bias_, acc);
  at::Tensor output = at::empty(input.sizes(), input.options());
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end() - normalized_shape.size());
  stat_shape.resize(input.dim(), 1);
  at::Tensor mean = at::empty(stat_shape, input.options().dtype(acc));
  at::Tensor rstd = at::empty(stat_shape, input.options().dtype(acc));
  if (rows > 0 && cols > 0) {
    const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "layer_norm");
    const void *x = ptr(input), *w = ptr(weight), *b = ptr(bias);
    void *y = ptr(output), *m = ptr(mean), *r = ptr(rstd);
    const int64_t M = rows, N = cols;
    launch_kernel(input.device().index(), "layer_norm",
                  [=] { k::layer_norm(type, M, N, x, w, b, eps, y, m, r); });
  } else if (rows > 0) {  // rows of no elements: mean 0 and rstd NaN, as on the CPU
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
  }
  const at::ScalarType stats = stat_type(input_, weight_);
  return {output, mean.to(stats), rstd.to(stats)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor& grad_out_, const at::Tensor& input_, at::IntArrayRef normalized_shape, const at::Tensor& mean_,
    const at::Tensor& rstd_, const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
    std::array<bool, 3> mask) {
  const at::Tensor weight_ = weight_opt.value_or(at::Tensor()), bias_ = bias_opt.value_or(at::Tensor());
  check_layer_norm_dtype(input_);
  const auto [rows, cols] = at::native::_check_layer_norm_inputs(input_, normalized_shape, weight_, bias_);
  c10::DeviceGuard guard(input_.device());
  const at::ScalarType acc = accumulate_type(input_.scalar_type());
  const at::Tensor grad_out = grad_out_.contiguous(), input = input_.contiguous();
  const at::Tensor mean = mean_.to(acc).contiguous(), rstd = rstd_.to(acc).contiguous();
  const at::Tensor weight = in_accumulate_type(weight_, acc);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty(input.sizes(), input.options());
  const bool want_weight = mask[1] && weight_.defined(), want_bias = mask[2] && bias_.defined();
  if (want_weight) grad_weight = at::empty(weight_.sizes(), weight_.options().dtype(acc));
  if (want_bias) grad_bias = at::empty(bias_.sizes(), bias_.options().dtype(acc));
  if (rows > 0 && cols > 0) {
    const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "layer_norm_backward");
    const void *dy = ptr(grad_out), *x = ptr(input), *m = ptr(mean), *r = ptr(rstd), *w = ptr(weight);
    void *dx = ptr(grad_input), *dw = ptr(grad_weight), *db = ptr(grad_bias);
    const int64_t M = rows, N = cols;
    launch_kernel(input.device().index(), "layer_norm_backward",
                  [=] { k::layer_norm_backward(type, M, N, dy, x, m, r, w, dx, dw, db); });
  } else {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
  }
  if (grad_weight.defined()) grad_weight = grad_weight.to(weight_.scalar_type());
  if (grad_bias.defined()) grad_bias = grad_bias.to(bias_.scalar_type());
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
}

}  // namespace torch_mlu
