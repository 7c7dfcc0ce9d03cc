#include "mlu_kernels/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/bad_index.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

// One batch item's view of the problem.
template <class T>
struct Item {
  const T* lp;  // log_probs at (t = 0, b, c = 0)
  int64_t lp_t, lp_c;
  int64_t input_length, target_length;
  std::vector<int64_t> prime;  // the extended target l': blank, l1, blank, l2, ..., blank

  T log_prob(int64_t t, int64_t s) const { return lp[t * lp_t + prime[s] * lp_c]; }
};

using detail::BadIndex;

template <class T>
Item<T> item_of(const CtcProblem& p, int64_t b, const int64_t* target_offsets, BadIndex& bad) {
  Item<T> item;
  item.lp = static_cast<const T*>(p.log_probs) + b * p.log_probs_strides[1];
  item.lp_t = p.log_probs_strides[0];
  item.lp_c = p.log_probs_strides[2];
  item.input_length = p.input_lengths[b];
  item.target_length = p.target_lengths[b];
  item.prime.assign(static_cast<size_t>(2 * item.target_length + 1), p.blank);
  const int64_t start = p.concatenated ? target_offsets[b] * p.target_stride : b * p.target_batch_stride;
  for (int64_t k = 0; k < item.target_length; ++k) {
    const int64_t at = start + k * p.target_stride;
    int64_t label = p.target_type == ScalarType::Int32 ? static_cast<const int32_t*>(p.targets)[at]
                                                       : static_cast<const int64_t*>(p.targets)[at];
    if (label < 0 || label >= p.labels) {
      bad.report(label);
      label = 0;
    }
    item.prime[static_cast<size_t>(2 * k + 1)] = label;
  }
  return item;
}

// Where each item's labels start in concatenated targets (unused otherwise).
std::vector<int64_t> target_offsets_of(const CtcProblem& p) {
  std::vector<int64_t> offsets(static_cast<size_t>(p.batch), 0);
  for (int64_t b = 1; b < p.batch; ++b) offsets[b] = offsets[b - 1] + p.target_lengths[b - 1];
  return offsets;
}

// log(exp(a - m) + exp(b - m) + exp(c - m)) + m with m the largest (0 when
// all are -inf), in the CPU's order of operations.
template <class T>
T log_sum_exp3(T a, T b, T c) {
  constexpr T neginf = -std::numeric_limits<T>::infinity();
  T m = std::max(a, std::max(b, c));
  if (m == neginf) m = 0;
  return std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m)) + m;
}

template <class T>
void forward_item(const Item<T>& it, int64_t width, int64_t max_input, T* alpha, T& nll) {
  constexpr T neginf = -std::numeric_limits<T>::infinity();
  std::fill_n(alpha, max_input * width, neginf);
  if (it.input_length == 0) {
    nll = it.target_length == 0 ? T(0) : -neginf;
    return;
  }
  const int64_t states = 2 * it.target_length + 1;
  alpha[0] = it.log_prob(0, 0);
  if (it.target_length > 0) alpha[1] = it.log_prob(0, 1);
  for (int64_t t = 1; t < it.input_length; ++t) {
    const T* prev = alpha + (t - 1) * width;
    T* cur = alpha + t * width;
    for (int64_t s = 0; s < states; ++s) {
      const T a1 = prev[s];
      const T a2 = s > 0 ? prev[s - 1] : neginf;
      const T a3 = s > 1 && it.prime[s - 2] != it.prime[s] ? prev[s - 2] : neginf;
      cur[s] = log_sum_exp3(a1, a2, a3) + it.log_prob(t, s);
    }
  }
  const T* last = alpha + (it.input_length - 1) * width;
  if (it.target_length == 0) {
    nll = -last[0];
    return;
  }
  const T l1 = last[2 * it.target_length], l2 = last[2 * it.target_length - 1];
  T m = std::max(l1, l2);
  if (m == neginf) m = 0;
  nll = -(std::log(std::exp(l1 - m) + std::exp(l2 - m)) + m);
}

