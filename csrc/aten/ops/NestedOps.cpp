// Strided nested tensors on mlu (dispatch key NestedTensorPrivateUse1).
//
// Note [Nested kernels shared with the CPU]
// A strided nested tensor is a dense buffer (here an mlu tensor) plus its
// components' sizes, strides and offsets (CPU tensors, read on the host).
// Most of PyTorch's nested kernels only call ATen ops on the buffer and read
// that metadata: they run on any device, and CUDA registers the same
// functions. Those are registered unchanged (csrc/aten/mlu_functions.yaml lists
// every NestedTensorCPU kernel that NestedTensorCUDA shares, plus the CPU-only ones
// whose bodies only dispatch: bmm_nested, to_padded_tensor, the nested softmax
// and multi-head attention). Kernels that loop over the buffer's memory on the
// host (layer norm and its backward, sum over the last dim and its backward)
// would read device memory out of queue order: they are rewritten here on
// dense ops over the buffer, as are the jagged layout's padding conversions
// (dense PrivateUse1 ops whose CPU kernels read offsets with .item()). tests/test_nested.py checks that every kernel
// the CPU and CUDA share is registered.
#include <ATen/NestedTensorImpl.h>

#include <ATen/WrapDimUtils.h>
#include <ATen/native/nested/NestedTensorMath.h>
#include <ATen/native/nested/NestedTensorUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/split_with_sizes.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"

#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_nested_from_padded_and_nested_example_native.h>
#include <ATen/ops/_nested_select_backward_native.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <ATen/ops/_nested_tensor_softmax_with_shape_native.h>
#include <ATen/ops/_nested_tensor_storage_offsets_native.h>
#include <ATen/ops/_nested_tensor_strides_native.h>
#include <ATen/ops/_safe_softmax_native.h>
#include <ATen/ops/_softmax_backward_data_native.h>
#include <ATen/ops/_softmax_native.h>
#include <ATen/ops/_test_autograd_multiple_dispatch_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <ATen/ops/abs_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/all_native.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/cat_native.h>
#include <ATen/ops/chunk_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/cos_native.h>
#include <ATen/ops/detach_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/embedding_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/eq_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/ge_native.h>
#include <ATen/ops/gelu_native.h>
#include <ATen/ops/gelu_backward_native.h>
#include <ATen/ops/gt_native.h>
#include <ATen/ops/is_same_size_native.h>
#include <ATen/ops/isinf_native.h>
#include <ATen/ops/isnan_native.h>
#include <ATen/ops/isneginf_native.h>
#include <ATen/ops/isposinf_native.h>
#include <ATen/ops/linear_backward_native.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/logical_not_native.h>
#include <ATen/ops/masked_fill_native.h>
#include <ATen/ops/matmul_backward_native.h>
#include <ATen/ops/matmul_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/narrow_native.h>
#include <ATen/ops/native_dropout_backward_native.h>
#include <ATen/ops/native_dropout_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/normal_native.h>
#include <ATen/ops/ones_like_native.h>
#include <ATen/ops/relu_native.h>
#include <ATen/ops/select_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/split_with_sizes_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/squeeze_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/to_padded_tensor_native.h>
#include <ATen/ops/transpose_native.h>
#include <ATen/ops/unbind_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/value_selecting_reduction_backward_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/where_native.h>
#include <ATen/ops/zero_native.h>
namespace torch_mlu {
namespace {

using at::native::get_nested_tensor_impl;
using at::native::wrap_buffer;

// The buffer of a contiguous nested tensor (the kernels below read it as the
// components laid end to end).
at::Tensor contiguous_buffer(const at::Tensor& nt, const char* op) {
  const at::native::NestedTensorImpl* impl = get_nested_tensor_impl(nt);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl), op,
              ": NestedTensor does not support a non-contiguous input for now; call .contiguous() first");
  return impl->get_buffer();
}

