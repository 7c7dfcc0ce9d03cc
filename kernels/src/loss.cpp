#include "mlu_kernels/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "convert.h"
#include "dispatch.h"

namespace mlu::kernels {
IndexCheck nll_loss_forward(ScalarType type, int64_t n, int64_t classes, const void* input, const int64_t* target,
                            const void* weight, LossReduction reduction, int64_t ignore_index, void* output,
                            void* total_weight) {
  IndexCheck check;
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* x = static_cast<const T*>(input);
    const T* w = static_cast<const T*>(weight);
    T* out = static_cast<T*>(output);
    T* tw = static_cast<T*>(total_weight);
    A loss_sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = target[i];
      A loss = 0;
      if (t != ignore_index) {
        if (t < 0 || t >= classes) {
          if (check.ok) check = IndexCheck{false, t};
        } else {
          const A wt = w != nullptr ? detail::convert<A>(w[t]) : A(1);
          loss = -detail::convert<A>(x[i * classes + t]) * wt;
          weight_sum += wt;
        }
      }
      if (reduction == LossReduction::None) {
        out[i] = detail::convert<T>(loss);
      } else {
        loss_sum += loss;
      }
    }
    if (reduction == LossReduction::None) {
      *tw = T(0);
      return;
    }
    if (reduction == LossReduction::Mean) loss_sum /= weight_sum;  // 0 / 0: NaN, like the CPU
    *out = detail::convert<T>(loss_sum);
    *tw = detail::convert<T>(weight_sum);
  });
  return check;
}

IndexCheck nll_loss_backward(ScalarType type, int64_t n, int64_t classes, const void* grad_output,
                             const int64_t* target, const void* weight, LossReduction reduction,
                             int64_t ignore_index, const void* total_weight, void* grad_input) {
  IndexCheck check;
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* g = static_cast<const T*>(grad_output);
    const T* w = static_cast<const T*>(weight);
    T* gi = static_cast<T*>(grad_input);
    std::fill_n(gi, n * classes, T(0));
    A scale = reduction == LossReduction::None ? A(0) : detail::convert<A>(g[0]);
    if (reduction == LossReduction::Mean) scale /= detail::convert<A>(static_cast<const T*>(total_weight)[0]);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = target[i];
      if (t == ignore_index) continue;
      if (t < 0 || t >= classes) {
        if (check.ok) check = IndexCheck{false, t};
        continue;
      }
      const A wt = w != nullptr ? detail::convert<A>(w[t]) : A(1);
      const A gi_t = reduction == LossReduction::None ? detail::convert<A>(g[i]) : scale;
      gi[i * classes + t] = detail::convert<T>(-wt * gi_t);
    }
  });
  return check;
}

}  // namespace mlu::kernels