// grad_item [T, C] at stride grad_t between steps (the other items' rows
// interleave); beta: scratch of [T, width].
template <class T>
void backward_item(const Item<T>& it, int64_t width, int64_t max_input, int64_t labels, const T* alpha, T nll,
                   T grad_out, T* beta, T* grad_item, int64_t grad_t) {
  constexpr T neginf = -std::numeric_limits<T>::infinity();
  // grad_item first collects log(sum of alpha beta) per (t, label): log of an empty sum.
  for (int64_t t = 0; t < it.input_length; ++t) std::fill_n(grad_item + t * grad_t, labels, neginf);
  const int64_t n = it.input_length, states = 2 * it.target_length + 1;
  if (n > 0) {
    T* last = beta + (n - 1) * width;
    std::fill_n(last, width, neginf);
    const T* alpha_last = alpha + (n - 1) * width;
    T* grad_last = grad_item + (n - 1) * grad_t;
    last[states - 1] = it.log_prob(n - 1, states - 1);
    grad_last[it.prime[states - 1]] = alpha_last[states - 1] + last[states - 1];
    if (it.target_length > 0) {
      // A blank and a label: different, so no log-sum needed.
      last[states - 2] = it.log_prob(n - 1, states - 2);
      grad_last[it.prime[states - 2]] = alpha_last[states - 2] + last[states - 2];
    }
  }
  for (int64_t t = n - 2; t >= 0; --t) {
    const T* next = beta + (t + 1) * width;
    T* cur = beta + t * width;
    const T* alpha_t = alpha + t * width;
    T* grad_t_row = grad_item + t * grad_t;
    for (int64_t s = states - 1; s >= 0; --s) {
      const int64_t label = it.prime[s];
      const T b1 = next[s];
      const T b2 = s < states - 1 ? next[s + 1] : neginf;
      const T b3 = s < states - 2 && it.prime[s + 2] != label ? next[s + 2] : neginf;
      cur[s] = log_sum_exp3(b1, b2, b3) + it.log_prob(t, s);
      const T log_alpha_beta = alpha_t[s] + cur[s];
      T& collected = grad_t_row[label];
      if (collected == neginf) {
        collected = log_alpha_beta;
      } else {
        const T m = std::max(collected, log_alpha_beta);
        collected = std::log(std::exp(collected - m) + std::exp(log_alpha_beta - m)) + m;
      }
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    T* row = grad_item + t * grad_t;
    for (int64_t c = 0; c < labels; ++c) {
      const T lp = it.lp[t * it.lp_t + c * it.lp_c];
      row[c] = (std::exp(lp) - std::exp(row[c] + nll - lp)) * grad_out;
    }
  }
  for (int64_t t = n; t < max_input; ++t) std::fill_n(grad_item + t * grad_t, labels, T(0));
}

template <class F>
void dispatch_ctc_type(ScalarType type, F&& f) {
  if (type == ScalarType::Float64) {
    f(std::type_identity<double>{});
  } else {
    f(std::type_identity<float>{});
  }
}

}  // namespace

IndexCheck ctc_loss_forward(const CtcProblem& p, void* neg_log_likelihood, void* log_alpha) {
  detail::VerboseCall call("ctc_loss_forward");
  if (call) {
    call.describe(p.type, "T%lld N%lld C%lld S%lld", detail::lld(p.max_input), detail::lld(p.batch),
                  detail::lld(p.labels), detail::lld(p.max_target));
  }
  const std::vector<int64_t> offsets = target_offsets_of(p);
  const int64_t width = 2 * p.max_target + 1;
  BadIndex bad;
  dispatch_ctc_type(p.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const Item<T> it = item_of<T>(p, b, offsets.data(), bad);
        forward_item(it, width, p.max_input, static_cast<T*>(log_alpha) + b * p.max_input * width,
                     static_cast<T*>(neg_log_likelihood)[b]);
      }
    });
  });
  return bad.check();
}

IndexCheck ctc_loss_backward(const CtcProblem& p, const void* grad_out, int64_t grad_out_stride,
                             const void* neg_log_likelihood, const void* log_alpha, bool zero_infinity, void* grad) {
  detail::VerboseCall call("ctc_loss_backward");
  if (call) {
    call.describe(p.type, "T%lld N%lld C%lld S%lld", detail::lld(p.max_input), detail::lld(p.batch),
                  detail::lld(p.labels), detail::lld(p.max_target));
  }
  const std::vector<int64_t> offsets = target_offsets_of(p);
  const int64_t width = 2 * p.max_target + 1;
  BadIndex bad;
  dispatch_ctc_type(p.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> beta(static_cast<size_t>(p.max_input * width));
      for (int64_t b = begin; b < end; ++b) {
        T* grad_item = static_cast<T*>(grad) + b * p.labels;
        const int64_t grad_t = p.batch * p.labels;
        const T nll = static_cast<const T*>(neg_log_likelihood)[b];
        if (zero_infinity && nll == std::numeric_limits<T>::infinity()) {
          for (int64_t t = 0; t < p.max_input; ++t) std::fill_n(grad_item + t * grad_t, p.labels, T(0));
          continue;
        }
        const Item<T> it = item_of<T>(p, b, offsets.data(), bad);
        backward_item(it, width, p.max_input, p.labels, static_cast<const T*>(log_alpha) + b * p.max_input * width,
                      nll, static_cast<const T*>(grad_out)[b * grad_out_stride], beta.data(), grad_item, grad_t);
      }
    });
  });
  return bad.check();
}

}  // namespace mlu::kernels