// ---- layer norm: native_layer_norm over the buffer seen as [M, N] rows ----

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight_opt,
                                                                 const std::optional<at::Tensor>& bias_opt,
                                                                 double eps) {
  TORCH_CHECK(weight_opt && bias_opt, "NestedTensor layer_norm requires weight and bias");
  const at::Tensor& weight = *weight_opt;
  const at::Tensor& bias = *bias_opt;
  TORCH_CHECK(!weight.is_nested(), "NestedTensor weight not supported for layer_norm");
  TORCH_CHECK(!bias.is_nested(), "NestedTensor bias not supported for layer_norm");
  const at::Tensor buffer = contiguous_buffer(input, "layer_norm");
  const auto [M, N] =
      at::native::_check_nested_layer_norm_inputs(*get_nested_tensor_impl(input), normalized_shape, weight, bias);
  auto [out, mean, rstd] = at::native_layer_norm(buffer.view({M, N}), {N}, weight.reshape({N}), bias.reshape({N}), eps);
  // The CPU's mean and rstd are [M], one per row.
  return {wrap_buffer(out.view({-1}), get_nested_tensor_impl(input)->get_nested_sizes().clone()), mean.view({M}),
          rstd.view({M})};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm_backward(
    const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
    std::array<bool, 3> output_mask) {
  TORCH_CHECK(weight_opt && bias_opt, "NestedTensor layer_norm requires weight and bias");
  const at::Tensor buffer = contiguous_buffer(input, "layer_norm_backward");
  const at::Tensor grad_buffer = contiguous_buffer(grad, "layer_norm_backward");
  const auto [M, N] = at::native::_check_nested_layer_norm_inputs(*get_nested_tensor_impl(input), normalized_shape,
                                                                  *weight_opt, *bias_opt);
  auto [grad_input, grad_weight, grad_bias] =
      at::native_layer_norm_backward(grad_buffer.view({M, N}), buffer.view({M, N}), {N}, mean.view({M, 1}),
                                     rstd.view({M, 1}), weight_opt->reshape({N}), bias_opt->reshape({N}), output_mask);
  if (grad_input.defined()) {
    grad_input = wrap_buffer(grad_input.view({-1}), get_nested_tensor_impl(input)->get_nested_sizes().clone());
  }
  if (grad_weight.defined()) grad_weight = grad_weight.view(weight_opt->sizes());
  if (grad_bias.defined()) grad_bias = grad_bias.view(bias_opt->sizes());
  return {grad_input, grad_weight, grad_bias};
}

// ---- sum over the last dim (keepdim, as the CPU requires) ----

// Each component's elements, in buffer order, as [rows, last] (an empty list
// for components with no element).
std::vector<at::Tensor> component_rows(const at::Tensor& buffer, const at::Tensor& sizes) {
  const int64_t count = sizes.size(0), dims = sizes.size(1);
  const int64_t* s = sizes.const_data_ptr<int64_t>();  // CPU metadata
  std::vector<int64_t> numels(count);
  std::vector<int64_t> lasts(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t numel = 1;
    for (int64_t d = 0; d < dims; ++d) numel *= s[i * dims + d];
    numels[i] = numel;
    lasts[i] = s[i * dims + dims - 1];
  }
  std::vector<at::Tensor> parts = at::split_with_sizes(buffer.view({-1}), numels);
  for (int64_t i = 0; i < count; ++i) parts[i] = parts[i].view({lasts[i] == 0 ? 0 : -1, lasts[i]});
  return parts;
}

at::Tensor nested_sum_dim(const at::Tensor& self, at::OptionalIntArrayRef opt_dims, bool keepdim,
                          std::optional<at::ScalarType> dtype) {
  const at::IntArrayRef dims = opt_dims.value_or(at::IntArrayRef{});
  TORCH_CHECK(dims.size() == 1, "NestedTensor only allows reduction of a single dimension for now.");
  const int64_t dim = at::maybe_wrap_dim(dims[0], self.dim());
  TORCH_CHECK(dim == self.dim() - 1, "NestedTensor can only be reduced across the last dimension for now ",
              "got dimension ", dim, " instead.");
  TORCH_CHECK(keepdim, "NestedTensor always requires keepdim=True for now.");
  TORCH_CHECK(!dtype, "NestedTensor does not support dtype argument for now.");
  const at::native::NestedTensorImpl* impl = get_nested_tensor_impl(self);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl),
              "NestedTensor does not support reductions when the input is noncontiguous for now.");
  if (impl->size(0) == 0) return self;
  const at::Tensor& sizes = impl->get_nested_sizes();
  at::Tensor out_sizes = sizes.clone();
  out_sizes.select(1, -1).fill_(1);
  std::vector<at::Tensor> sums;
  for (const at::Tensor& rows : component_rows(impl->get_buffer(), sizes)) sums.push_back(rows.sum(-1));
  return wrap_buffer(at::cat(sums), out_sizes);
}

