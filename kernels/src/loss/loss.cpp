#include "mlu_kernels/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/type_arithmetic.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

// Note [nll_loss sums as the CPU does]
// The CPU's nll_loss_out_frame and nll_loss2d_forward_out_frame
// (LossNLL.cpp, LossNLL2d.cpp) reduce in scalar_t, so in 16-bit arithmetic
// for Half / BFloat16 (every step rounded, TypeArithmetic), through a cascade
// of 8 partial sums: element i is added to level 0; then, while the next
// level_power bits of i (from bit j * level_power up) are all zero, level j
// is added into level j + 1 and cleared (ignored elements skip this step).
// The result is the left-to-right sum of the levels from 0. level_power =
// max(4, CeilLog2(n) / 8). The 2-D form numbers the positions of an
// [N, C, H, W] input the way our glue flattens them (n = N * H * W), so one
// cascade serves both. The same sums in float would be closer to the exact
// value but not the CPU's: a float16 loss over a few hundred positions
// differed in its last bit.
constexpr int kCascadeLevels = 8;

// utils::CeilLog2: ceil(log2(x)), 1 for x <= 2.
int64_t ceil_log2(int64_t x) {
  if (x <= 2) return 1;
  return 64 - __builtin_clzll(static_cast<uint64_t>(x - 1));
}

}  // namespace

IndexCheck nll_loss_forward(ScalarType type, int64_t n, int64_t classes, const void* input, const int64_t* target,
                            const void* weight, LossReduction reduction, int64_t ignore_index, void* output,
                            void* total_weight) {
  detail::VerboseCall call("nll_loss_forward");
  if (call) call.describe(type, "n%lld classes%lld", detail::lld(n), detail::lld(classes));
  IndexCheck check;
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using H = detail::TypeArithmetic<T>;
    const T* x = static_cast<const T*>(input);
    const T* w = static_cast<const T*>(weight);
    T* out = static_cast<T*>(output);
    T* tw = static_cast<T*>(total_weight);
    if (reduction == LossReduction::None) {  // per sample, each -x * w rounded once, as the CPU's
      for (int64_t i = 0; i < n; ++i) {
        const int64_t t = target[i];
        T loss = H::from(0);
        if (t != ignore_index) {
          if (t < 0 || t >= classes) {
            if (check.ok) check = IndexCheck{false, t};
          } else {
            const T value = x[i * classes + t];
            loss = H::mul(H::neg(value), w != nullptr ? w[t] : H::from(1));
          }
        }
        out[i] = loss;
      }
      *tw = H::from(0);
      return;
    }
    // Note [nll_loss sums as the CPU does].
    const int64_t level_power = std::max<int64_t>(4, ceil_log2(n) / kCascadeLevels);
    const int64_t level_mask = (int64_t{1} << level_power) - 1;
    T loss_sums[kCascadeLevels], weight_sums[kCascadeLevels];
    std::fill_n(loss_sums, kCascadeLevels, H::from(0));
    std::fill_n(weight_sums, kCascadeLevels, H::from(0));
    int64_t ignored = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = target[i];
      if (t == ignore_index) {
        ++ignored;
        continue;
      }
      if (t < 0 || t >= classes) {
        if (check.ok) check = IndexCheck{false, t};
        continue;
      }
      const T value = x[i * classes + t];
      if (w != nullptr) {
        loss_sums[0] = H::sub(loss_sums[0], H::mul(value, w[t]));
        weight_sums[0] = H::add(weight_sums[0], w[t]);
      } else {
        loss_sums[0] = H::sub(loss_sums[0], value);
      }
      for (int j = 0; j + 1 < kCascadeLevels; ++j) {
        if ((i & (level_mask << (j * level_power))) != 0) break;
        weight_sums[j + 1] = H::add(weight_sums[j + 1], weight_sums[j]);
        loss_sums[j + 1] = H::add(loss_sums[j + 1], loss_sums[j]);
        weight_sums[j] = loss_sums[j] = H::from(0);
      }
    }
    T loss = H::from(0), weights = H::from(0);
    for (int j = 0; j < kCascadeLevels; ++j) {
      loss = H::add(loss, loss_sums[j]);
      weights = H::add(weights, weight_sums[j]);
    }
    if (w == nullptr) weights = H::from(n - ignored);
    if (reduction == LossReduction::Mean) loss = H::div(loss, weights);  // 0 / 0: NaN, like the CPU
    *out = loss;
    *tw = weights;
  });
  return check;
}

IndexCheck nll_loss_backward(ScalarType type, int64_t n, int64_t classes, const void* grad_output,
                             const int64_t* target, const void* weight, LossReduction reduction,
                             int64_t ignore_index, const void* total_weight, void* grad_input) {
  detail::VerboseCall call("nll_loss_backward");
  if (call) call.describe(type, "n%lld classes%lld", detail::lld(n), detail::lld(classes));
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
