// Reflection and replication padding (1-3 padded dims, forward and backward)
// and PReLU's kernels on mlu, as compositions of native ops.
//
// Note [Padding as gathers]
// Padding is separable: along each padded dim, output position o reads input
// position src(o - pad_before), with src(i) = clamp(i, 0, n - 1) for
// replication and the one-bounce reflection (n - 1) - |(n - 1) - |i|| for
// reflection (padding is smaller than n, which the checks enforce). So the
// forward pads one dim after another, copying the blocks that gather reads
// (the middle, a flipped or expanded border per edge), and the backward
// reverses it per dim: for reflection the same blocks, the edges' gradients
// flipped and added onto their borders; for replication one index_add into
// zeros (index_add on mlu adds repeated positions in index order:
// deterministic). Negative padding (a crop) falls out of the same mapping.
// The CPU's backward adds every output position's gradient into its source in
// output order, rounding each add in the tensor's dtype; along one dim the
// per-dim sums are that same sequence, but a corner of a 2-D/3-D padding sums
// its terms dim by dim here, so 16-bit corners may differ by an ulp.
// Shapes and errors come from PyTorch's own meta functions, run on a meta
// tensor of the input's shape, so they match the CPU's checks. Results (and
// gradients) are in the input's suggested memory format, as the CPU's.
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/reflection_pad1d.h>
#include <ATen/ops/reflection_pad1d_backward.h>
#include <ATen/ops/reflection_pad2d.h>
#include <ATen/ops/reflection_pad2d_backward.h>
#include <ATen/ops/reflection_pad3d.h>
#include <ATen/ops/reflection_pad3d_backward.h>
#include <ATen/ops/replication_pad1d.h>
#include <ATen/ops/replication_pad1d_backward.h>
#include <ATen/ops/replication_pad2d.h>
#include <ATen/ops/replication_pad2d_backward.h>
#include <ATen/ops/replication_pad3d.h>
#include <ATen/ops/replication_pad3d_backward.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/sequence.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

enum class Pad { Reflect, Replicate };

at::Tensor on_meta(const at::Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kMeta)); }

// Note [Padding as gathers]: the input position each output position reads
// along one dim (for the backward's index_add), written by one small task.
at::Tensor source_index(int64_t n, int64_t before, int64_t after, Pad mode, c10::Device device) {
  at::Tensor index = at::empty({before + n + after}, at::TensorOptions().dtype(at::kLong).device(device));
  int64_t* data = device_ptr<int64_t>(index);
  const bool reflect = mode == Pad::Reflect;
  launch_small_kernel(device.index(), "padding_index",
                      [=] { mlu::kernels::padding_source_index(data, n, before, after, reflect); });
  return index;
}

// One padded dim by copies (the gather of Note [Padding as gathers] written
// as the blocks it copies): the kept middle, then each padded edge from the
// reflected (flipped) or replicated (expanded) border of the input.
at::Tensor pad_dim(const at::Tensor& in, int64_t dim, int64_t before, int64_t after, Pad mode) {
  const int64_t n = in.size(dim);
  std::vector<int64_t> sizes = in.sizes().vec();
  sizes[dim] = before + n + after;
  at::Tensor out = at::empty(sizes, in.options());
  const int64_t skip_front = std::max<int64_t>(0, -before), skip_back = std::max<int64_t>(0, -after);
  const int64_t kept = n - skip_front - skip_back;
  const int64_t left = std::max<int64_t>(0, before), right = std::max<int64_t>(0, after);
  if (kept > 0) out.narrow(dim, left, kept).copy_(in.narrow(dim, skip_front, kept));
  if (left > 0) {
    out.narrow(dim, 0, left)
        .copy_(mode == Pad::Reflect ? in.narrow(dim, 1, left).flip(dim)
                                    : in.narrow(dim, 0, 1).expand_as(out.narrow(dim, 0, left)));
  }
  if (right > 0) {
    at::Tensor edge = out.narrow(dim, out.size(dim) - right, right);
    edge.copy_(mode == Pad::Reflect ? in.narrow(dim, n - 1 - right, right).flip(dim)
                                    : in.narrow(dim, n - 1, 1).expand_as(edge));
  }
  return out;
}

