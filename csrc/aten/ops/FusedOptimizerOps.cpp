// torch.optim's fused=True steps on mlu: _fused_adam_, _fused_adamw_,
// _fused_sgd_ and _fused_adagrad_ (float and tensor learning rates) on the
// kernel library's element-wise steps (mlu_kernels/optimizer.h). One task per
// call walks every parameter; it reads the step counts, a tensor learning
// rate, grad_scale and found_inf on the device, so nothing waits for the
// queue: with found_inf set the task returns before touching anything (the
// optimizer's Python code then takes the step count back), exactly as CUDA's
// kernels do. Tensors that are not dense in one shared layout go through
// contiguous copies, copied back in queue order. Also DeepSpeed's
// torch.ops.torch_mlu.fused_adam (Note [DeepSpeed's fused_adam]).
#include <vector>

#include <ATen/ops/empty.h>
#include <mlu_kernels/optimizer.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using TL = at::TensorList;
using OptT = const std::optional<at::Tensor>&;

// A one-element device value read by the task (step counts, tensor lr).
struct DeviceScalar {
  const void* data = nullptr;
  at::ScalarType type = at::kFloat;
  double read() const {
    switch (type) {
      case at::kDouble:
        return *static_cast<const double*>(data);
      case at::kLong:
        return static_cast<double>(*static_cast<const int64_t*>(data));
      case at::kInt:
        return static_cast<double>(*static_cast<const int32_t*>(data));
      default:
        return static_cast<double>(*static_cast<const float*>(data));
    }
  }
};

DeviceScalar device_scalar(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.numel() == 1, what, " must be a one-element tensor, got ", t.sizes());
  TORCH_CHECK(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble || t.scalar_type() == at::kLong ||
                  t.scalar_type() == at::kInt,
              what, " must be a float, double, long or int tensor, got ", t.scalar_type());
  return {device_ptr<const void>(t), t.scalar_type()};
}

// One parameter's flat arrays (up to three states), its element count and step.
struct Item {
  void* param;
  void* grad;
  void* state[3];
  int64_t n;
  DeviceScalar step;
};

// Collects the kernel's view of every parameter of one call. Operands that
// are not dense in the parameter's layout are replaced by contiguous copies,
// which finish() writes back after the launch.
class Batch {
 public:
  Batch(const char* op, TL params) : op_(op) {
    TORCH_CHECK(!params.empty(), op, ": expected at least one parameter");
    device_ = params[0].device();
    dtype_ = params[0].scalar_type();
    const auto type = kernel_dtype(dtype_);
    TORCH_CHECK(type && at::isFloatingType(dtype_), op, " on mlu expects floating-point parameters, got ", dtype_);
    type_ = *type;
  }

  void add(const at::Tensor& param, const at::Tensor& grad, std::initializer_list<const at::Tensor*> states,
           const at::Tensor* step) {
    Item item{};
    item.param = operand(param, param);
    item.grad = operand(grad, param);
    int s = 0;
    for (const at::Tensor* state : states)
      item.state[s++] = state && state->defined() ? operand(*state, param) : nullptr;
    item.n = param.numel();
    if (step) {
      TORCH_CHECK(step->device() == device_, op_, ": state_steps must be on ", device_, ", got ", step->device());
      item.step = device_scalar(*step, "a state step");
    }
    items_.push_back(item);
  }

  k::ScalarType type() const { return type_; }
  c10::Device device() const { return device_; }
  std::vector<Item> items() const { return items_; }

  // Queues `task` (then the copy-backs) on the current stream.
  template <class Task>
  void launch(Task task) {
    c10::DeviceGuard guard(device_);
    launch_kernel(device_.index(), op_, std::move(task));
    for (auto& [original, copy] : copies_) original.copy_(copy);
  }

 private:
  void* operand(const at::Tensor& t, const at::Tensor& param) {
    TORCH_CHECK(t.device() == device_, op_, ": expected all tensors on ", device_, ", got one on ", t.device());
    TORCH_CHECK(t.scalar_type() == dtype_, op_, ": expected all tensors to be ", dtype_, ", got ", t.scalar_type());
    TORCH_CHECK(t.sizes() == param.sizes(), op_, ": a state or gradient of size ", t.sizes(),
                " does not match its parameter's ", param.sizes());
    if (t.is_non_overlapping_and_dense() && t.strides() == param.strides() && param.is_non_overlapping_and_dense()) {
      return device_ptr(t);
    }
    at::Tensor copy = t.contiguous();
    copies_.emplace_back(t, copy);
    return device_ptr(copy);
  }

