// Convolutions on mlu: PyTorch routes every conv (conv1d/2d/3d, transposed,
// grouped, "same" padding) on a device it has no backend for to
// convolution_overrideable and convolution_backward_overrideable; both run
// the kernel library's convolutions (mlu_kernels/conv.h: oneDNN's where the
// build has it, else im2col + GEMM) on the current stream. at::convolution has already checked the arguments and
// added the batch dim. Results and gradients are contiguous (Note
// [Convolution results are contiguous]); ungrouped regular convolutions with
// channels-last operands run on the channels-last kernels (no layout copies
// of the operands), the others on contiguous (NCHW) copies.
//
// Note [Convolution results are contiguous]
// PyTorch's own shape functions for a backend it routes to
// convolution_overrideable (the meta kernel, and the fake tensors that
// torch.compile, torch.export and DTensor trace with) declare contiguous
// results and gradients, whatever the operands' layout. A compiled graph
// relies on that: Inductor lays its buffers out by those declarations (and
// turns convolution operands channels-last on its own). So mlu keeps to them,
// where the CPU (oneDNN, cuDNN on CUDA) returns channels-last results for
// channels-last operands: the values are the CPU's, the strides deliberately
// not.
#include <algorithm>

#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <mlu_kernels/conv.h>
#include <mlu_kernels/gemm.h>

#include "csrc/aten/CpuOneDnn.h"
#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

// The forward convolution (regular or transposed) takes the integer dtypes
// too, as the CPU's slow convolutions do; gradients only exist for floating ones.
k::ScalarType conv_dtype(const at::Tensor& t, bool integers_allowed) {
  const auto type = kernel_dtype(t.scalar_type());
  const bool integer = c10::isIntegralType(t.scalar_type(), /*includeBool=*/false);
  TORCH_CHECK(type.has_value() && k::gemm_supports(*type) &&
                  (at::isFloatingType(t.scalar_type()) || (integers_allowed && integer)),
              "convolution on mlu supports float32, float64, float16, bfloat16", integers_allowed ? " and integer" : "",
              " tensors, got ", t.scalar_type(), "; convert the input and weight (e.g. .float()) first");
  return *type;
}

void check_devices(const at::Tensor& a, const at::Tensor& b, const at::Tensor* c = nullptr) {
  for (const at::Tensor* t : {&b, c}) {
    if (t == nullptr || !t->defined()) continue;
    TORCH_CHECK(t->device() == a.device(),
                "Expected all tensors to be on the same device, but found at least two "
                "devices, ",
                a.device(), " and ", t->device(), "! (when checking arguments for convolution)");
  }
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Input type (", a.scalar_type(), ") and weight type (",
              b.scalar_type(), ") should be the same");
}

// The memory format of channels-last operands (input or weight), if any.
at::MemoryFormat operands_format(const at::Tensor& input, const at::Tensor& weight) {
  const auto cl = input.dim() == 5 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
  if (input.dim() < 4 || (input.suggest_memory_format() != cl && weight.suggest_memory_format() != cl)) {
    return at::MemoryFormat::Contiguous;
  }
  return cl;
}

