// The per-ISA normalisation routines (norm_isa.cpp): each takes a range of
// rows, channels or planes of one call, so norm.cpp splits the work over
// the compute threads and the loops are compiled for every ISA (Note
// [Per-ISA variants]). Arguments and formulas as in mlu_kernels/norm.h.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/dtype.h"

namespace mlu::kernels::detail {

// What batch_norm_training_statistics adds to the statistics.
struct TrainingStatistics {
  double eps, momentum;
  void *running_mean, *running_var;  // either may be null
  int cpu_lanes_16bit;  // as batch_norm_training_statistics's
};

struct NormFns {
  // layer_norm of rows [lo, hi).
  void (*layer_norm_rows)(ScalarType type, int64_t lo, int64_t hi, int64_t cols, const void* x, const void* weight,
                          const void* bias, double eps, void* y, void* mean, void* rstd);
  // layer_norm_backward's grad_input for rows [lo, hi).
  void (*layer_norm_grad_input_rows)(ScalarType type, int64_t lo, int64_t hi, int64_t cols, const void* grad_y,
                                     const void* x, const void* mean, const void* rstd, const void* weight,
                                     void* grad_input);
  // layer_norm_backward's grad_weight / grad_bias (either may be null) for
  // columns [lo, hi), each summed over the rows in order.
  void (*layer_norm_param_grads)(ScalarType type, int64_t lo, int64_t hi, int64_t rows, int64_t cols,
                                 const void* grad_y, const void* x, const void* mean, const void* rstd,
                                 void* grad_weight, void* grad_bias);
  // batch_norm_training_statistics of channels [lo, hi).
  void (*batch_norm_training_statistics_channels)(ScalarType type, int64_t lo, int64_t hi, int64_t n,
                                                  int64_t channels, int64_t spatial, const void* x, void* mean,
                                                  void* invstd, const detail::TrainingStatistics& finish);
  // batch_norm_apply of planes [lo, hi) (plane p: sample p / channels,
  // channel p % channels).
  void (*batch_norm_apply_planes)(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial,
                                  const void* x, const void* mean, const void* invstd, const void* weight,
                                  const void* bias, void* y, bool rounded_shift);
  // batch_norm_backward of channels [lo, hi).
  void (*batch_norm_backward_channels)(ScalarType type, int64_t lo, int64_t hi, int64_t n, int64_t channels,
                                       int64_t spatial, const void* grad_y, const void* x, const void* mean,
                                       const void* invstd, const void* weight, bool training, void* grad_input,
                                       void* grad_weight, void* grad_bias);
  // group_norm of (sample, group) rows [lo, hi).
  void (*group_norm_rows)(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial,
                          int64_t groups, const void* x, const void* weight, const void* bias, double eps, void* y,
                          void* mean, void* rstd);
  // group_norm_backward of rows [lo, hi): ds / db (A, [n, channels]) of
  // their channels, and grad_input unless null.
  void (*group_norm_backward_rows)(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial,
                                   int64_t groups, const void* grad_y, const void* x, const void* mean,
                                   const void* rstd, const void* weight, void* grad_input, void* ds, void* db);
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::NormFns& norm_fns())