  const char* op_;
  c10::Device device_{c10::DeviceType::PrivateUse1};
  at::ScalarType dtype_;
  k::ScalarType type_;
  std::vector<Item> items_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_;
};

// grad_scale / found_inf pointers (float, one element, on the device) or nullptr.
const float* optional_float(OptT t, const Batch& batch, const char* what) {
  if (!t.has_value() || !t->defined()) return nullptr;
  TORCH_CHECK(t->numel() == 1 && t->scalar_type() == at::kFloat && t->device() == batch.device(), what,
              " must be a one-element float tensor on ", batch.device());
  return device_ptr<const float>(*t);
}

void check_lists(const char* op, size_t n, std::initializer_list<size_t> sizes) {
  for (size_t size : sizes) {
    TORCH_CHECK(size == n, op, ": expected every tensor list to hold ", n, " tensors, got one with ", size);
  }
}

void fused_adam(const char* op, bool decoupled, TL params, TL grads, TL exp_avgs, TL exp_avg_sqs, TL max_exp_avg_sqs,
                TL steps, double lr, const at::Tensor* lr_tensor, double beta1, double beta2, double weight_decay,
                double eps, bool amsgrad, bool maximize, OptT grad_scale, OptT found_inf) {
  if (params.empty()) return;
  check_lists(op, params.size(), {grads.size(), exp_avgs.size(), exp_avg_sqs.size(), steps.size()});
  if (amsgrad) check_lists(op, params.size(), {max_exp_avg_sqs.size()});
  Batch batch(op, params);
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor* max_sq = amsgrad ? &max_exp_avg_sqs[i] : nullptr;
    batch.add(params[i], grads[i], {&exp_avgs[i], &exp_avg_sqs[i], max_sq}, &steps[i]);
  }
  const float* scale = optional_float(grad_scale, batch, "grad_scale");
  const float* inf = optional_float(found_inf, batch, "found_inf");
  const DeviceScalar lr_value = lr_tensor ? device_scalar(*lr_tensor, "lr") : DeviceScalar{};
  const k::ScalarType type = batch.type();
  batch.launch([items = batch.items(), type, scale, inf, lr_value, lr, beta1, beta2, weight_decay, eps, amsgrad,
                maximize, decoupled] {
    if (inf != nullptr && *inf != 0.0f) return;
    for (const Item& it : items) {
      const k::AdamStep s{lr_value.data ? lr_value.read() : lr,
                          beta1,
                          beta2,
                          weight_decay,
                          eps,
                          amsgrad,
                          maximize,
                          decoupled,
                          it.step.read()};
      k::adam_step(s, type, it.n, it.param, it.grad, it.state[0], it.state[1], it.state[2], scale);
    }
  });
}

// Note [DeepSpeed's fused_adam]: torch.ops.torch_mlu.fused_adam, the entry point DeepSpeed's FusedAdam calls on
// mlu (op_builder/mlu: fused_adam(noop_flag, grads, params, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, step,
// adam_w_mode, bias_correction, weight_decay)), computing what its multi_tensor_adam computes: adam_w_mode 1 is
// AdamW's decoupled weight decay, 0 adds weight_decay * param to the gradient; bias_correction 0 uses the moments
// as they are; `step` is the step being taken (1 on the first). A nonzero noop_flag (read on the device, apex's
// convention for multi-tensor kernels) skips the step.
void deepspeed_fused_adam(const at::Tensor& noop_flag, TL grads, TL params, TL exp_avgs, TL exp_avg_sqs, double lr,
                          double beta1, double beta2, double eps, int64_t step, int64_t adam_w_mode,
                          int64_t bias_correction, double weight_decay) {
  const char* op = "torch_mlu::fused_adam";
  if (params.empty()) return;
  check_lists(op, params.size(), {grads.size(), exp_avgs.size(), exp_avg_sqs.size()});
  TORCH_CHECK(step >= 1, op, ": step counts the step being taken, from 1; got ", step);
  Batch batch(op, params);
  TORCH_CHECK(noop_flag.numel() == 1 && noop_flag.scalar_type() == at::kInt && noop_flag.device() == batch.device(), op,
              ": noop_flag must be a one-element int tensor on ", batch.device());
  for (size_t i = 0; i < params.size(); ++i) batch.add(params[i], grads[i], {&exp_avgs[i], &exp_avg_sqs[i]}, nullptr);
  const int32_t* noop = device_ptr<const int32_t>(noop_flag);
  k::AdamStep s{lr,
                beta1,
                beta2,
                weight_decay,
                eps,
                /*amsgrad=*/false,
                /*maximize=*/false,
                adam_w_mode != 0,
                static_cast<double>(step)};
  s.bias_correction = bias_correction != 0;
  const k::ScalarType type = batch.type();
  batch.launch([items = batch.items(), type, noop, s] {
    if (*noop != 0) return;
    for (const Item& it : items)
      k::adam_step(s, type, it.n, it.param, it.grad, it.state[0], it.state[1], nullptr, nullptr);
  });
}

