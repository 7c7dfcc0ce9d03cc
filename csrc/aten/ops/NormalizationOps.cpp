// native_layer_norm, native_batch_norm, native_group_norm and their backward
// ops on mlu (mlu_kernels/norm.h; group norm's backward is written below as the CPU's formula),
// fused per row / per channel on the current stream;
// batch norm's running statistics are updated with the native element-wise
// ops, in queue order. Without these, PyTorch's composite layer
// norm would run through batch_norm on the CPU fallback. The kernel takes
// weight / bias and returns mean / rstd and the parameter gradients in the
// accumulation type (float for Float16/BFloat16, like the CPU computes); the
// glue converts them to and from the dtypes the CPU returns: mean / rstd and
// the parameter gradients in the parameters' dtype when it differs from the
// input's (mixed precision), else in the input's.
#include <initializer_list>
#include <limits>

#include <ATen/ops/sum.h>
#include <ATen/TensorOperators.h>
#include <ATen/Version.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/norm.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

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

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_mlu(const at::Tensor& input_,
                                                              at::IntArrayRef normalized_shape,
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
    const void *x = device_ptr<const void>(input), *w = device_ptr<const void>(weight),
               *b = device_ptr<const void>(bias);
    void *y = device_ptr(output), *m = device_ptr(mean), *r = device_ptr(rstd);
    const int64_t M = rows, N = cols;
    launch_kernel(input.device().index(), "layer_norm", [=] { k::layer_norm(type, M, N, x, w, b, eps, y, m, r); });
  } else if (rows > 0) {  // rows of no elements: mean 0 and rstd NaN, as on the CPU
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
  }
  const at::ScalarType stats = stat_type(input_, weight_);
  return {output, mean.to(stats), rstd.to(stats)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_mlu(
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
    const void *dy = device_ptr<const void>(grad_out), *x = device_ptr<const void>(input),
               *m = device_ptr<const void>(mean), *r = device_ptr<const void>(rstd),
               *w = device_ptr<const void>(weight);
    void *dx = device_ptr(grad_input), *dw = device_ptr(grad_weight), *db = device_ptr(grad_bias);
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

// ---- batch norm ----

struct ChannelLayout {
  int64_t n, channels, spatial;
};

ChannelLayout channel_layout(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with a batch and a channel dim, got ", input.dim(),
              " dims");
  const int64_t n = input.size(0), channels = input.size(1);
  return {n, channels, n * channels == 0 ? 0 : input.numel() / (n * channels)};
}

at::Tensor optional(const std::optional<at::Tensor>& t) { return t.has_value() ? *t : at::Tensor(); }

// The dtype of save_mean / save_invstd and of the parameter gradients, as on the CPU.
at::ScalarType batch_stat_type(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& running_mean) {
  const at::Tensor& param = weight.defined() ? weight : running_mean;
  return param.defined() && param.scalar_type() != input.scalar_type() ? param.scalar_type() : input.scalar_type();
}

// The CPU keeps a 16-bit input's training statistics in its type when no
// parameter has another type (!is_mixed_type): then the float vector width
// of its kernels, else 0 (Note [16-bit batch statistics as the CPU keeps
// them] in kernels/src/norm/norm_isa.cpp).
int cpu_lanes_16bit(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  if (!at::isReducedFloatingType(input.scalar_type())) return 0;
  for (const at::Tensor* p : params) {
    if (p->defined() && p->scalar_type() != input.scalar_type()) return 0;
  }
  static const int lanes = at::get_cpu_capability() == "AVX512" ? 16 : 8;  // Vectorized<float>::size()
  return lanes;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_mlu(const at::Tensor& input_,
                                                              const std::optional<at::Tensor>& weight_opt,
                                                              const std::optional<at::Tensor>& bias_opt,
                                                              const std::optional<at::Tensor>& running_mean_opt,
                                                              const std::optional<at::Tensor>& running_var_opt,
                                                              bool training, double momentum, double eps) {
  const at::Tensor weight_ = optional(weight_opt), bias_ = optional(bias_opt);
  const at::Tensor running_mean = optional(running_mean_opt), running_var = optional(running_var_opt);
  TORCH_CHECK(training || (running_mean.defined() && running_var.defined()),
              "batch_norm on mlu: running_mean and running_var are needed outside training");
  TORCH_CHECK(at::isFloatingType(input_.scalar_type()) && kernel_dtype(input_.scalar_type()).has_value(),
              "batch_norm on mlu supports float32, float64, float16 and bfloat16 inputs, got ", input_.scalar_type());
  c10::DeviceGuard guard(input_.device());
  const ChannelLayout l = channel_layout(input_);
  for (const at::Tensor* t : {&weight_, &bias_, &running_mean, &running_var}) {
    TORCH_CHECK(!t->defined() || t->numel() == l.channels, "batch_norm: expected a parameter of ", l.channels,
                " elements (the channels), got ", t->numel());
  }
  const at::ScalarType acc = accumulate_type(input_.scalar_type());
  const at::Tensor input = input_.contiguous();
  const at::Tensor weight = in_accumulate_type(weight_, acc), bias = in_accumulate_type(bias_, acc);
  const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "batch_norm");
  const int device = input.device().index();
  at::Tensor mean, invstd;
  // Running statistics the statistics kernel can update in place (else it
  // updates contiguous copies in the accumulation type, copied back).
  const auto in_place = [&](const at::Tensor& t) {
    return !t.defined() || (t.scalar_type() == acc && t.is_contiguous() && t.device() == input.device());
  };
  const int cpu_lanes = cpu_lanes_16bit(input_, {&weight_, &bias_, &running_mean, &running_var});
  TORCH_CHECK(!training || input.numel() != 0,
              "input tensor must have at least one element, but got input_sizes = ", input.sizes());
  if (training) {
    // One kernel: mean, invstd and the running statistics, as the CPU's
    // batch_norm_cpu_update_stats_template.
    mean = at::empty({l.channels}, input.options().dtype(acc));
    invstd = at::empty({l.channels}, input.options().dtype(acc));
    const at::Tensor rm = in_place(running_mean) ? running_mean : running_mean.to(acc).contiguous();
    const at::Tensor rv = in_place(running_var) ? running_var : running_var.to(acc).contiguous();
    const void* x = device_ptr<const void>(input);
    void *m = device_ptr(mean), *is = device_ptr(invstd), *rmp = device_ptr(rm), *rvp = device_ptr(rv);
    launch_kernel(device, "batch_norm_statistics", [=] {
      k::batch_norm_training_statistics(type, l.n, l.channels, l.spatial, x, eps, momentum, m, is, rmp, rvp, cpu_lanes);
    });
    if (!rm.is_same(running_mean)) running_mean.copy_(rm);
    if (!rv.is_same(running_var)) running_var.copy_(rv);
  } else {
    mean = running_mean.to(acc).contiguous();
    invstd = at::rsqrt(running_var.to(acc) + eps);
  }
  at::Tensor output = at::empty(input.sizes(), input.options());
  if (input.numel() > 0) {
    const void *x = device_ptr<const void>(input), *m = device_ptr<const void>(mean),
               *i = device_ptr<const void>(invstd), *w = device_ptr<const void>(weight),
               *b = device_ptr<const void>(bias);
    void* y = device_ptr(output);
    // The CPU's kernel for Float16 with Float16 parameters rounds mean * scale
    // before subtracting it from the bias; all others fuse it (measured).
    const bool rounded_shift = input.scalar_type() == at::kHalf && cpu_lanes > 0;
    launch_kernel(device, "batch_norm",
                  [=] { k::batch_norm_apply(type, l.n, l.channels, l.spatial, x, m, i, w, b, y, rounded_shift); });
  }
  const at::ScalarType stats = batch_stat_type(input_, weight_, running_mean);
  const at::MemoryFormat format = input_.suggest_memory_format();
  if (format != at::MemoryFormat::Contiguous) output = output.contiguous(format);
  if (!training) {
    return {output, at::empty({0}, input.options().dtype(stats)), at::empty({0}, input.options().dtype(stats))};
  }
  return {output, mean.to(stats), invstd.to(stats)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_mlu(
    const at::Tensor& grad_out_, const at::Tensor& input_, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& running_mean_opt, const std::optional<at::Tensor>& running_var_opt,
    const std::optional<at::Tensor>& save_mean_opt, const std::optional<at::Tensor>& save_invstd_opt, bool training,
    double eps, std::array<bool, 3> mask) {
  const at::Tensor weight_ = optional(weight_opt), running_mean = optional(running_mean_opt),
                   running_var = optional(running_var_opt);
  c10::DeviceGuard guard(input_.device());
  const ChannelLayout l = channel_layout(input_);
  const at::ScalarType acc = accumulate_type(input_.scalar_type());
  const at::Tensor input = input_.contiguous(), grad_out = grad_out_.contiguous();
  const at::Tensor weight = in_accumulate_type(weight_, acc);
  at::Tensor mean, invstd;
  if (training) {
    mean = optional(save_mean_opt).to(acc).contiguous();
    invstd = optional(save_invstd_opt).to(acc).contiguous();
  } else {
    mean = running_mean.to(acc).contiguous();
    invstd = at::rsqrt(running_var.to(acc) + eps);
  }
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (mask[1]) grad_weight = at::empty({l.channels}, input.options().dtype(acc));
  if (mask[2]) grad_bias = at::empty({l.channels}, input.options().dtype(acc));
  if (input.numel() > 0) {
    const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "batch_norm_backward");
    const void *dy = device_ptr<const void>(grad_out), *x = device_ptr<const void>(input),
               *m = device_ptr<const void>(mean), *i = device_ptr<const void>(invstd),
               *w = device_ptr<const void>(weight);
    void *dx = device_ptr(grad_input), *dw = device_ptr(grad_weight), *db = device_ptr(grad_bias);
    launch_kernel(input.device().index(), "batch_norm_backward", [=] {
      k::batch_norm_backward(type, l.n, l.channels, l.spatial, dy, x, m, i, w, training, dx, dw, db);
    });
  } else {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
  }
  const at::ScalarType params = weight_.defined() ? weight_.scalar_type() : input_.scalar_type();
  if (grad_weight.defined()) grad_weight = grad_weight.to(params);
  if (grad_bias.defined()) grad_bias = grad_bias.to(params);
  const at::MemoryFormat format = input_.suggest_memory_format();
  if (grad_input.defined() && format != at::MemoryFormat::Contiguous) grad_input = grad_input.contiguous(format);
  return {grad_input, grad_weight, grad_bias};
}

// ---- group norm ----

// One kernel (mlu_kernels/norm.h group_norm) on the contiguous input: the
// statistics of each (sample, group) row and the normalisation. The output
// has the input's suggested memory format, as on the CPU (CUDA returns
// contiguous), so channels-last models keep their layout through GroupNorm.
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_mlu(const at::Tensor& input_,
                                                              const std::optional<at::Tensor>& weight_opt,
                                                              const std::optional<at::Tensor>& bias_opt, int64_t n,
                                                              int64_t c, int64_t hxw, int64_t group, double eps) {
  const at::Tensor weight_ = optional(weight_opt), bias_ = optional(bias_opt);
  TORCH_CHECK(group > 0, "Expected num groups to be greater than 0, got ", group);
  TORCH_CHECK(c % group == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of "
              "shape ",
              input_.sizes(), " and num_groups=", group);
  for (const at::Tensor* t : {&weight_, &bias_}) {
    TORCH_CHECK(!t->defined() || (t->dim() == 1 && t->numel() == c),
                "Expected weight and bias to be vectors of size "
                "equal to the number of channels in input, but got ",
                t->sizes(), " and input of shape ", input_.sizes());
  }
  TORCH_CHECK(input_.numel() == n * c * hxw, "native_group_norm: input of shape ", input_.sizes(), " is not N=", n,
              " x C=", c, " x HxW=", hxw);
  TORCH_CHECK(at::isFloatingType(input_.scalar_type()) && kernel_dtype(input_.scalar_type()).has_value(),
              "group_norm on mlu supports float32, float64, float16 and bfloat16 inputs, got ", input_.scalar_type());
  TORCH_CHECK(input_.is_contiguous(input_.suggest_memory_format()),
              "Expected X.is_contiguous(memory_format) to be true, but got false.");  // as the CPU's
  c10::DeviceGuard guard(input_.device());
  const at::ScalarType acc = accumulate_type(input_.scalar_type());
  const at::Tensor input = input_.contiguous();
  const int64_t d = c / group;
  at::Tensor mean = at::empty({n, group}, input.options().dtype(acc));
  at::Tensor rstd = at::empty({n, group}, input.options().dtype(acc));
  at::Tensor output = at::empty(input.sizes(), input.options());
  const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "group_norm");
  const int device = input.device().index();
  if (n * group > 0 && d * hxw > 0) {
    const at::Tensor weight = in_accumulate_type(weight_, acc), bias = in_accumulate_type(bias_, acc);
    const void *x = device_ptr<const void>(input), *w = device_ptr<const void>(weight),
               *b = device_ptr<const void>(bias);
    void *y = device_ptr(output), *m = device_ptr(mean), *r = device_ptr(rstd);
    launch_kernel(device, "group_norm", [=] { k::group_norm(type, n, c, hxw, group, x, w, b, eps, y, m, r); });
  } else {  // groups of no elements: mean 0 and rstd NaN, as on the CPU
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
  }
  const at::MemoryFormat format = input_.suggest_memory_format();
  if (format != at::MemoryFormat::Contiguous) output = output.contiguous(format);
  const at::ScalarType stats = stat_type(input_, weight_);
  return {output, mean.to(stats), rstd.to(stats)};
}

// ---- group norm backward ----

// The CPU's formulas (mlu_kernels/norm.h group_norm_backward) in one kernel
// on contiguous operands; gradients in the input's layout and the
// parameters' dtype, as on the CPU.
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward_mlu(T grad_out, T input, T mean, T rstd,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       int64_t n, int64_t c, int64_t hxw, int64_t group,
                                                                       std::array<bool, 3> mask) {
  TORCH_CHECK(group > 0 && c % group == 0, "native_group_norm_backward: ", c, " channels are not a multiple of ", group,
              " groups");
  const bool has_weight = weight.has_value() && weight->defined();
  const at::ScalarType param_type = has_weight ? weight->scalar_type() : input.scalar_type();
  const at::ScalarType acc = accumulate_type(input.scalar_type());
  c10::DeviceGuard guard(input.device());
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (mask[1]) grad_weight = at::empty({c}, input.options().dtype(acc));
  if (mask[2]) grad_bias = at::empty({c}, input.options().dtype(acc));
  if (input.numel() > 0) {
    const at::Tensor x = input.contiguous(), dy = grad_out.contiguous();
    const at::Tensor mu = mean.to(acc).contiguous(), rs = rstd.to(acc).contiguous();
    const at::Tensor gamma = has_weight ? weight->to(acc).contiguous() : at::Tensor();
    const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "group_norm_backward");
    const void *dyp = device_ptr<const void>(dy), *xp = device_ptr<const void>(x), *m = device_ptr<const void>(mu),
               *r = device_ptr<const void>(rs);
    const void* w = device_ptr<const void>(gamma);
    void *dx = device_ptr(grad_input), *dw = device_ptr(grad_weight), *db = device_ptr(grad_bias);
    launch_kernel(input.device().index(), "group_norm_backward",
                  [=] { k::group_norm_backward(type, n, c, hxw, group, dyp, xp, m, r, w, dx, dw, db); });
  } else {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
  }
  if (grad_input.defined()) grad_input = grad_input.contiguous(input.suggest_memory_format());
  if (grad_weight.defined()) grad_weight = grad_weight.to(param_type);
  if (grad_bias.defined()) grad_bias = grad_bias.to(param_type);
  return {grad_input, grad_weight, grad_bias};
}

// ---- the newer batch-norm entry points ----
// As on the CPU (_batch_norm_legit_cpu, _batch_norm_with_update_cpu,
// _new_batch_norm_backward_cpu), each is native_batch_norm or its backward
// under another signature.

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(T input, const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps) {
  return batch_norm_mlu(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(T input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps) {
  return batch_norm_mlu(input, weight, bias, at::Tensor(), at::Tensor(), training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    T input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, at::Tensor& running_mean,
    at::Tensor& running_var, double momentum, double eps) {
  auto [output, save_mean, save_invstd] =
      batch_norm_mlu(input, weight, bias, running_mean, running_var, /*training=*/true, momentum, eps);
  at::Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {output, save_mean, save_invstd, reserve};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> new_batch_norm_backward(
    T grad_out, T input, T weight, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, const std::optional<at::Tensor>& save_mean,
    const std::optional<at::Tensor>& save_var, bool update, double eps, std::array<bool, 3> mask, T /*reserve*/) {
  return batch_norm_backward_mlu(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
                                 mask);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/NormalizationOps.inc"
