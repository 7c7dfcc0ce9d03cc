// Layer and batch normalisation: the calls split over the compute threads,
// the loops in the active ISA's variant (norm_isa.cpp).
#include "mlu_kernels/norm.h"

#include <algorithm>
#include <vector>

#include "mlu_kernels/parallel.h"
#include "norm_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

const detail::NormFns& active() { return MLU_KERNELS_ACTIVE_ISA_VARIANT(norm_fns)(); }

int64_t grain_rows(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

int64_t grain_channels(int64_t n, int64_t spatial) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(n * spatial, 1));
}

}  // namespace

void layer_norm(ScalarType type, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                double eps, void* y, void* mean, void* rstd) {
  detail::VerboseCall call("layer_norm");
  if (call) call.describe(type, "rows%lld cols%lld", detail::lld(rows), detail::lld(cols));
  const detail::NormFns& fns = active();
  parallel_for(0, rows, grain_rows(cols), [&](int64_t lo, int64_t hi) {
    fns.layer_norm_rows(type, lo, hi, cols, x, weight, bias, eps, y, mean, rstd);
  });
}

void layer_norm_backward(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                         const void* mean, const void* rstd, const void* weight, void* grad_input, void* grad_weight,
                         void* grad_bias) {
  detail::VerboseCall call("layer_norm_backward");
  if (call) call.describe(type, "rows%lld cols%lld", detail::lld(rows), detail::lld(cols));
  const detail::NormFns& fns = active();
  if (grad_input != nullptr) {
    parallel_for(0, rows, grain_rows(cols), [&](int64_t lo, int64_t hi) {
      fns.layer_norm_grad_input_rows(type, lo, hi, cols, grad_y, x, mean, rstd, weight, grad_input);
    });
  }
  if (grad_weight == nullptr && grad_bias == nullptr) return;
  // Threads take blocks of columns; each column sums over the rows in order.
  parallel_for(0, cols, std::max<int64_t>(16, 16384 / std::max<int64_t>(rows, 1)), [&](int64_t lo, int64_t hi) {
    fns.layer_norm_param_grads(type, lo, hi, rows, cols, grad_y, x, mean, rstd, grad_weight, grad_bias);
  });
}

void batch_norm_training_statistics(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                                    double eps, double momentum, void* mean, void* invstd, void* running_mean,
                                    void* running_var, int cpu_lanes_16bit) {
  detail::VerboseCall call("batch_norm_training_statistics");
  if (call) {
    call.describe(type, "n%lld channels%lld spatial%lld", detail::lld(n), detail::lld(channels), detail::lld(spatial));
  }
  const detail::NormFns& fns = active();
  const detail::TrainingStatistics finish{eps, momentum, running_mean, running_var, cpu_lanes_16bit};
  parallel_for(0, channels, grain_channels(n, spatial), [&](int64_t lo, int64_t hi) {
    fns.batch_norm_training_statistics_channels(type, lo, hi, n, channels, spatial, x, mean, invstd, finish);
  });
}

void batch_norm_apply(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x, const void* mean,
                      const void* invstd, const void* weight, const void* bias, void* y, bool rounded_shift) {
  detail::VerboseCall call("batch_norm_apply");
  if (call) {
    call.describe(type, "n%lld channels%lld spatial%lld", detail::lld(n), detail::lld(channels), detail::lld(spatial));
  }
  const detail::NormFns& fns = active();
  parallel_for(0, n * channels, grain_channels(1, spatial), [&](int64_t lo, int64_t hi) {
    fns.batch_norm_apply_planes(type, lo, hi, channels, spatial, x, mean, invstd, weight, bias, y, rounded_shift);
  });
}

void batch_norm_backward(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* grad_y,
                         const void* x, const void* mean, const void* invstd, const void* weight, bool training,
                         void* grad_input, void* grad_weight, void* grad_bias) {
  detail::VerboseCall call("batch_norm_backward");
  if (call) {
    call.describe(type, "n%lld channels%lld spatial%lld", detail::lld(n), detail::lld(channels), detail::lld(spatial));
  }
  const detail::NormFns& fns = active();
  parallel_for(0, channels, grain_channels(n, spatial), [&](int64_t lo, int64_t hi) {
    fns.batch_norm_backward_channels(type, lo, hi, n, channels, spatial, grad_y, x, mean, invstd, weight, training,
                                     grad_input, grad_weight, grad_bias);
  });
}

void group_norm(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups, const void* x,
                const void* weight, const void* bias, double eps, void* y, void* mean, void* rstd) {
  detail::VerboseCall call("group_norm");
  if (call) {
    call.describe(type, "n%lld channels%lld spatial%lld groups%lld", detail::lld(n), detail::lld(channels),
                  detail::lld(spatial), detail::lld(groups));
  }
  const detail::NormFns& fns = active();
  const int64_t row = channels / groups * spatial;
  parallel_for(0, n * groups, grain_rows(row), [&](int64_t lo, int64_t hi) {
    fns.group_norm_rows(type, lo, hi, channels, spatial, groups, x, weight, bias, eps, y, mean, rstd);
  });
}

void group_norm_backward(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups,
                         const void* grad_y, const void* x, const void* mean, const void* rstd, const void* weight,
                         void* grad_input, void* grad_weight, void* grad_bias) {
  detail::VerboseCall call("group_norm_backward");
  if (call) {
    call.describe(type, "n%lld channels%lld spatial%lld groups%lld", detail::lld(n), detail::lld(channels),
                  detail::lld(spatial), detail::lld(groups));
  }
  const detail::NormFns& fns = active();
  const int64_t row = channels / groups * spatial;
  const bool wide = type == ScalarType::Float64;
  // ds / db per (sample, channel), in A; then the parameter gradients sum
  // them over the samples in order.
  std::vector<double> ds_db(static_cast<size_t>(2 * n * channels));
  void* ds = ds_db.data();
  void* db = wide ? static_cast<void*>(ds_db.data() + n * channels)
                  : static_cast<void*>(reinterpret_cast<float*>(ds_db.data()) + n * channels);
  parallel_for(0, n * groups, grain_rows(row), [&](int64_t lo, int64_t hi) {
    fns.group_norm_backward_rows(type, lo, hi, channels, spatial, groups, grad_y, x, mean, rstd, weight, grad_input,
                                 ds, db);
  });
  if (grad_weight == nullptr && grad_bias == nullptr) return;
  const int64_t d = channels / groups;
  const auto sums = [&](auto zero) {
    using A = decltype(zero);
    const A *DS = static_cast<const A*>(ds), *DB = static_cast<const A*>(db);
    const A *M = static_cast<const A*>(mean), *R = static_cast<const A*>(rstd);
    for (int64_t c = 0; c < channels; ++c) {
      A dw = 0, dbias = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = i * channels + c, g = i * groups + c / d;
        dw += (DS[at] - DB[at] * M[g]) * R[g];
        dbias += DB[at];
      }
      if (grad_weight != nullptr) static_cast<A*>(grad_weight)[c] = dw;
      if (grad_bias != nullptr) static_cast<A*>(grad_bias)[c] = dbias;
    }
  };
  if (wide) {
    sums(0.0);
  } else {
    sums(0.0f);
  }
}

}  // namespace mlu::kernels
