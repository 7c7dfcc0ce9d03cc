// The scalar references of optimizer.h: one element at a time, the textbook
// update (torch.optim's documented algorithms, the same steps as the fused
// CPU kernels) computed in double (the kernels compute in float for Float32 /
// Float16 / BFloat16), each stored value rounded once to the dtype.
#include <algorithm>
#include <cmath>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/optimizer.h"

namespace mlu::kernels {
namespace {

template <class T>
double wide(T v) {
  return static_cast<double>(detail::widen(v));
}

// Element i's gradient in double: divided by grad_scale (and stored back) when
// one is given.
template <class T>
double load_grad(T* grad, int64_t i, const float* grad_scale) {
  double g = wide(grad[i]);
  if (grad_scale != nullptr) {
    g /= static_cast<double>(*grad_scale);
    grad[i] = detail::convert<T>(g);
  }
  return g;
}

}  // namespace

void adam_step_ref(const AdamStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* exp_avg_,
                   void* exp_avg_sq_, void* max_exp_avg_sq_, const float* grad_scale) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *param = static_cast<T*>(param_), *grad = static_cast<T*>(grad_), *exp_avg = static_cast<T*>(exp_avg_),
      *exp_avg_sq = static_cast<T*>(exp_avg_sq_), *max_sq = static_cast<T*>(max_exp_avg_sq_);
    const double bias_correction1 = s.bias_correction ? 1 - std::pow(s.beta1, s.step) : 1.0;
    const double bias_correction2 = s.bias_correction ? 1 - std::pow(s.beta2, s.step) : 1.0;
    for (int64_t i = 0; i < n; ++i) {
      double g = load_grad(grad, i, grad_scale), p = wide(param[i]);
      if (s.maximize) g = -g;
      if (s.weight_decay != 0) {
        if (s.decoupled_weight_decay) {
          p *= 1 - s.lr * s.weight_decay;  // AdamW
        } else {
          g += s.weight_decay * p;
        }
      }
      const double m = s.beta1 * wide(exp_avg[i]) + (1 - s.beta1) * g;
      const double v = s.beta2 * wide(exp_avg_sq[i]) + (1 - s.beta2) * g * g;
      exp_avg[i] = detail::convert<T>(m);
      exp_avg_sq[i] = detail::convert<T>(v);
      double second = v;
      if (s.amsgrad) {
        second = std::max(wide(max_sq[i]), v);
        max_sq[i] = detail::convert<T>(second);
      }
      const double denom = std::sqrt(second) / std::sqrt(bias_correction2) + s.eps;
      param[i] = detail::convert<T>(p - s.lr / bias_correction1 * m / denom);
    }
  });
}

void sgd_step_ref(const SgdStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* momentum_buffer_,
                  const float* grad_scale) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *param = static_cast<T*>(param_), *grad = static_cast<T*>(grad_), *buf = static_cast<T*>(momentum_buffer_);
    for (int64_t i = 0; i < n; ++i) {
      double g = load_grad(grad, i, grad_scale);
      const double p = wide(param[i]);
      if (s.maximize) g = -g;
      if (s.weight_decay != 0) g += s.weight_decay * p;
      if (s.momentum != 0) {
        const double b = s.first_step ? g : s.momentum * wide(buf[i]) + (1 - s.dampening) * g;
        buf[i] = detail::convert<T>(b);
        g = s.nesterov ? g + s.momentum * b : b;
      }
      param[i] = detail::convert<T>(p - s.lr * g);
    }
  });
}

void adagrad_step_ref(const AdagradStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* state_sum_,
                      const float* grad_scale) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *param = static_cast<T*>(param_), *grad = static_cast<T*>(grad_), *sum = static_cast<T*>(state_sum_);
    const double clr = s.lr / (1 + (s.step - 1) * s.lr_decay);
    for (int64_t i = 0; i < n; ++i) {
      double g = load_grad(grad, i, grad_scale);
      const double p = wide(param[i]);
      if (s.maximize) g = -g;
      if (s.weight_decay != 0) g += s.weight_decay * p;
      const double total = wide(sum[i]) + g * g;
      sum[i] = detail::convert<T>(total);
      param[i] = detail::convert<T>(p - clr * g / (std::sqrt(total) + s.eps));
    }
  });
}

}  // namespace mlu::kernels