at::Tensor nested_sum_backward(const at::Tensor& grad, const at::Tensor& self, at::OptionalIntArrayRef opt_dims,
                               bool keepdim) {
  TORCH_CHECK(grad.is_nested(), "NestedTensor sum backward requires a nested gradient");
  const at::native::NestedTensorImpl* impl = get_nested_tensor_impl(self);
  const at::Tensor& sizes = impl->get_nested_sizes();
  const at::Tensor grad_buffer = contiguous_buffer(grad, "sum backward");
  std::vector<at::Tensor> rows = component_rows(impl->get_buffer(), sizes);
  std::vector<at::Tensor> parts;
  int64_t start = 0;
  for (const at::Tensor& r : rows) {
    parts.push_back(grad_buffer.narrow(0, start, r.size(0)).unsqueeze(1).expand(r.sizes()).reshape({-1}));
    start += r.size(0);
  }
  return wrap_buffer(at::cat(parts), sizes.clone());
}

// ---- the jagged layout's conversions (dense ops on values and offsets) ----

// The offsets of a jagged dim on the host (one wait for the queue, as the
// CPU's .item() reads).
std::vector<int64_t> host_offsets(at::TensorList offsets_list, const char* op) {
  TORCH_INTERNAL_ASSERT(offsets_list.size() == 1, op, ": only a single jagged dim is supported for now");
  const at::Tensor& offsets = offsets_list[0];
  TORCH_CHECK(offsets.dim() == 1, op, ": expected 1D offsets, but got offsets.dim() == ", offsets.dim());
  const at::Tensor host = offsets.to(at::kCPU, at::kLong).contiguous();
  return {host.const_data_ptr<int64_t>(), host.const_data_ptr<int64_t>() + host.numel()};
}

// values [total, ...] -> [B, max_length, ...] padded with padding_value; rows
// longer than max_length are cut, as on the CPU and CUDA.
at::Tensor jagged_to_padded_dense(const at::Tensor& values, at::TensorList offsets_list, at::IntArrayRef max_lengths,
                                  double padding_value) {
  TORCH_INTERNAL_ASSERT(offsets_list.size() == 1 && max_lengths.size() == 1,
                        "_jagged_to_padded_dense_forward(): only a single jagged dim is supported for now");
  const std::vector<int64_t> offsets = host_offsets(offsets_list, "_jagged_to_padded_dense_forward()");
  const int64_t batch = static_cast<int64_t>(offsets.size()) - 1, max_length = max_lengths[0];
  std::vector<int64_t> shape{batch, max_length};
  shape.insert(shape.end(), values.sizes().begin() + 1, values.sizes().end());
  at::Tensor padded = values.new_full(shape, padding_value);
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t length = std::min(offsets[i + 1] - offsets[i], max_length);
    if (length > 0) padded.select(0, i).slice(0, 0, length).copy_(values.slice(0, offsets[i], offsets[i] + length));
  }
  return padded;
}

at::Tensor padded_dense_to_jagged(const at::Tensor& padded, at::TensorList offsets_list,
                                  std::optional<int64_t> total_L) {
  const std::vector<int64_t> offsets = host_offsets(offsets_list, "_padded_dense_to_jagged_forward()");
  const int64_t final_offset = offsets.back();
  const int64_t total = total_L.value_or(final_offset);
  TORCH_CHECK(!total_L.has_value() || final_offset == total,
              "_padded_dense_to_jagged_forward(): final offset should match total_L value");
  TORCH_CHECK(padded.dim() >= 2,
              "_padded_dense_to_jagged_forward(): expected padded dim >= 2, but padded.dim() == ", padded.dim());
  std::vector<int64_t> shape{total};
  shape.insert(shape.end(), padded.sizes().begin() + 2, padded.sizes().end());
  at::Tensor values = padded.new_empty(shape);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    const int64_t length = offsets[i + 1] - offsets[i];
    TORCH_CHECK(length <= padded.size(1), "_padded_dense_to_jagged_forward(): found batch item of length ", length,
                " when max length specified by padded input is ", padded.size(1));
    if (length > 0) values.slice(0, offsets[i], offsets[i + 1]).copy_(padded.select(0, i).slice(0, 0, length));
  }
  return values;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/NestedOps.inc"
