// nn.EmbeddingBag / F.embedding_bag on mlu (mlu_kernels/embedding_bag.h):
// _embedding_bag (and _forward_only), _embedding_bag_dense_backward and
// _embedding_bag_per_sample_weights_backward and _embedding_bag_backward
// (dense gradients). Indices and offsets are taken as int64; the
// bags' bounds are the offsets plus the end of indices (unless
// include_last_offset). Bad indices and offsets are device-side errors with
// the CPU's texts, raised at the next synchronisation. Results follow the
// CUDA layout (PyTorch's meta function for non-CPU devices): offset2bag
// [num_indices], bag_size [offsets.size(0)], max_indices [bags, dim] for max
// mode, else empty.
#include <ATen/ops/_embedding_bag_sparse_backward.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/embedding_bag.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using W = const std::optional<at::Tensor>&;
using Bags = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

std::string bag_message(const k::BagCheck& c, int64_t num_indices) {
  switch (c.kind) {
    case k::BagCheck::BadIndex:
      return "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be " + std::to_string(c.value);
    case k::BagCheck::FirstOffsetNotZero:
      return "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
             "However, got " +
             std::to_string(c.value);
    case k::BagCheck::OffsetsDecrease:
      return "embedding_bag: offsets have to be non-decreasing, got " + std::to_string(c.value) + " after a larger one";
    case k::BagCheck::OffsetPastEnd:
      return "offsets[-1] can not be greater than input's length " + std::to_string(num_indices) +
             " but got offsets[-1] of " + std::to_string(c.value);
    case k::BagCheck::Ok:
      break;
  }
  return {};
}

bool has_bag_kernel(T weight) {
  return at::isFloatingType(weight.scalar_type()) && kernel_dtype(weight.scalar_type()).has_value();
}

// The kernel's view of a call: int64 indices, the bags' bounds, contiguous weight rows.
struct BagCall {
  at::Tensor weight, indices, bounds, per_sample_weights;
  k::EmbeddingBagArgs args;
};

