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
// PyTorch's is_causal); FlashAttention's ops mask by position more generally
// (Note [Attention windows] below); `bias` is added to the scaled scores (-inf
// masks). A row with every key masked gives 0 (PyTorch's _safe_softmax), and
// a zero gradient. Dropout drops each probability independently with probability
// dropout_p, keyed by (seed, offset, row, key) (attention_dropout_keep), so
// the backward op regenerates the forward's mask without storing it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

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
  // included: [batch, heads, q_len] with rows lse_head_stride apart (0:
  // q_len, contiguous). Written by the forward op (empty_row_logsumexp for a
  // fully masked row), read by the backward op.
  float* logsumexp = nullptr;
  int64_t lse_head_stride = 0;
  float empty_row_logsumexp = -std::numeric_limits<float>::infinity();

  // Note [Attention windows]
  // FlashAttention's masks: key j is visible to query i iff
  //   i + diagonal - window_left <= j <= i + diagonal + window_right,
  // a bound dropped where its window is negative, with diagonal = kv_len -
  // q_len when bottom_right (the last query meets the last key, as flash
  // attention aligns a causal mask when q_len != kv_len) and 0 otherwise.
  // causal forces window_right = 0. A visible set is one run of keys, so the
  // kernel visits only the key blocks some row of a query block sees.
  bool bottom_right = false;
  int64_t window_left = -1, window_right = -1;

  // A paged key/value cache (pages != nullptr): key row j of batch b is row
  // j % page_size of page pages[b * pages_per_batch + j / page_size], and the
  // batch stride of k and v is the distance between pages.
  const int32_t* pages = nullptr;
  int64_t page_size = 0, pages_per_batch = 0;
};

// Packed variable-length sequences (FlashAttention's varlen layout): q, k, v
// and out are [total rows, heads, dim] (batch 1 in AttentionArgs; q_len and
// kv_len unused), sequence s holds query rows [q_starts[s], q_starts[s+1])
// and key rows from k_starts[s] (or, paged, from its own pages at row 0),
// k_used[s] of them if k_used is given, else k_starts[s+1] - k_starts[s]
// (k_starts may be nullptr only when paged with k_used).
// Each sequence is a batch entry of its own, bottom_right aligned as the
// args say; logsumexp is [heads, q_rows] (lse_head_stride). Rows past the
// last sequence get 0 (their lse: empty_row_logsumexp), as do the gradients
// of rows no sequence reads. The offsets live in device memory and must be
// valid (the caller checks them in the same task: varlen_attention_problem).
struct VarlenSequences {
  int64_t count = 0;
  int64_t q_rows = 0, k_rows = 0;     // rows of q and of k (paged: pages)
  const int32_t* q_starts = nullptr;  // [count + 1]
  const int32_t* k_starts = nullptr;  // [count + 1]; nullptr when paged
  const int32_t* k_used = nullptr;    // [count] or nullptr
};

struct AttentionGradients {
  HeadsView grad_out;                // read
  HeadsView grad_q, grad_k, grad_v;  // written, every element
  // [batch, heads, q_len, kv_len], contiguous, in the dtype; nullptr: not wanted.
  void* grad_bias = nullptr;
};

bool attention_supports(ScalarType dtype);

// What is wrong with a varlen call's offsets ("" if nothing): cumulative
// offsets from 0, non-decreasing, within q_rows and k_rows; seqused_k within
// its sequence's rows (paged: its pages_per_batch * page_size slots, with
// page numbers below k_rows).
std::string varlen_attention_problem(const AttentionArgs& args, const VarlenSequences& seqs);

void attention_forward(const AttentionArgs& args);
void attention_backward(const AttentionArgs& args, const AttentionGradients& grads);
void attention_forward_varlen(const AttentionArgs& args, const VarlenSequences& seqs);
void attention_backward_varlen(const AttentionArgs& args, const AttentionGradients& grads, const VarlenSequences& seqs);

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
