// FlashAttention's ops on mlu: _flash_attention_forward (padded batches and
// packed variable-length sequences; causal and sliding-window masks; grouped
// query heads; a paged key/value cache through block_table and seqused_k),
// its in-place form _flash_attention_forward_no_dropout_inplace, and
// _flash_attention_backward: what torch.nn.attention.varlen.varlen_attn and
// varlen_attn_out (the custom ops torch_attn::_varlen_attn[_out]) call. The
// work is the fused attention kernel's (mlu_kernels/attention.h).
//
// Note [FlashAttention's contract]
// The layouts and results are CUDA's flash attention's (flash_api.cpp):
//  - padded: q [batch, q_len, heads, dim], k and v [batch, kv_len, kv_heads,
//    dim], logsumexp [batch, heads, q_len];
//  - packed: q [total_q, heads, dim], k and v [total_k, kv_heads, dim] or, with
//    block_table [sequences, pages per sequence] (int32), a cache of pages
//    [pages, page_size, kv_heads, dim]; cum_seq_q / cum_seq_k [sequences + 1]
//    and seqused_k [sequences], int32 on the device; logsumexp [heads,
//    total_q]. A sequence has seqused_k[s] keys if given, else cum_seq_k[s+1]
//    - cum_seq_k[s].
// Masks are aligned to the bottom right (the last query meets the last key)
// and windowed as Note [Attention windows] says, after flash_api's
// normalisation: a window at least the key length (max_k when packed) is no
// window, and is_causal makes the right window 0. A query row that sees no
// key gives zeros and a logsumexp of +inf. Every tensor has a contiguous last
// dim (flash's check). rng_state is uint64 [2] (seed, offset) and `unused`
// a uint64 scalar, zero: dropout is refused (varlen_attn never asks for it;
// scaled_dot_product_attention's dropout runs on the overrideable op,
// AttentionOps.cpp), as are alibi_slopes. num_splits is accepted and has no
// effect: each sequence is computed on its own in a fixed order, so results
// are batch invariant whatever it says. The offsets, seqused_k and the block
// table are read on the device, in the kernel's task, and checked there
// first: a bad one is a device-side error naming it (Note [Errors belong to
// queues] in mlu_runtime/queue.h), and nothing is computed.
#include <cmath>
#include <limits>
#include <string>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/attention.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;
using OptionalTensor = const std::optional<at::Tensor>&;

namespace k = mlu::kernels;

bool given(OptionalTensor t) { return t.has_value() && t->defined(); }

// The packed layout's offsets, on the device (Note [FlashAttention's contract]).
struct Offsets {
  at::Tensor q_starts, k_starts, k_used, block_table;
  bool packed() const { return q_starts.defined(); }
};

void check_int32_vector(const char* op, const char* name, const at::Tensor& t, int64_t length, const at::Tensor& q) {
  TORCH_CHECK(t.scalar_type() == at::kInt, op, ": ", name, " must be int32, got ", t.scalar_type());
  TORCH_CHECK(t.device() == q.device(), op, ": ", name, " must be on ", q.device(), ", got ", t.device());
  TORCH_CHECK(t.dim() == 1 && t.size(0) == length, op, ": ", name, " must have shape [", length, "], got ", t.sizes());
}

Offsets offsets_of(const char* op, T query, OptionalTensor cum_seq_q, OptionalTensor cum_seq_k,
                   OptionalTensor seqused_k, OptionalTensor block_table) {
  Offsets o;
  if (!given(cum_seq_q)) {
    TORCH_CHECK(!given(cum_seq_k) && !given(seqused_k) && !given(block_table), op,
                ": cum_seq_k, seqused_k and block_table need cum_seq_q (packed sequences)");
    return o;
  }
  TORCH_CHECK(cum_seq_q->dim() == 1 && cum_seq_q->size(0) >= 1, op,
              ": cum_seq_q must be 1-D with one entry more than there are sequences, got ", cum_seq_q->sizes());
  const int64_t sequences = cum_seq_q->size(0) - 1;
  check_int32_vector(op, "cum_seq_q", *cum_seq_q, sequences + 1, query);
  o.q_starts = cum_seq_q->contiguous();
  if (given(cum_seq_k)) {
    check_int32_vector(op, "cum_seq_k", *cum_seq_k, sequences + 1, query);
    o.k_starts = cum_seq_k->contiguous();
  }
  if (given(seqused_k)) {
    check_int32_vector(op, "seqused_k", *seqused_k, sequences, query);
    o.k_used = seqused_k->contiguous();
  }
  if (given(block_table)) {
    TORCH_CHECK(block_table->scalar_type() == at::kInt && block_table->device() == query.device() &&
                    block_table->dim() == 2 && block_table->size(0) == sequences,
                op, ": block_table must be int32 [", sequences, ", pages per sequence] on ", query.device(), ", got ",
                block_table->scalar_type(), " ", block_table->sizes(), " on ", block_table->device());
    TORCH_CHECK(o.k_used.defined() || o.k_starts.defined(), op,
                ": a paged cache (block_table) needs seqused_k or cum_seq_k for the sequences' lengths");
    o.block_table = block_table->contiguous();
  } else {
    TORCH_CHECK(o.k_starts.defined(), op, ": packed sequences need cum_seq_k (or a paged cache: block_table)");
  }
  return o;
}