BagCall bag_call(T weight, T indices_, T offsets_, int64_t mode, W per_sample_weights, bool include_last_offset,
                 int64_t padding_idx) {
  TORCH_CHECK(indices_.scalar_type() == at::kLong || indices_.scalar_type() == at::kInt,
              "expected indices to be long or int, got ", indices_.scalar_type());
  TORCH_CHECK(offsets_.scalar_type() == at::kLong || offsets_.scalar_type() == at::kInt,
              "expected offsets to be long or int, got ", offsets_.scalar_type());
  TORCH_CHECK(indices_.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices_.dim());
  TORCH_CHECK(offsets_.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets_.dim());
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag: unknown mode ", mode);
  BagCall call;
  call.weight = weight.stride(1) == 1 ? weight : weight.contiguous();
  call.indices = indices_.to(at::kLong).contiguous();
  const at::Tensor offsets = offsets_.to(at::kLong);
  int64_t num_bags = offsets.size(0);
  if (include_last_offset) {
    TORCH_CHECK(num_bags >= 1, "include_last_offset: numBags should be at least 1");
    --num_bags;
    call.bounds = offsets.contiguous();
  } else {
    call.bounds = at::cat({offsets, at::full({1}, call.indices.size(0), offsets.options())});
  }
  const bool weighted = per_sample_weights.has_value() && per_sample_weights->defined();
  if (weighted) {
    TORCH_CHECK(mode == 0, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(per_sample_weights->dim() == 1, "expected per_sample_weights to be 1D tensor, got ",
                per_sample_weights->dim(), "D");
    TORCH_CHECK(per_sample_weights->numel() == call.indices.numel(), "expected per_sample_weights.numel() (",
                per_sample_weights->numel(), " to be the same as indices.numel() (", call.indices.numel(), ")");
    call.per_sample_weights = per_sample_weights->to(weight.scalar_type()).contiguous();
  }
  k::EmbeddingBagArgs& a = call.args;
  a.type = *kernel_dtype(weight.scalar_type());
  a.num_weights = call.weight.size(0);
  a.dim = call.weight.size(1);
  a.num_indices = call.indices.size(0);
  a.num_bags = num_bags;
  a.weight = device_ptr<const void>(call.weight);
  a.weight_row_stride = call.weight.stride(0);
  a.indices = device_ptr<const int64_t>(call.indices);
  a.bounds = device_ptr<const int64_t>(call.bounds);
  a.per_sample_weights = device_ptr<const void>(call.per_sample_weights);
  a.mode = static_cast<k::BagMode>(mode);
  a.padding_idx = padding_idx;
  return call;
}

Bags embedding_bag_mlu(T weight, T indices, T offsets, bool scale_grad_by_freq, int64_t mode, bool sparse,
                       W per_sample_weights, bool include_last_offset, int64_t padding_idx) {
  TORCH_CHECK(has_bag_kernel(weight), "embedding_bag on mlu expects a floating-point weight, got ",
              weight.scalar_type());
  c10::DeviceGuard guard(weight.device());
  const BagCall call = bag_call(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx);
  const k::EmbeddingBagArgs a = call.args;
  at::Tensor output = at::empty({a.num_bags, a.dim}, weight.options());
  const auto long_options = call.indices.options();
  at::Tensor offset2bag = at::empty({a.num_indices}, long_options);
  at::Tensor bag_size = at::zeros({offsets.size(0)}, long_options);
  at::Tensor max_indices = mode == 2 ? at::empty({a.num_bags, a.dim}, long_options) : at::empty({0}, long_options);
  void* out = device_ptr(output);
  int64_t* o2b = device_ptr<int64_t>(offset2bag);
  int64_t* sizes = device_ptr<int64_t>(bag_size);
  int64_t* best = device_ptr<int64_t>(max_indices);
  launch_kernel(weight.device().index(), "embedding_bag", [=](mlu::TaskContext& context) {
    const k::BagCheck found = k::embedding_bag(a, out, o2b, sizes, best);
    if (found.kind != k::BagCheck::Ok) context.fail(bag_message(found, a.num_indices));
  });
  return {output, offset2bag, bag_size, max_indices};
}

at::Tensor dense_backward_mlu(T grad, T indices, T offset2bag, T bag_size, T max_indices, int64_t num_weights,
                              bool scale_grad_by_freq, int64_t mode, W per_sample_weights, int64_t padding_idx) {
  TORCH_CHECK(has_bag_kernel(grad), "embedding_bag backward on mlu expects a floating-point gradient, got ",
              grad.scalar_type());
  c10::DeviceGuard guard(grad.device());
  // bounds are not used by the backward kernel: offset2bag says each position's bag.
  BagCall call;
  call.indices = indices.to(at::kLong).contiguous();
  const bool weighted = per_sample_weights.has_value() && per_sample_weights->defined();
  if (weighted) call.per_sample_weights = per_sample_weights->to(grad.scalar_type()).contiguous();
  const at::Tensor g = grad.contiguous(), o2b = offset2bag.contiguous(), sizes = bag_size.contiguous(),
                   best = max_indices.contiguous();
  k::EmbeddingBagArgs a;
  a.type = *kernel_dtype(grad.scalar_type());
  a.num_weights = num_weights;
  a.dim = grad.size(1);
  a.num_indices = call.indices.numel();
  a.num_bags = grad.size(0);
  a.indices = device_ptr<const int64_t>(call.indices);
  a.per_sample_weights = device_ptr<const void>(call.per_sample_weights);
  a.mode = static_cast<k::BagMode>(mode);
  a.padding_idx = padding_idx;
  at::Tensor grad_weight = at::empty({num_weights, a.dim}, grad.options());
  const void* gp = device_ptr<const void>(g);
  const auto* o2b_p = static_cast<const int64_t*>(device_ptr<const void>(o2b));
  const auto* sizes_p = static_cast<const int64_t*>(device_ptr<const void>(sizes));
  const auto* best_p = static_cast<const int64_t*>(device_ptr<const void>(best));
  void* gw = device_ptr(grad_weight);
  // The memory the pointers refer to stays valid until the kernel ran (Note [Stream-ordered reuse]).
  launch_kernel(grad.device().index(), "embedding_bag_backward",
                [=] { k::embedding_bag_backward(a, gp, o2b_p, sizes_p, best_p, scale_grad_by_freq, gw); });
  return grad_weight;
}

at::Tensor per_sample_weights_backward_mlu(T grad, T weight, T indices, T offsets, T offset2bag, int64_t mode,
                                           int64_t padding_idx) {
  TORCH_CHECK(mode == 0, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  c10::DeviceGuard guard(grad.device());
  const BagCall call = bag_call(weight, indices, offsets, mode, std::nullopt, false, padding_idx);
  const at::Tensor g = grad.contiguous(), o2b = offset2bag.contiguous();
  at::Tensor result = at::empty({call.args.num_indices}, grad.options());
  const k::EmbeddingBagArgs a = call.args;
  const void* gp = device_ptr<const void>(g);
  const auto* o2b_p = static_cast<const int64_t*>(device_ptr<const void>(o2b));
  void* out = device_ptr(result);
  launch_kernel(grad.device().index(), "embedding_bag_per_sample_weights_backward",
                [=] { k::embedding_bag_per_sample_weights_backward(a, gp, o2b_p, out); });
  return result;
}

// What autograd calls: the dense gradient, or PyTorch's device-generic sparse
// one (a sparse COO tensor on mlu, built from mlu's index_select and the
// embedding's sparse backward).
at::Tensor backward_mlu(T grad, T indices, T offsets, T offset2bag, T bag_size, T max_indices, int64_t num_weights,
                        bool scale_grad_by_freq, int64_t mode, bool sparse, W per_sample_weights, int64_t padding_idx) {
  if (sparse) {
    return at::_embedding_bag_sparse_backward(grad, indices, offsets, offset2bag, bag_size, num_weights,
                                              scale_grad_by_freq, mode, per_sample_weights, padding_idx);
  }
  return dense_backward_mlu(grad, indices, offset2bag, bag_size, max_indices, num_weights, scale_grad_by_freq, mode,
                            per_sample_weights, padding_idx);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/EmbeddingBagOps.inc"
