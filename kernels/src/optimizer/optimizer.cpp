#include "mlu_kernels/optimizer.h"

#include <algorithm>
#include <cmath>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

constexpr int64_t kGrain = 16384;

// Calls body(i, A& grad) per element with the gradient loaded (unscaled and
// stored back when grad_scale is given), for the dtype T.
template <class T, class Body>
void for_each_element(int64_t n, T* grad, const float* grad_scale, Body body) {
  using A = detail::compute_t<T>;
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      A g = detail::convert<A>(grad[i]);
      if (grad_scale != nullptr) {
        g = g / static_cast<A>(*grad_scale);
        grad[i] = detail::convert<T>(g);
      }
      body(i, g);
    }
  });
}

}  // namespace

void adam_step(const AdamStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* exp_avg_,
               void* exp_avg_sq_, void* max_exp_avg_sq_, const float* grad_scale) {
  detail::VerboseCall call("adam_step");
  if (call) call.describe(type, "n%lld", detail::lld(n));
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    T *param = static_cast<T*>(param_), *exp_avg = static_cast<T*>(exp_avg_), *exp_avg_sq = static_cast<T*>(exp_avg_sq_),
      *max_sq = static_cast<T*>(max_exp_avg_sq_);
    const A lr = static_cast<A>(s.lr), beta1 = static_cast<A>(s.beta1), beta2 = static_cast<A>(s.beta2);
    const A weight_decay = static_cast<A>(s.weight_decay), eps = static_cast<A>(s.eps);
    const double bias_correction1 = s.bias_correction ? 1 - std::pow(s.beta1, s.step) : 1.0;
    const A step_size = static_cast<A>(s.lr / bias_correction1);
    const A bias_correction2_sqrt =
        static_cast<A>(s.bias_correction ? std::sqrt(1 - std::pow(s.beta2, s.step)) : 1.0);
    for_each_element(n, static_cast<T*>(grad_), grad_scale, [&](int64_t i, A g) {
      A p = detail::convert<A>(param[i]);
      if (s.maximize) g = -g;
      if (weight_decay != A(0)) {
        if (s.decoupled_weight_decay) {
          p = p * (A(1) - lr * weight_decay);
        } else {
          g = g + p * weight_decay;
        }
      }
      const A m = detail::convert<A>(exp_avg[i]) * beta1 + g * (A(1) - beta1);
      const A v = detail::convert<A>(exp_avg_sq[i]) * beta2 + g * g * (A(1) - beta2);
      exp_avg[i] = detail::convert<T>(m);
      exp_avg_sq[i] = detail::convert<T>(v);
      A second = v;
      if (s.amsgrad) {
        second = std::max(detail::convert<A>(max_sq[i]), v);
        max_sq[i] = detail::convert<T>(second);
      }
      const A denom = std::sqrt(second) / bias_correction2_sqrt + eps;
      param[i] = detail::convert<T>(p - step_size * m / denom);
    });
  });
}

void sgd_step(const SgdStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* momentum_buffer_,
              const float* grad_scale) {
  detail::VerboseCall call("sgd_step");
  if (call) call.describe(type, "n%lld", detail::lld(n));
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    T *param = static_cast<T*>(param_), *buf = static_cast<T*>(momentum_buffer_);
    const A lr = static_cast<A>(s.lr), weight_decay = static_cast<A>(s.weight_decay);
    const A momentum = static_cast<A>(s.momentum), dampening = static_cast<A>(s.dampening);
    for_each_element(n, static_cast<T*>(grad_), grad_scale, [&](int64_t i, A g) {
      const A p = detail::convert<A>(param[i]);
      if (s.maximize) g = -g;
      if (weight_decay != A(0)) g = g + weight_decay * p;
      if (momentum != A(0)) {
        const A b = s.first_step ? g : momentum * detail::convert<A>(buf[i]) + (A(1) - dampening) * g;
        buf[i] = detail::convert<T>(b);
        g = s.nesterov ? g + momentum * b : b;
      }
      param[i] = detail::convert<T>(p - lr * g);
    });
  });
}

void adagrad_step(const AdagradStep& s, ScalarType type, int64_t n, void* param_, void* grad_, void* state_sum_,
                  const float* grad_scale) {
  detail::VerboseCall call("adagrad_step");
  if (call) call.describe(type, "n%lld", detail::lld(n));
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    T *param = static_cast<T*>(param_), *sum = static_cast<T*>(state_sum_);
    const A weight_decay = static_cast<A>(s.weight_decay), eps = static_cast<A>(s.eps);
    const A clr = static_cast<A>(s.lr / (1 + (s.step - 1) * s.lr_decay));
    for_each_element(n, static_cast<T*>(grad_), grad_scale, [&](int64_t i, A g) {
      const A p = detail::convert<A>(param[i]);
      if (s.maximize) g = -g;
      if (weight_decay != A(0)) g = g + weight_decay * p;
      const A total = detail::convert<A>(sum[i]) + g * g;
      sum[i] = detail::convert<T>(total);
      param[i] = detail::convert<T>(p - clr * g / (std::sqrt(total) + eps));
    });
  });
}

}  // namespace mlu::kernels
