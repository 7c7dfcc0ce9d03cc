// The negative log-likelihood loss (the loss part of cross_entropy) and its
// backward op, as PyTorch's CPU computes them (LossNLL.cpp): input [n,
// classes] of dtype `type` (log-probabilities), target [n] int64, weight
// [classes] of `type` or nullptr (all ones). A target equal to ignore_index
// contributes nothing; any other target outside [0, classes) is reported
// (IndexCheck) and its sample skipped. Float16/BFloat16 accumulate in float.
//   reduction None: output[i] = -weight[t_i] * input[i, t_i]; total_weight = 0
//   Sum / Mean: output = sum_i -weight[t_i] input[i, t_i] (divided by
//   total_weight = sum_i weight[t_i] for Mean: 0 / 0 is NaN, as on the CPU)
// output and total_weight are 0-dim for Sum / Mean, output [n] for None.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/index.h"

namespace mlu::kernels {

// PyTorch's at::Reduction numbering.
enum class LossReduction : int { None = 0, Mean = 1, Sum = 2 };

IndexCheck nll_loss_forward(ScalarType type, int64_t n, int64_t classes, const void* input, const int64_t* target,
                            const void* weight, LossReduction reduction, int64_t ignore_index, void* output,
                            void* total_weight);
// Scalar reference (loss_ref.cpp): one sample at a time, sums in double.
IndexCheck nll_loss_forward_ref(ScalarType type, int64_t n, int64_t classes, const void* input,
                                const int64_t* target, const void* weight, LossReduction reduction,
                                int64_t ignore_index, void* output, void* total_weight);

// grad_input [n, classes] (overwritten): -weight[t_i] * g_i at (i, t_i), zero
// elsewhere, where g_i = grad_output[i] (None), grad_output (Sum) or
// grad_output / total_weight (Mean).
IndexCheck nll_loss_backward(ScalarType type, int64_t n, int64_t classes, const void* grad_output,
                             const int64_t* target, const void* weight, LossReduction reduction,
                             int64_t ignore_index, const void* total_weight, void* grad_input);
// Scalar reference: one element of grad_input at a time, in double.
IndexCheck nll_loss_backward_ref(ScalarType type, int64_t n, int64_t classes, const void* grad_output,
                                 const int64_t* target, const void* weight, LossReduction reduction,
                                 int64_t ignore_index, const void* total_weight, void* grad_input);

}  // namespace mlu::kernels