void fused_sgd(TL params, TL grads, TL buffers, double weight_decay, double momentum, double lr,
               const at::Tensor* lr_tensor, double dampening, bool nesterov, bool maximize, bool first_step,
               OptT grad_scale, OptT found_inf) {
  const char* op = "_fused_sgd_";
  if (params.empty()) return;
  check_lists(op, params.size(), {grads.size()});
  const bool with_momentum = momentum != 0;
  if (with_momentum) check_lists(op, params.size(), {buffers.size()});
  Batch batch(op, params);
  for (size_t i = 0; i < params.size(); ++i) {
    batch.add(params[i], grads[i], {with_momentum ? &buffers[i] : nullptr}, nullptr);
  }
  const float* scale = optional_float(grad_scale, batch, "grad_scale");
  const float* inf = optional_float(found_inf, batch, "found_inf");
  const DeviceScalar lr_value = lr_tensor ? device_scalar(*lr_tensor, "lr") : DeviceScalar{};
  const k::ScalarType type = batch.type();
  batch.launch([items = batch.items(), type, scale, inf, lr_value, lr, weight_decay, momentum, dampening, nesterov,
                maximize, first_step] {
    if (inf != nullptr && *inf != 0.0f) return;
    const k::SgdStep s{
        lr_value.data ? lr_value.read() : lr, weight_decay, momentum, dampening, nesterov, maximize, first_step};
    for (const Item& it : items) k::sgd_step(s, type, it.n, it.param, it.grad, it.state[0], scale);
  });
}

void fused_adagrad(TL params, TL grads, TL state_sums, TL steps, double lr, const at::Tensor* lr_tensor,
                   double lr_decay, double weight_decay, double eps, bool maximize, OptT grad_scale, OptT found_inf) {
  const char* op = "_fused_adagrad_";
  if (params.empty()) return;
  check_lists(op, params.size(), {grads.size(), state_sums.size(), steps.size()});
  Batch batch(op, params);
  for (size_t i = 0; i < params.size(); ++i) batch.add(params[i], grads[i], {&state_sums[i]}, &steps[i]);
  const float* scale = optional_float(grad_scale, batch, "grad_scale");
  const float* inf = optional_float(found_inf, batch, "found_inf");
  const DeviceScalar lr_value = lr_tensor ? device_scalar(*lr_tensor, "lr") : DeviceScalar{};
  const k::ScalarType type = batch.type();
  batch.launch([items = batch.items(), type, scale, inf, lr_value, lr, lr_decay, weight_decay, eps, maximize] {
    if (inf != nullptr && *inf != 0.0f) return;
    for (const Item& it : items) {
      const k::AdagradStep s{
          lr_value.data ? lr_value.read() : lr, lr_decay, weight_decay, eps, maximize, it.step.read()};
      k::adagrad_step(s, type, it.n, it.param, it.grad, it.state[0], scale);
    }
  });
}

}  // namespace

TORCH_LIBRARY(torch_mlu, m) {
  m.def(
      "fused_adam(Tensor noop_flag, Tensor[] grads, Tensor(a!)[] params, Tensor(b!)[] exp_avgs, "
      "Tensor(c!)[] exp_avg_sqs, float lr, float beta1, float beta2, float eps, int step, int adam_w_mode, "
      "int bias_correction, float weight_decay) -> ()");
}

TORCH_LIBRARY_IMPL(torch_mlu, PrivateUse1, m) { m.impl("fused_adam", TORCH_FN(deepspeed_fused_adam)); }

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/FusedOptimizerOps.inc"
