// Fused optimizer steps (torch.optim's fused=True: _fused_adam_ / _fused_adamw_
// / _fused_sgd_ / _fused_adagrad_), one tensor at a time, element by element,
// in the order of operations of PyTorch's CPU kernels (FusedAdamKernel.cpp,
// FusedSGDKernel.cpp, FusedAdagradKernel.cpp). Parameters, gradients and
// states share one floating dtype and are flat arrays of n elements;
// Float16/BFloat16 compute in float and are rounded once per store. A non-null
// grad_scale divides the gradient first, and the unscaled gradient is stored
// back (as the CPU does).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

struct AdamStep {
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize;
  bool decoupled_weight_decay;  // AdamW
  double step;                  // after this step's increment (1 on the first)
  bool bias_correction = true;  // false: the moments are used as they are (DeepSpeed's bias_correction=0)
};
// max_exp_avg_sq may be nullptr unless amsgrad.
void adam_step(const AdamStep& s, ScalarType type, int64_t n, void* param, void* grad, void* exp_avg,
               void* exp_avg_sq, void* max_exp_avg_sq, const float* grad_scale);
// Scalar reference (optimizer_ref.cpp): the same update per element, in double.
void adam_step_ref(const AdamStep& s, ScalarType type, int64_t n, void* param, void* grad, void* exp_avg,
                   void* exp_avg_sq, void* max_exp_avg_sq, const float* grad_scale);

struct SgdStep {
  double lr, weight_decay, momentum, dampening;
  bool nesterov, maximize, first_step;
};
// momentum_buffer may be nullptr when momentum is 0.
void sgd_step(const SgdStep& s, ScalarType type, int64_t n, void* param, void* grad, void* momentum_buffer,
              const float* grad_scale);
// Scalar reference: the same update per element, in double.
void sgd_step_ref(const SgdStep& s, ScalarType type, int64_t n, void* param, void* grad, void* momentum_buffer,
                  const float* grad_scale);

struct AdagradStep {
  double lr, lr_decay, weight_decay, eps;
  bool maximize;
  double step;  // after this step's increment
};
void adagrad_step(const AdagradStep& s, ScalarType type, int64_t n, void* param, void* grad, void* state_sum,
                  const float* grad_scale);
// Scalar reference: the same update per element, in double.
void adagrad_step_ref(const AdagradStep& s, ScalarType type, int64_t n, void* param, void* grad, void* state_sum,
                      const float* grad_scale);

}  // namespace mlu::kernels