// The regular convolution from `small`-side (output) and `big`-side (input)
// tensors: big [N, C_in, *in], weight [C_out, C_in / groups, *k], small
// [N, C_out, *out].
// The layout the kernels run in. Regular ungrouped convolutions with 2 or
// 3 spatial dims take the channels-last kernels (conv.h *_channels_last)
// when an operand is channels-last, and also for contiguous operands when
// the output is small (under 256 positions) and the kernel not 1x1: the
// late layers, whose NCHW GEMMs are short and wide; the layout copies cost
// less than that there. The stem and the 1x1 layers got slower that way, so
// they stay NCHW (ResNet timings: docs/bench_models.md). oneDNN (Note
// [oneDNN convolutions] in kernels/src/conv/conv_dnnl.h) runs both layouts
// at full speed: where it takes the dtype, Note [oneDNN convolutions'
// layout] decides.
at::MemoryFormat kernel_layout(at::MemoryFormat operands, const at::Tensor& input, const at::Tensor& weight,
                               at::IntArrayRef out_spatial, bool transposed, int64_t groups, k::ScalarType type) {
  if (transposed || groups != 1 || input.dim() < 4 || !at::isFloatingType(input.scalar_type())) {
    return at::MemoryFormat::Contiguous;
  }
  if (k::conv_library_takes(type)) {
    // Note [oneDNN convolutions' layout]
    // oneDNN reorders the weights on every call whatever their layout, so
    // the input's layout decides: a channels-last input runs channels-last
    // (its result copied back, Note [Convolution results are contiguous]), a
    // contiguous one as it is, through oneDNN's channel-blocked layouts. But
    // 3-D bfloat16 convolutions run channels-last either way: oneDNN's
    // channels-last bfloat16 kernels (brgconv) beat its blocked ones there by
    // more than the copies cost (the (2+1)-D video model's training step
    // 109 -> 94 ms; float32, and 2-D bfloat16 ResNet layers, got slower).
    const auto cl = input.dim() == 5 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
    if (input.dim() == 5 && type == k::ScalarType::BFloat16) return cl;
    return input.suggest_memory_format() == cl ? cl : at::MemoryFormat::Contiguous;
  }
  int64_t positions = 1, taps = 1;
  for (size_t d = 0; d < out_spatial.size(); ++d) {
    positions *= out_spatial[d];
    taps *= weight.size(static_cast<int64_t>(d) + 2);
  }
  const bool small_late_layer = positions < 256 && taps > 1;
  if (operands == at::MemoryFormat::Contiguous && !small_late_layer) return at::MemoryFormat::Contiguous;
  return input.dim() == 5 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
}

k::ConvShape conv_shape(const at::Tensor& big, const at::Tensor& weight, at::IntArrayRef small_spatial,
                        at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  k::ConvShape s;
  s.dims = static_cast<int>(big.dim() - 2);
  TORCH_CHECK(s.dims >= 1 && s.dims <= 3, "convolution on mlu: expected 1 to 3 spatial dims, got ", s.dims);
  s.batch = big.size(0);
  s.in_channels = big.size(1);
  s.out_channels = weight.size(0);
  s.groups = groups;
  for (int d = 0; d < s.dims; ++d) {
    s.in_size[d] = big.size(d + 2);
    s.out_size[d] = small_spatial[d];
    s.kernel[d] = weight.size(d + 2);
    s.stride[d] = stride[stride.size() == 1 ? 0 : d];
    s.padding[d] = padding[padding.size() == 1 ? 0 : d];
    s.dilation[d] = dilation[dilation.size() == 1 ? 0 : d];
  }
  return s;
}

// The way the CPU runs a 16-bit transposed convolution, as
// ConvParams::use_mkldnn and cpublas::gemm choose it (Note [16-bit
// transposed convolution as the CPU sums it] in kernels/src/conv/conv.cpp).
// `s` is the regular convolution from the output to the input.
k::TransposedSums16 cpu_transposed_sums(const k::ConvShape& s, at::ScalarType type, at::IntArrayRef stride,
                                        at::IntArrayRef output_padding) {
  bool output_padding_big = false;
  for (size_t d = 0; d < output_padding.size(); ++d) {
    output_padding_big = output_padding_big || output_padding[d] >= stride[stride.size() == 1 ? 0 : d];
  }
  if (cpu_mkldnn_takes(type) && !output_padding_big) return k::TransposedSums16::onednn;
  // slow_conv_transpose's columns GEMM: m = input positions, n = output
  // channels x taps, k = input channels (per group); oneDNN takes BFloat16
  // ones above 16^3 (mkldnn_gemm).
  int64_t positions = 1, taps = 1;
  for (int d = 0; d < s.dims; ++d) {
    positions *= s.out_size[d];
    taps *= s.kernel[d];
  }
  const int64_t mnk = positions * (s.in_channels / s.groups) * taps * (s.out_channels / s.groups);
  if (type == at::kBFloat16 && cpu_mkldnn_takes(type) && mnk > 16 * 16 * 16) return k::TransposedSums16::slow_pairs;
  return k::TransposedSums16::slow;
}

