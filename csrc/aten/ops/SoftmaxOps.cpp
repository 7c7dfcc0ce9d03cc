// softmax / log_softmax and their backward ops on mlu (mlu_kernels/softmax.h).
// PyTorch's meta functions check the arguments and size the results; the
// fused row kernel runs on the current stream. Unlike the CPU (and like
// CUDA), half_to_float is supported: Float16 in, float out.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty_like.h>
#include <mlu_kernels/softmax.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;

bool has_softmax_kernel(const at::Tensor& t) {
  return at::isFloatingType(t.scalar_type()) && has_kernel(t) && t.dim() <= k::kMaxDims;
}

// Note [Softmax over a strided dim]: the kernel wants each row contiguous,
// or, for a dim that is not the innermost, a contiguous innermost dim (it then
// works on blocks of columns, Note [Softmax by columns]). Other layouts
// (rows strided and no usable innermost dim) are first made contiguous along
// `dim` by a blocked transposing copy (Copy.h) and the result copied back the
// same way: two copies cost less than walking rows element by element. All of
// it runs in queue order on the current stream.
bool rows_are_strided(const at::Tensor& t, int64_t dim) {
  if (t.dim() <= 1 || t.size(dim) <= 1 || t.stride(dim) == 1) return false;
  const bool by_columns = dim != t.dim() - 1 && t.stride(-1) == 1 && t.size(-1) >= k::kSoftmaxMinColumns;
  return !by_columns;
}

// Whether the CPU runs its last-dim kernel: `dim` is the last dim, whatever
// the sizes (Note [16-bit log_softmax over the last dim] in the kernels'
// softmax.cpp).
bool cpu_runs_lastdim(const at::Tensor& t, int64_t dim) { return t.dim() == 0 || dim == t.dim() - 1; }

void launch_forward(const char* name, const at::Tensor& input, int64_t dim, const at::Tensor& output, bool log,
                    std::optional<bool> lastdim = std::nullopt) {
  if (input.numel() == 0) return;
  const int64_t d = at::maybe_wrap_dim(dim, input.dim());
  const bool cpu_lastdim = lastdim.value_or(cpu_runs_lastdim(input, d));
  if (rows_are_strided(input, d)) {
    const at::Tensor rows = input.transpose(d, -1).contiguous();
    const at::Tensor result = at::empty_like(rows, output.options());
    launch_forward(name, rows, -1, result, log, cpu_lastdim);
    output.copy_(result.transpose(d, -1));
    return;
  }
  const k::Shape shape = kernel_shape(input);
  const k::Operand in = kernel_operand(input, name), out = kernel_operand(output, name);
  const int kd = static_cast<int>(d);
  launch_kernel(input.device().index(), name, [=] { k::softmax(shape, kd, out, in, log, cpu_lastdim); });
}

void launch_backward(const char* name, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                     const at::Tensor& grad_input, bool log) {
  if (output.numel() == 0) return;
  const int64_t d = at::maybe_wrap_dim(dim, output.dim());
  if (rows_are_strided(output, d)) {
    const at::Tensor grad_rows = grad.transpose(d, -1).contiguous();
    const at::Tensor output_rows = output.transpose(d, -1).contiguous();
    const at::Tensor result = at::empty_like(output_rows, grad_input.options());
    launch_backward(name, grad_rows, output_rows, -1, result, log);
    grad_input.copy_(result.transpose(d, -1));
    return;
  }
  const k::Shape shape = kernel_shape(output);
  const k::Operand gi = kernel_operand(grad_input, name), g = kernel_operand(grad, name),
                   o = kernel_operand(output, name);
  const int kd = static_cast<int>(d);
  launch_kernel(output.device().index(), name, [=] { k::softmax_backward(shape, kd, gi, g, o, log); });
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SoftmaxOps.inc"
