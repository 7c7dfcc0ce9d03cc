// The connectionist temporal classification loss (Graves et al. 2006, "CTC")
// and its gradient, as PyTorch's CPU computes them (LossCTC.cpp): the same
// log-space recursions in the same order, so results match the CPU's to the
// last bits of std::exp / std::log.
//
// log_probs [T, N, C] (any strides) holds log-probabilities per time step t,
// batch item b and label c; targets are either a [N, S] matrix (item b's
// labels at targets[b * target_batch_stride + k * target_stride]) or the
// concatenation of every item's labels (`concatenated`: item b's start at
// target_stride times the sum of the earlier target lengths). The extended target of item b is
// its labels with `blank` before, between and after them (2 L + 1 states).
// Preconditions (the caller checks them, with PyTorch's messages): Float32 or
// Float64 log_probs, Int32 or Int64 targets, 0 <= blank < C, every input
// length in [0, T], every target length >= 0 and fitting the targets.
// A label outside [0, C) is reported (IndexCheck) and reads label 0 instead.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/index.h"

namespace mlu::kernels {

struct CtcProblem {
  ScalarType type = ScalarType::Float32;  // of log_probs and every floating result
  int64_t max_input = 0;                   // T
  int64_t batch = 0;                       // N
  int64_t labels = 0;                      // C
  int64_t blank = 0;
  int64_t max_target = 0;                  // log_alpha has 2 max_target + 1 states per step
  const int64_t* input_lengths = nullptr;  // [N]
  const int64_t* target_lengths = nullptr;  // [N]
  const void* log_probs = nullptr;
  int64_t log_probs_strides[3] = {};  // in elements, for t, b, c
  const void* targets = nullptr;
  ScalarType target_type = ScalarType::Int64;
  bool concatenated = false;
  int64_t target_batch_stride = 0;  // [N, S] targets only
  int64_t target_stride = 1;
};

// neg_log_likelihood [N]: -log p(target | log_probs) per item (+inf where no
// alignment exists, 0 for an empty input with an empty target). log_alpha
// [N, T, 2 max_target + 1], contiguous: the forward variables in log space;
// states an item does not reach (t >= its input length, s > 2 L) are -inf.
IndexCheck ctc_loss_forward(const CtcProblem& problem, void* neg_log_likelihood, void* log_alpha);

// grad [T, N, C], contiguous: the gradient of grad_out[b] * loss[b] as the CPU
// defines it, exp(lp) - exp(log(sum of alpha beta over the states of c) + nll
// - lp), times grad_out[b]; zero for t >= the item's input length, and for
// the whole item when zero_infinity and its loss is +inf. grad_out [N] with
// stride grad_out_stride (0 for a broadcast scalar); neg_log_likelihood and
// log_alpha as ctc_loss_forward wrote them.
IndexCheck ctc_loss_backward(const CtcProblem& problem, const void* grad_out, int64_t grad_out_stride,
                             const void* neg_log_likelihood, const void* log_alpha, bool zero_infinity, void* grad);

}  // namespace mlu::kernels