at::Tensor convolution_mlu(const at::Tensor& input_, const at::Tensor& weight_, const std::optional<at::Tensor>& bias_,
                           at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                           at::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor bias_given = bias_.has_value() ? *bias_ : at::Tensor();
  check_devices(input_, weight_, &bias_given);
  const k::ScalarType type = conv_dtype(input_, /*integers_allowed=*/true);
  c10::DeviceGuard guard(input_.device());
  const int dims = static_cast<int>(input_.dim() - 2);
  auto at_dim = [](at::IntArrayRef v, int d) { return v[v.size() == 1 ? 0 : d]; };
  std::vector<int64_t> out_sizes{input_.size(0), transposed ? weight_.size(1) * groups : weight_.size(0)};
  for (int d = 0; d < dims; ++d) {
    const int64_t in = input_.size(d + 2), kernel = weight_.size(d + 2);
    const int64_t span = at_dim(dilation, d) * (kernel - 1);
    out_sizes.push_back(transposed ? (in - 1) * at_dim(stride, d) - 2 * at_dim(padding, d) + span +
                                         at_dim(output_padding, d) + 1
                                   : (in + 2 * at_dim(padding, d) - span - 1) / at_dim(stride, d) + 1);
  }
  const at::MemoryFormat layout = kernel_layout(operands_format(input_, weight_), input_, weight_,
                                                at::IntArrayRef(out_sizes).slice(2), transposed, groups, type);
  const bool channels_last = layout != at::MemoryFormat::Contiguous;
  const at::Tensor input = input_.contiguous(layout), weight = weight_.contiguous(layout);
  const at::Tensor bias = bias_given.defined() ? bias_given.contiguous() : at::Tensor();
  if (channels_last) {
    // Note [Channels-last convolution] (conv_nhwc.cpp): no NCHW copies.
    at::Tensor output = at::empty(out_sizes, input.options().memory_format(layout));
    if (output.numel() > 0) {
      const k::ConvShape s =
          conv_shape(input, weight, at::IntArrayRef(out_sizes).slice(2), stride, padding, dilation, groups);
      const void *in = device_ptr<const void>(input), *w = device_ptr<const void>(weight),
                 *b = device_ptr<const void>(bias);
      void* out = device_ptr(output);
      launch_kernel(input.device().index(), "convolution",
                    [=] { k::conv_forward_channels_last(s, type, in, w, b, out); });
    }
    return output.contiguous();
  }
  at::Tensor output = at::empty(out_sizes, input.options());
  if (output.numel() > 0) {
    if (!transposed) {
      const k::ConvShape s =
          conv_shape(input, weight, at::IntArrayRef(out_sizes).slice(2), stride, padding, dilation, groups);
      const void *in = device_ptr<const void>(input), *w = device_ptr<const void>(weight),
                 *b = device_ptr<const void>(bias);
      void* out = device_ptr(output);
      launch_kernel(input.device().index(), "convolution", [=] { k::conv_forward(s, type, in, w, b, out); });
    } else {
      // The transposed convolution is the backward-input op of the regular
      // convolution from `output` to `input`.
      const k::ConvShape s = conv_shape(output, weight, input.sizes().slice(2), stride, padding, dilation, groups);
      const void *in = device_ptr<const void>(input), *w = device_ptr<const void>(weight),
                 *b = device_ptr<const void>(bias);
      void* out = device_ptr(output);
      if (at::isReducedFloatingType(input.scalar_type())) {
        const k::TransposedSums16 sums = cpu_transposed_sums(s, input.scalar_type(), stride, output_padding);
        launch_kernel(input.device().index(), "convolution_transpose",
                      [=] { k::conv_transpose_16bit(s, type, sums, in, w, b, out); });
      } else {
        launch_kernel(input.device().index(), "convolution_transpose",
                      [=] { k::conv_backward_input(s, type, in, w, b, out); });
      }
    }
  }
  return output;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_mlu(
    const at::Tensor& grad_output_, const at::Tensor& input_, const at::Tensor& weight_, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> mask) {
  check_devices(input_, weight_, &grad_output_);
  const k::ScalarType type = conv_dtype(input_, /*integers_allowed=*/false);
  c10::DeviceGuard guard(input_.device());
  const at::MemoryFormat layout = kernel_layout(operands_format(input_, weight_), input_, weight_,
                                                grad_output_.sizes().slice(2), transposed, groups, type);
  const bool channels_last = layout != at::MemoryFormat::Contiguous;
  const at::Tensor grad_output = grad_output_.contiguous(layout), input = input_.contiguous(layout),
                   weight = weight_.contiguous(layout);
  at::Tensor grad_input, grad_weight, grad_bias;
  const int device = input.device().index();
  if (mask[0]) grad_input = at::empty(input.sizes(), input.options().memory_format(layout));
  if (mask[1]) {
    // A weight of one tap per channel pair (1x1) is laid out alike in both
    // formats; its gradient keeps the weight's strides, as the CPU's does.
    const bool one_tap = weight.numel() == weight.size(0) * weight.size(1);
    grad_weight =
        at::empty(weight.sizes(), weight.options().memory_format(one_tap ? weight_.suggest_memory_format() : layout));
  }
  if (mask[2]) grad_bias = at::empty({grad_output.size(1)}, grad_output.options());
  const bool empty = grad_output.numel() == 0 || input.numel() == 0;
  if (channels_last) {
    const k::ConvShape s = conv_shape(input, weight, grad_output.sizes().slice(2), stride, padding, dilation, groups);
    const void *go = device_ptr<const void>(grad_output), *in = device_ptr<const void>(input),
               *w = device_ptr<const void>(weight);
    if (mask[0] && !empty) {
      void* gi = device_ptr(grad_input);
      launch_kernel(device, "convolution_backward_input",
                    [=] { k::conv_backward_input_channels_last(s, type, go, w, gi); });
    }
    if (mask[1] && !empty) {
      void *gw = device_ptr(grad_weight), *gb = mask[2] ? device_ptr(grad_bias) : nullptr;
      launch_kernel(device, "convolution_backward_weight",
                    [=] { k::conv_backward_weight_channels_last(s, type, go, in, gw, gb); });
    }
  } else if (!transposed) {
    const k::ConvShape s = conv_shape(input, weight, grad_output.sizes().slice(2), stride, padding, dilation, groups);
    const void *go = device_ptr<const void>(grad_output), *in = device_ptr<const void>(input),
               *w = device_ptr<const void>(weight);
    if (mask[0] && !empty) {
      void* gi = device_ptr(grad_input);
      launch_kernel(device, "convolution_backward_input", [=] { k::conv_backward_input(s, type, go, w, nullptr, gi); });
    }
    if (mask[1] && !empty) {
      void *gw = device_ptr(grad_weight), *gb = mask[2] ? device_ptr(grad_bias) : nullptr;
      launch_kernel(device, "convolution_backward_weight", [=] { k::conv_backward_weight(s, type, go, in, gw, gb); });
    }
  } else {
    // input -> grad_output is the backward-input op of the regular
    // convolution s from grad_output's side to input's side.
    const k::ConvShape s = conv_shape(grad_output, weight, input.sizes().slice(2), stride, padding, dilation, groups);
    const void *go = device_ptr<const void>(grad_output), *in = device_ptr<const void>(input),
               *w = device_ptr<const void>(weight);
    if (mask[0] && !empty) {
      void* gi = device_ptr(grad_input);
      launch_kernel(device, "convolution_transpose_backward_input",
                    [=] { k::conv_forward(s, type, go, w, nullptr, gi); });
    }
    if (mask[1] && !empty) {
      void* gw = device_ptr(grad_weight);
      launch_kernel(device, "convolution_transpose_backward_weight",
                    [=] { k::conv_backward_weight(s, type, in, go, gw, nullptr); });
    }
  }
  if (empty) {
    if (mask[0]) grad_input.zero_();
    if (mask[1]) grad_weight.zero_();
  }
  if (mask[2] && (transposed || !mask[1] || empty)) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
    grad_bias = at::sum(grad_output, dims);
  }
  if (grad_input.defined()) grad_input = grad_input.contiguous();
  if (grad_weight.defined()) grad_weight = grad_weight.contiguous();  // the CPU's backends do the same
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ConvolutionOps.inc"