// [.., rows, heads, dim] as the kernel's [batch, heads, rows, dim] view.
k::HeadsView rows_heads_view(const at::Tensor& t) {
  void* data = const_cast<void*>(device_ptr<const void>(t));
  if (t.dim() == 3) return {data, 0, t.stride(1), t.stride(0)};
  return {data, t.stride(0), t.stride(2), t.stride(1)};
}

// flash_api's window normalisation (Note [FlashAttention's contract]).
void set_window(k::AttentionArgs& args, bool is_causal, std::optional<int64_t> left, std::optional<int64_t> right,
                int64_t key_length) {
  args.window_left = left.value_or(-1);
  args.window_right = right.value_or(-1);
  if (args.window_left >= key_length) args.window_left = -1;
  if (args.window_right >= key_length) args.window_right = -1;
  if (is_causal) args.window_right = 0;
  args.bottom_right = true;
  args.empty_row_logsumexp = std::numeric_limits<float>::infinity();
}

// The operands checked and described for the kernel (plain values: a task
// holds no tensor); `out` and `lse` are filled in by the caller.
struct FlashCall {
  k::AttentionArgs args{};
  k::VarlenSequences seqs{};
  bool packed = false;
};

FlashCall flash_call(const char* op, T query, T key, T value, const Offsets& offsets, int64_t max_k, double dropout_p,
                     bool is_causal, std::optional<double> scale, std::optional<int64_t> window_left,
                     std::optional<int64_t> window_right) {
  check_same_device(op, {query, key, value});
  TORCH_CHECK(dropout_p == 0, op, " on mlu computes without dropout (dropout_p = ", dropout_p,
              "); scaled_dot_product_attention's dropout runs on its fused mlu kernel");
  const at::ScalarType type = query.scalar_type();
  const auto kernel_type = kernel_dtype(type);
  TORCH_CHECK(kernel_type && k::attention_supports(*kernel_type), op,
              " on mlu supports float32, float16 and bfloat16, got ", type);
  TORCH_CHECK(key.scalar_type() == type && value.scalar_type() == type, op,
              ": query, key and value must have one dtype, got ", type, ", ", key.scalar_type(), " and ",
              value.scalar_type());
  for (const at::Tensor* t : {&query, &key, &value}) {
    TORCH_CHECK(t->dim() >= 1 && t->stride(-1) == 1, op, ": every input must have a contiguous last dimension");
  }
  const bool packed = offsets.packed(), paged = offsets.block_table.defined();
  const int64_t q_dims = packed ? 3 : 4, kv_dims = packed && !paged ? 3 : 4;
  TORCH_CHECK(query.dim() == q_dims && key.dim() == kv_dims && value.dim() == kv_dims, op, ": expected ",
              packed ? "packed" : "padded", " query of ", q_dims, " dims and key/value of ", kv_dims, ", got ",
              query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  const int64_t head_dim = query.size(-1), heads = query.size(-2), kv_heads = key.size(-2);
  TORCH_CHECK(key.sizes().slice(0, kv_dims - 1) == value.sizes().slice(0, kv_dims - 1) && key.size(-1) == head_dim, op,
              ": key ", key.sizes(), " and value ", value.sizes(), " do not fit query ", query.sizes());
  TORCH_CHECK(kv_heads > 0 && heads % kv_heads == 0, op, ": ", heads, " query heads are not a multiple of ", kv_heads,
              " key/value heads");
  FlashCall call;
  k::AttentionArgs& a = call.args;
  a.dtype = *kernel_type;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.value_dim = value.size(-1);
  a.q = rows_heads_view(query);
  a.k = rows_heads_view(key);
  a.v = rows_heads_view(value);
  a.scale = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  if (packed) {
    a.batch = 1;
    call.packed = true;
    call.seqs.count = offsets.q_starts.size(0) - 1;
    call.seqs.q_rows = query.size(0);
    call.seqs.k_rows = key.size(0);
    call.seqs.q_starts = device_ptr<const int32_t>(offsets.q_starts);
    call.seqs.k_starts = device_ptr<const int32_t>(offsets.k_starts);
    call.seqs.k_used = device_ptr<const int32_t>(offsets.k_used);
    a.lse_head_stride = query.size(0);
    if (paged) {
      a.pages = device_ptr<const int32_t>(offsets.block_table);
      a.page_size = key.size(1);
      a.pages_per_batch = offsets.block_table.size(1);
      TORCH_CHECK(a.page_size > 0, op, ": the paged cache's pages must hold at least one row");
    }
  } else {
    TORCH_CHECK(key.size(0) == query.size(0), op, ": query has batch ", query.size(0), ", key ", key.size(0));
    a.batch = query.size(0);
    a.q_len = query.size(1);
    a.kv_len = key.size(1);
  }
  set_window(a, is_causal, window_left, window_right, packed ? max_k : a.kv_len);
  return call;
}

at::Tensor lse_like(T query, bool packed) {
  const at::TensorOptions options = query.options().dtype(at::kFloat);
  if (packed) return at::empty({query.size(1), query.size(0)}, options);
  return at::empty({query.size(0), query.size(2), query.size(1)}, options);
}

// Runs the forward into `out` and `lse` on query's stream.
void launch_forward(FlashCall call, const at::Tensor& out, const at::Tensor& lse) {
  call.args.out = rows_heads_view(out);
  call.args.logsumexp = device_ptr<float>(lse);
  if (out.numel() == 0) return;
  launch_kernel(out.device().index(), "_flash_attention_forward", [call](mlu::TaskContext& context) {
    if (!call.packed) {
      k::attention_forward(call.args);
      return;
    }
    const std::string problem = k::varlen_attention_problem(call.args, call.seqs);
    if (!problem.empty()) {
      context.fail("_flash_attention_forward: " + problem);
      return;
    }
    k::attention_forward_varlen(call.args, call.seqs);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> flash_attention_forward_mlu(
    T query, T key, T value, OptionalTensor cum_seq_q, OptionalTensor cum_seq_k, int64_t /*max_q*/, int64_t max_k,
    double dropout_p, bool is_causal, bool return_debug_mask, std::optional<double> scale,
    std::optional<int64_t> window_size_left, std::optional<int64_t> window_size_right, OptionalTensor seqused_k,
    OptionalTensor alibi_slopes, OptionalTensor block_table, std::optional<int64_t> /*num_splits*/) {
  constexpr const char* op = "_flash_attention_forward";
  TORCH_CHECK(!given(alibi_slopes), op, " on mlu does not take alibi_slopes");
  TORCH_CHECK(!return_debug_mask, op, " on mlu has no debug mask to return: it computes without dropout");
  const Offsets offsets = offsets_of(op, query, cum_seq_q, cum_seq_k, seqused_k, block_table);
  FlashCall call = flash_call(op, query, key, value, offsets, max_k, dropout_p, is_causal, scale, window_size_left,
                              window_size_right);
  c10::DeviceGuard guard(query.device());
  at::Tensor out = at::empty_like(query);
  at::Tensor lse = lse_like(query, offsets.packed());
  launch_forward(call, out, lse);
  const at::TensorOptions state = query.options().dtype(at::kUInt64);
  return {out, lse, at::zeros({2}, state), at::zeros({}, state), at::empty({0}, query.options())};
}

at::Tensor flash_attention_forward_inplace_mlu(const at::Tensor& out, T query, T key, T value, OptionalTensor cum_seq_q,
                                               OptionalTensor cum_seq_k, int64_t /*max_q*/, int64_t max_k,
                                               double dropout_p, bool is_causal, bool return_debug_mask,
                                               std::optional<double> scale, std::optional<int64_t> window_size_left,
                                               std::optional<int64_t> window_size_right, OptionalTensor seqused_k,
                                               OptionalTensor alibi_slopes, OptionalTensor block_table,
                                               std::optional<int64_t> /*num_splits*/) {
  constexpr const char* op = "_flash_attention_forward_no_dropout_inplace";
  TORCH_CHECK(!given(alibi_slopes), op, " on mlu does not take alibi_slopes");
  TORCH_CHECK(!return_debug_mask, op, " has no debug mask to return");
  const Offsets offsets = offsets_of(op, query, cum_seq_q, cum_seq_k, seqused_k, block_table);
  FlashCall call = flash_call(op, query, key, value, offsets, max_k, dropout_p, is_causal, scale, window_size_left,
                              window_size_right);
  check_same_device(op, {query, out});
  TORCH_CHECK(out.sizes() == query.sizes() && out.scalar_type() == query.scalar_type() && out.stride(-1) == 1, op,
              ": out must be a ", query.scalar_type(), " tensor of the query's shape ", query.sizes(),
              " with a contiguous last dimension, got ", out.scalar_type(), " ", out.sizes());
  c10::DeviceGuard guard(query.device());
  at::Tensor lse = lse_like(query, offsets.packed());
  launch_forward(call, out, lse);
  return lse;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_backward_mlu(
    T grad_out, T query, T key, T value, T out, T logsumexp, T cum_seq_q, T cum_seq_k, int64_t /*max_q*/, int64_t max_k,
    double dropout_p, bool is_causal, T /*rng_state*/, T /*unused*/, std::optional<double> scale,
    std::optional<int64_t> window_size_left, std::optional<int64_t> window_size_right) {
  constexpr const char* op = "_flash_attention_backward";
  const Offsets offsets = offsets_of(op, query, cum_seq_q, cum_seq_k, std::nullopt, std::nullopt);
  FlashCall call = flash_call(op, query, key, value, offsets, max_k, dropout_p, is_causal, scale, window_size_left,
                              window_size_right);
  check_same_device(op, {query, grad_out, out, logsumexp});
  for (const at::Tensor* t : {&grad_out, &out}) {
    TORCH_CHECK(t->sizes() == query.sizes() && t->scalar_type() == query.scalar_type() && t->stride(-1) == 1, op,
                ": grad_out and out must be ", query.scalar_type(), " tensors of the query's shape ", query.sizes(),
                " with a contiguous last dimension");
  }
  const at::Tensor lse = logsumexp.contiguous();
  TORCH_CHECK(lse.scalar_type() == at::kFloat && lse.sizes() == lse_like(query, offsets.packed()).sizes(), op,
              ": logsumexp must be the forward's float32 ", lse_like(query, offsets.packed()).sizes(), ", got ",
              lse.scalar_type(), " ", lse.sizes());
  c10::DeviceGuard guard(query.device());
  call.args.out = rows_heads_view(out);
  call.args.logsumexp = const_cast<float*>(device_ptr<const float>(lse));
  // Laid out like their inputs (the meta kernel's empty_like).
  at::Tensor grad_q = at::empty_like(query), grad_k = at::empty_like(key), grad_v = at::empty_like(value);
  for (const at::Tensor* t : {&grad_q, &grad_k, &grad_v}) {
    TORCH_CHECK(t->dim() == 0 || t->stride(-1) == 1, op, ": the gradients need a contiguous last dimension");
  }
  const k::AttentionGradients grads{rows_heads_view(grad_out), rows_heads_view(grad_q), rows_heads_view(grad_k),
                                    rows_heads_view(grad_v), nullptr};
  if (query.numel() == 0 && key.numel() == 0) return {grad_q, grad_k, grad_v};
  launch_kernel(query.device().index(), op, [call, grads](mlu::TaskContext& context) {
    if (!call.packed) {
      k::attention_backward(call.args, grads);
      return;
    }
    const std::string problem = k::varlen_attention_problem(call.args, call.seqs);
    if (!problem.empty()) {
      context.fail(std::string("_flash_attention_backward: ") + problem);
      return;
    }
    k::attention_backward_varlen(call.args, grads, call.seqs);
  });
  return {grad_q, grad_k, grad_v};
}

}  // namespace
}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/FlashAttentionOps.inc"
