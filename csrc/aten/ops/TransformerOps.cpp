// The Transformer inference fast path on mlu: nn.TransformerEncoderLayer /
// nn.MultiheadAttention in eval() call _transformer_encoder_layer_fwd and
// _native_multi_head_attention, on dense batches or on nested tensors
// (TransformerEncoder packs a padded batch with _nested_tensor_from_mask).
//
// PyTorch's bodies of those ops, of the mask packing and of the padding
// conversions only dispatch ATen ops (Note [Nested kernels shared with the
// CPU]): they are registered here for PrivateUse1 unchanged. The two steps
// the CPU runs as host loops are written on dense ops:
// _transform_bias_rescale_qkv and _masked_softmax (with its backward).
#include <cmath>
#include <limits>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_masked_softmax_native.h>
#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_nested_from_padded_native.h>
#include <ATen/ops/_nested_tensor_from_mask_native.h>
#include <ATen/ops/_nested_view_from_buffer_native.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <ATen/ops/eq.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

// 1/sqrt(dim_per_head) as the CPU kernel has it: rounded to the tensor's type.
double inverse_sqrt_head_dim(at::ScalarType type, int64_t dim_per_head) {
  double scale = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "transform_bias_rescale_qkv", [&] {
    const scalar_t s = 1.0 / std::sqrt(static_cast<scalar_t>(dim_per_head));
    scale = static_cast<double>(s);
  });
  return scale;
}

// q = (q + q_bias) / sqrt(dim_per_head), k = k + k_bias, v = v + v_bias, each
// [B, heads, T, dim_per_head]; a nested qkv is padded with zeros first. The
// sums and the scaling are done in the op math type and rounded once, as the
// CPU does.
std::tuple<at::Tensor, at::Tensor, at::Tensor> transform_bias_rescale_qkv(T qkv, T qkv_bias, int64_t num_head) {
  const at::Tensor padded = qkv.is_nested() ? qkv.to_padded_tensor(0) : qkv;
  TORCH_CHECK(padded.dim() == 3, "_transform_bias_rescale_qkv: expected qkv of shape [B, T, 3 * D], got ",
              padded.sizes());
  const int64_t B = padded.size(0), T_ = padded.size(1), three_d = padded.size(2), D = three_d / 3;
  TORCH_CHECK(D % num_head == 0);
  TORCH_CHECK(three_d % 3 == 0);
  const int64_t dim_per_head = D / num_head;
  const at::ScalarType type = padded.scalar_type();
  const at::ScalarType math = at::toOpMathType(type);
  at::Tensor x =
      padded.to(math).view({B, T_, 3, num_head, dim_per_head}) + qkv_bias.to(math).view({3, num_head, dim_per_head});
  x.select(2, 0).mul_(inverse_sqrt_head_dim(type, dim_per_head));
  const at::Tensor q_k_v = x.permute({2, 0, 3, 1, 4}).to(type).contiguous();
  return {q_k_v[0], q_k_v[1], q_k_v[2]};
}

// The mask as input's shape: mask_type 0 is an [L, L] attention mask, 1 a
// [B, L] key padding mask (both for 4-D input [B, heads, L, L] and a 2-D
// mask), 2 a mask of input's shape; True masks a position out.
at::Tensor expanded_mask(T input, T mask, std::optional<int64_t> mask_type) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  int64_t type = mask_type.value_or(2);
  if (mask.dim() != 2 || input.dim() != 4) type = 2;  // types 0 and 1 are for 2-D masks and 4-D inputs
  if (type == 1) {
    TORCH_CHECK(input.size(0) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 1 mask shape should be (B, L)");
    return mask.view({input.size(0), 1, 1, input.size(2)}).expand(input.sizes());
  }
  if (type == 0) {
    TORCH_CHECK(input.size(2) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 0 mask shape should be (L, L)");
    return mask.view({1, 1, input.size(2), input.size(2)}).expand(input.sizes());
  }
  TORCH_CHECK(input.sizes() == mask.sizes(), "For mask_type == 2 mask shape should match input shape");
  return mask;
}

// Softmax over the unmasked positions; masked ones are 0, and a row masked
// entirely is NaN, as on the CPU.
at::Tensor masked_softmax(T input, T mask, std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  const at::Tensor full_mask = expanded_mask(input, mask, mask_type);
  const int64_t d = at::maybe_wrap_dim(dim.value_or(input.dim() - 1), std::max<int64_t>(input.dim(), 1));
  const at::Tensor filled = input.masked_fill(full_mask, -std::numeric_limits<double>::infinity());
  return at::_softmax(filled.dim() == 0 ? filled.view(1) : filled, d, false).view(input.sizes());
}

at::Tensor masked_softmax_backward(T grad, T output, T mask, std::optional<int64_t> dim) {
  TORCH_CHECK(grad.sizes() == mask.sizes(), "Mask shape should match grad shape");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  const int64_t d = at::maybe_wrap_dim(dim.value_or(output.dim() - 1), std::max<int64_t>(output.dim(), 1));
  const at::Tensor masked_output = output.masked_fill(mask, 0);
  return at::_softmax_backward_data(grad.masked_fill(mask, 0), masked_output, d, grad.scalar_type())
      .masked_fill(mask, 0);
}

// torch.equal: same shape and equal elements (after type promotion, NaN
// unequal); the answer is a host bool, so it waits for the queue.
bool equal_mlu(T self, T other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ", self.device(),
              " and ", other.device());
  if (!self.is_same_size(other)) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/TransformerOps.inc"
