// The CTC loss on mlu (mlu_kernels/ctc.h): _ctc_loss and _ctc_loss_backward,
// with their Tensor-lengths overloads, on the current stream. nn.CTCLoss /
// F.ctc_loss (CompositeImplicit: reductions, zero_infinity's masking) call
// these. PyTorch's meta kernel for _ctc_loss checks the arguments with the
// CPU's messages and sizes the results; a target label outside [0, C) (the
// CPU does not check it and reads out of bounds) is a device-side error
// naming the op, raised at the next synchronisation.
//
// Note [Strided concatenated targets]
// The CPU finds item b's labels in 1-D (concatenated) targets at
// data[offset_b + k * stride], offset_b the sum of the earlier lengths not
// scaled by the stride: wrong for a strided 1-D targets tensor (e.g.
// t[::2]). The kernel scales it, so such targets give what their contiguous
// copy gives; the tests compare with the CPU on the contiguous copy.
#include <ATen/ops/_ctc_loss.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <mlu_kernels/ctc.h>

#include <vector>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;

void check_dtype(T log_probs) {
  const at::ScalarType type = log_probs.scalar_type();
  TORCH_CHECK(type == at::kFloat || type == at::kDouble, "\"ctc_loss_mlu\" not implemented for '", type,
              "': the CTC loss takes float32 or float64 log_probs, as on the CPU (autocast runs it in float32)");
}

void check_same_device(T log_probs, T other, const char* name) {
  TORCH_CHECK(other.device() == log_probs.device(), "ctc_loss: expected ", name, " on ", log_probs.device(),
              " like log_probs, but got it on ", other.device(), "; move it with .to(", log_probs.device(), ")");
}

at::Tensor meta_like(T t) { return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta)); }

// Everything but the lengths, which the task owns.
k::CtcProblem problem_of(T log_probs, T targets, int64_t blank, int64_t width) {
  k::CtcProblem p;
  p.type = log_probs.scalar_type() == at::kDouble ? k::ScalarType::Float64 : k::ScalarType::Float32;
  p.max_input = log_probs.size(0);
  p.batch = log_probs.size(1);
  p.labels = log_probs.size(2);
  p.blank = blank;
  p.max_target = (width - 1) / 2;
  p.log_probs = device_ptr<const void>(log_probs);
  for (int d = 0; d < 3; ++d) p.log_probs_strides[d] = log_probs.stride(d);
  p.targets = device_ptr<const void>(targets);
  p.target_type = targets.scalar_type() == at::kInt ? k::ScalarType::Int32 : k::ScalarType::Int64;
  p.concatenated = targets.dim() == 1;  // Note [Strided concatenated targets]
  p.target_batch_stride = p.concatenated ? 0 : targets.stride(0);
  p.target_stride = targets.stride(p.concatenated ? 0 : 1);
  return p;
}