// padding lists the last dim's (before, after) first, as F.pad does.
at::Tensor pad_forward(const at::Tensor& self, at::IntArrayRef padding, Pad mode) {
  at::Tensor out = self;
  const int64_t dims = static_cast<int64_t>(padding.size()) / 2;
  for (int64_t d = 0; d < dims; ++d) out = pad_dim(out, self.dim() - 1 - d, padding[2 * d], padding[2 * d + 1], mode);
  return out;
}

// The gradient of one reflected dim by blocks, pad_dim's copies reversed: the
// kept middle copied back, then each edge's gradient (flipped) added onto the
// border it was reflected from. An input position takes at most one term from
// each block (a reflected pad is shorter than the dim), so its sum is the
// CPU's sequential one: (left + middle) + right, each add rounded in the
// tensor's dtype, as index_add in output order would add them (a + b == b + a).
at::Tensor reflect_dim_backward(const at::Tensor& grad, int64_t dim, int64_t n, int64_t before, int64_t after) {
  const int64_t skip_front = std::max<int64_t>(0, -before), skip_back = std::max<int64_t>(0, -after);
  const int64_t kept = n - skip_front - skip_back;
  const int64_t left = std::max<int64_t>(0, before), right = std::max<int64_t>(0, after);
  std::vector<int64_t> sizes = grad.sizes().vec();
  sizes[dim] = n;
  at::Tensor out = skip_front + skip_back > 0 ? at::zeros(sizes, grad.options()) : at::empty(sizes, grad.options());
  if (kept > 0) out.narrow(dim, skip_front, kept).copy_(grad.narrow(dim, left, kept));
  if (left > 0) out.narrow(dim, 1, left).add_(grad.narrow(dim, 0, left).flip(dim));
  if (right > 0) out.narrow(dim, n - 1 - right, right).add_(grad.narrow(dim, grad.size(dim) - right, right).flip(dim));
  return out;
}

at::Tensor pad_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, Pad mode) {
  at::Tensor grad = grad_output;
  const int64_t dims = static_cast<int64_t>(padding.size()) / 2;
  for (int64_t d = 0; d < dims; ++d) {
    const int64_t dim = self.dim() - 1 - d, n = self.size(dim), before = padding[2 * d], after = padding[2 * d + 1];
    if (mode == Pad::Reflect) {
      grad = reflect_dim_backward(grad, dim, n, before, after);
      continue;
    }
    // Replicated edges sum many positions into one border element: index_add adds them in the CPU's order.
    std::vector<int64_t> sizes = grad.sizes().vec();
    sizes[dim] = n;
    grad = at::zeros(sizes, grad.options()).index_add_(dim, source_index(n, before, after, mode, self.device()), grad);
  }
  return grad;
}

// Each op checks its arguments with PyTorch's meta function (same errors as the CPU), then computes.
#define MLU_PADDING(name, MODE)                                                                                    \
  at::Tensor name##_mlu(const at::Tensor& self, at::IntArrayRef padding) {                                         \
    const at::Tensor expected = at::name(on_meta(self), padding);                                                  \
    at::Tensor out = pad_forward(self, padding, MODE);                                                             \
    TORCH_INTERNAL_ASSERT(out.sizes() == expected.sizes(), #name ": output size mismatch");                        \
    return out.contiguous(self.suggest_memory_format());                                                           \
  }                                                                                                                \
  at::Tensor name##_backward_mlu(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) { \
    at::name##_backward(on_meta(grad_output), on_meta(self), padding);                                             \
    return pad_backward(grad_output, self, padding, MODE).contiguous(self.suggest_memory_format());                \
  }

MLU_PADDING(reflection_pad1d, Pad::Reflect)
MLU_PADDING(reflection_pad2d, Pad::Reflect)
MLU_PADDING(reflection_pad3d, Pad::Reflect)
MLU_PADDING(replication_pad1d, Pad::Replicate)
MLU_PADDING(replication_pad2d, Pad::Replicate)
MLU_PADDING(replication_pad3d, Pad::Replicate)
#undef MLU_PADDING

// PReLU's kernels (the CPU's PReluKernel.cpp): weight broadcasts against self; the weight gradient is returned
// in the broadcast shape (autograd sums it to the weight's).
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  return at::where(self > 0, self, weight * self);
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  const at::Tensor positive = self > 0;
  return {at::where(positive, grad_output, weight * grad_output),
          at::where(positive, at::zeros({}, grad_output.options()), self * grad_output)};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/PaddingOps.inc"
