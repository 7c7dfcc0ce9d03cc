// Scaled dot-product attention, fused:
//   out = dropout(softmax(scale * Q K^T + bias + causal)) V
// per (batch, head), computed a block of query rows against a block of keys
// at a time with an online softmax (Note [Online softmax] in attention.cpp):
// no score matrix of q_len x kv_len is ever held, so memory grows linearly
// with the sequence length. The backward op recomputes the scores from Q, K
// and the saved log-sum-exp of each row (FlashAttention-2's scheme).
//
// Shapes: Q [batch, heads, q_len, head_dim], K [batch, kv_heads, kv_len,
// head_dim], V [batch, kv_heads, kv_len, value_dim], out [batch, heads,
// q_len, value_dim]; heads is a multiple of kv_heads and query head h reads
// key/value head h / (heads / kv_heads) (grouped-query attention). Every view
// has a contiguous last dim; the other strides are free. Q, K, V, out, the
// bias and all gradients share one dtype: Float32, Float16 or BFloat16;
// scores, the softmax and every accumulation are float, each result rounded
// once.
//
// Masking: `causal` keeps key j for query i iff j <= i (top-left aligned, as
// PyTorch's is_causal); `bias` is added to the scaled scores (-inf masks). A
// row with every key masked gives 0 (PyTorch's _safe_softmax), and a zero
// gradient. Dropout drops each probability independently with probability
// dropout_p, keyed by (seed, offset, row, key) (attention_dropout_keep), so
// the backward op regenerates the forward's mask without storing it.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

// A [batch, heads, rows, cols] tensor with contiguous rows.
struct HeadsView {
  void* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

// The additive bias [batch, heads, q_len, kv_len], any strides (0 for a
// broadcast dim). data == nullptr: no bias.
struct BiasView {
  const void* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0, col_stride = 0;
};

struct AttentionArgs {
  ScalarType dtype;
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  HeadsView q, k, v;
  HeadsView out;  // written by the forward op, read by the backward op
  BiasView bias;
  double scale;
  bool causal = false;
  double dropout_p = 0;
  uint64_t seed = 0, offset = 0;
  // The natural log of each row's softmax denominator, scale and bias
  // included: [batch, heads, q_len], contiguous. Written by the forward op
  // (-inf for a fully masked row), read by the backward op.
  float* logsumexp = nullptr;
};

struct AttentionGradients {
  HeadsView grad_out;                // read
  HeadsView grad_q, grad_k, grad_v;  // written, every element
  // [batch, heads, q_len, kv_len], contiguous, in the dtype; nullptr: not wanted.
  void* grad_bias = nullptr;
};

bool attention_supports(ScalarType dtype);

void attention_forward(const AttentionArgs& args);
void attention_backward(const AttentionArgs& args, const AttentionGradients& grads);

// Whether dropout keeps the probability of key `key` in score row `row`
// (row = (b * heads + h) * q_len + i).
bool attention_dropout_keep(uint64_t seed, uint64_t offset, double p, int64_t kv_len, int64_t row, int64_t key);

// The keep mask of a whole call, [batch * heads * q_len, kv_len] (for tests
// and return_debug_mask).
void attention_dropout_mask(uint64_t seed, uint64_t offset, double p, int64_t rows, int64_t kv_len, bool* mask);

// The scalar references: the full score matrix per head, in double.
void attention_forward_ref(const AttentionArgs& args);
void attention_backward_ref(const AttentionArgs& args, const AttentionGradients& grads);

}  // namespace mlu::kernels