std::string label_message(const char* op, int64_t bad, int64_t labels) {
  return std::string(op) + "(): target label " + std::to_string(bad) + " is out of range for " +
         std::to_string(labels) + " labels (expected a value in [0, " + std::to_string(labels) + "))";
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_mlu(T log_probs, T targets, at::IntArrayRef input_lengths,
                                                at::IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  check_dtype(log_probs);
  check_same_device(log_probs, targets, "targets");
  // (Before the meta kernel, whose message would name the meta copy's type.)
  TORCH_CHECK(targets.scalar_type() == at::kLong || targets.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'targets' to have scalar type Int; but got ", targets.toString(),
              " instead (while checking arguments for ctc_loss_allocate_outputs)");
  // The meta kernel checks everything else, with the CPU's messages.
  const auto [nll_meta, alpha_meta] =
      at::_ctc_loss(meta_like(log_probs), meta_like(targets), input_lengths, target_lengths, blank, zero_infinity);
  c10::OptionalDeviceGuard guard(log_probs.device());
  at::Tensor nll = at::empty(nll_meta.sizes(), log_probs.options());
  at::Tensor log_alpha = at::empty(alpha_meta.sizes(), log_probs.options());
  if (log_probs.size(1) == 0) return {nll, log_alpha};
  std::vector<int64_t> il(input_lengths.begin(), input_lengths.end()), tl(target_lengths.begin(), target_lengths.end());
  const k::CtcProblem base = problem_of(log_probs, targets, blank, log_alpha.size(2));
  void *nll_data = device_ptr(nll), *alpha_data = device_ptr(log_alpha);
  launch_kernel(log_probs.device().index(), "ctc_loss",
                [=, il = std::move(il), tl = std::move(tl)](mlu::TaskContext& context) {
                  k::CtcProblem p = base;
                  p.input_lengths = il.data();
                  p.target_lengths = tl.data();
                  const k::IndexCheck check = k::ctc_loss_forward(p, nll_data, alpha_data);
                  if (!check.ok) context.fail(label_message("ctc_loss", check.bad_index, p.labels));
                });
  return {nll, log_alpha};
}

at::Tensor ctc_loss_backward_mlu(T grad, T log_probs, T targets, at::IntArrayRef input_lengths,
                                 at::IntArrayRef target_lengths, T neg_log_likelihood, T log_alpha_, int64_t blank,
                                 bool zero_infinity) {
  check_dtype(log_probs);
  for (const auto& [t, name] : {std::pair<T, const char*>{targets, "targets"},
                                {grad, "grad"},
                                {neg_log_likelihood, "neg_log_likelihood"},
                                {log_alpha_, "log_alpha"}}) {
    check_same_device(log_probs, t, name);
  }
  // The forward's results of this very problem (the kernel trusts their sizes).
  TORCH_CHECK(log_probs.dim() == 3, "ctc_loss_backward: expected 3-D log_probs, got ", log_probs.dim(), "-D");
  const int64_t steps = log_probs.size(0), batch = log_probs.size(1);
  TORCH_CHECK(log_alpha_.dim() == 3 && log_alpha_.size(0) == batch && log_alpha_.size(1) == steps &&
                  log_alpha_.size(2) % 2 == 1,
              "ctc_loss_backward: log_alpha of sizes ", log_alpha_.sizes(),
              " is not the forward's for log_probs of sizes ", log_probs.sizes());
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch &&
                  static_cast<int64_t>(target_lengths.size()) == batch && neg_log_likelihood.numel() == batch &&
                  grad.dim() <= 1 && (grad.dim() == 0 || grad.size(0) == batch || grad.stride(0) == 0),
              "ctc_loss_backward: expected input_lengths, target_lengths, neg_log_likelihood and grad of ", batch,
              " elements");
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0 && input_lengths[b] <= steps && target_lengths[b] >= 0 &&
                    2 * target_lengths[b] + 1 <= log_alpha_.size(2),
                "ctc_loss_backward: lengths of item ", b, " (input ", input_lengths[b], ", target ", target_lengths[b],
                ") do not fit the forward's log_alpha ", log_alpha_.sizes());
  }
  c10::OptionalDeviceGuard guard(log_probs.device());
  at::Tensor result = at::empty(log_probs.sizes(), log_probs.options());
  if (batch == 0 || result.numel() == 0) return result;
  const at::Tensor log_alpha = log_alpha_.to(log_probs.scalar_type()).contiguous();
  const at::Tensor nll = neg_log_likelihood.to(log_probs.scalar_type()).contiguous();
  const at::Tensor grad_out = grad.to(log_probs.scalar_type());
  const int64_t grad_stride = grad_out.dim() == 0 ? 0 : grad_out.stride(0);
  std::vector<int64_t> il(input_lengths.begin(), input_lengths.end()), tl(target_lengths.begin(), target_lengths.end());
  const k::CtcProblem base = problem_of(log_probs, targets, blank, log_alpha.size(2));
  const void *g = device_ptr<const void>(grad_out), *nll_data = device_ptr<const void>(nll),
             *alpha_data = device_ptr<const void>(log_alpha);
  void* out = device_ptr(result);
  launch_kernel(log_probs.device().index(), "ctc_loss_backward",
                [=, il = std::move(il), tl = std::move(tl)](mlu::TaskContext& context) {
                  k::CtcProblem p = base;
                  p.input_lengths = il.data();
                  p.target_lengths = tl.data();
                  const k::IndexCheck check =
                      k::ctc_loss_backward(p, g, grad_stride, nll_data, alpha_data, zero_infinity, out);
                  if (!check.ok) context.fail(label_message("ctc_loss_backward", check.bad_index, p.labels));
                });
  return result;
}

// The Tensor-lengths overloads: the lengths as host integers, as the CPU's do.
std::vector<int64_t> host_lengths(T lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name, " must be integral");
  const at::Tensor host = lengths.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(host.const_data_ptr<int64_t>(), host.const_data_ptr<int64_t>() + host.numel());
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor_mlu(T log_probs, T targets, T input_lengths, T target_lengths,
                                                       int64_t blank, bool zero_infinity) {
  const std::vector<int64_t> il = host_lengths(input_lengths, "input_lengths");
  const std::vector<int64_t> tl = host_lengths(target_lengths, "target_lengths");
  return ctc_loss_mlu(log_probs, targets, il, tl, blank, zero_infinity);
}

at::Tensor ctc_loss_backward_tensor_mlu(T grad, T log_probs, T targets, T input_lengths, T target_lengths,
                                        T neg_log_likelihood, T log_alpha, int64_t blank, bool zero_infinity) {
  const std::vector<int64_t> il = host_lengths(input_lengths, "input_lengths");
  const std::vector<int64_t> tl = host_lengths(target_lengths, "target_lengths");
  return ctc_loss_backward_mlu(grad, log_probs, targets, il, tl, neg_log_likelihood, log_alpha, blank, zero_infinity);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/CtcLossOps.inc"
