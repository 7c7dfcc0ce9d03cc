// The scalar references of loss.h: one sample at a time, sums in double (the
// kernels sum in float for Float32 / Float16 / BFloat16), each result rounded
// once to the dtype.
#include <algorithm>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/loss.h"

namespace mlu::kernels {
namespace {

template <class T>
double wide(T v) {
  return static_cast<double>(detail::widen(v));
}

// Whether sample i counts, and the first bad target into check.
bool counted(int64_t t, int64_t classes, int64_t ignore_index, IndexCheck& check) {
  if (t == ignore_index) return false;
  if (t >= 0 && t < classes) return true;
  if (check.ok) check = IndexCheck{false, t};
  return false;
}

}  // namespace

IndexCheck nll_loss_forward_ref(ScalarType type, int64_t n, int64_t classes, const void* input,
                                const int64_t* target, const void* weight, LossReduction reduction,
                                int64_t ignore_index, void* output, void* total_weight) {
  IndexCheck check;
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(input);
    const T* w = static_cast<const T*>(weight);
    T* out = static_cast<T*>(output);
    double loss_sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = target[i];
      double loss = 0;
      if (counted(t, classes, ignore_index, check)) {
        const double wt = w != nullptr ? wide(w[t]) : 1.0;
        loss = -wt * wide(x[i * classes + t]);
        weight_sum += wt;
      }
      if (reduction == LossReduction::None) out[i] = detail::convert<T>(loss);
      loss_sum += loss;
    }
    if (reduction == LossReduction::None) {
      *static_cast<T*>(total_weight) = detail::convert<T>(0.0);
      return;
    }
    *out = detail::convert<T>(reduction == LossReduction::Mean ? loss_sum / weight_sum : loss_sum);
    *static_cast<T*>(total_weight) = detail::convert<T>(weight_sum);
  });
  return check;
}

IndexCheck nll_loss_backward_ref(ScalarType type, int64_t n, int64_t classes, const void* grad_output,
                                 const int64_t* target, const void* weight, LossReduction reduction,
                                 int64_t ignore_index, const void* total_weight, void* grad_input) {
  IndexCheck check;
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = static_cast<const T*>(grad_output);
    const T* w = static_cast<const T*>(weight);
    T* gi = static_cast<T*>(grad_input);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = target[i];
      const bool hit = counted(t, classes, ignore_index, check);
      double gi_t = 0;
      if (hit) {
        const double wt = w != nullptr ? wide(w[t]) : 1.0;
        const double go = reduction == LossReduction::None ? wide(g[i]) : wide(g[0]);
        gi_t = -wt * (reduction == LossReduction::Mean ? go / wide(*static_cast<const T*>(total_weight)) : go);
      }
      for (int64_t c = 0; c < classes; ++c) gi[i * classes + c] = detail::convert<T>(hit && c == t ? gi_t : 0.0);
    }
  });
  return check;
}

}  // namespace mlu::kernels
