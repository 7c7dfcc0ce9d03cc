// scaled_dot_product_attention on mlu through the fused kernel
// (mlu_kernels/attention.h).
//
// Note [SDPA on PrivateUse1]
// at::scaled_dot_product_attention asks _fused_sdp_choice_stub for the
// device's backend. Ours answers "overrideable" where the CPU would run its
// own fused kernel (4-D, rows of unit stride, equal head dims, the CPU's mask
// shapes: cpu_takes_fused_kernel), so the results and their layouts are the
// CPU's either way (the gradients' layouts: Note [SDPA layouts are the meta
// kernel's]), and the fused kernel takes
// the inputs (float32/float16/bfloat16, broadcastable mask, grouped heads
// only with enable_gqa), and the user has not disabled that backend
// (torch.nn.attention.sdpa_kernel); otherwise "math", PyTorch's composite,
// which runs on our matmul/softmax and raises PyTorch's own errors for bad
// arguments. With dropout the CPU always takes the math path; mlu keeps its
// fused kernel there (training speed; the draws differ from the CPU's
// anyway). A mask together with is_causal applies both, as the
// CPU does (the math path would refuse). PyTorch then calls
// _scaled_dot_product_fused_attention_overrideable, with a boolean mask
// already turned into an additive one (-inf where False); autograd pairs it
// with ..._overrideable_backward (derivatives.yaml), which gets back the
// output, the log-sum-exp and the Philox (seed, offset) of the dropout.
// enable_gqa is not passed on: the heads' ratio says it.
//
// Note [SDPA layouts are the meta kernel's]
// PyTorch's own shape functions for the overrideable ops
// (torch/_meta_registrations.py; the fake tensors torch.compile, torch.export
// and DTensor trace with) lay the output out like the query
// (alloc_with_matching_layout) and every gradient like its input (empty_like
// of query, key, value and attn_bias). A compiled graph relies on that
// (Inductor asserts the strides of a fallback op's outputs, and views them by
// those declarations), so mlu keeps to them exactly. The CPU's fused (flash)
// backward returns [batch, rows, heads, cols] gradients whatever its inputs'
// layout, its math path contiguous ones: the values are the CPU's, the
// gradients' strides deliberately not (a leaf's .grad is laid out like the
// leaf either way: AccumulateGrad's layout contract).
#include <algorithm>

#include <cmath>
#include <numeric>

#include <ATen/TensorOperators.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <mlu_kernels/attention.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUGeneratorImpl.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

namespace k = mlu::kernels;

// Whether the CPU runs these inputs on its fused (flash) kernel rather than
// the math composite: use_flash_attention_cpp's shape and stride gates
// (sdp_utils_cpp.cpp) but the dropout one (see Note [SDPA on PrivateUse1]).
bool cpu_takes_fused_kernel(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                            const std::optional<at::Tensor>& attn_mask, bool enable_gqa) {
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4) return false;
  if (query.sym_size(-1) != key.sym_size(-1) || query.sym_size(-1) != value.sym_size(-1)) return false;
  if (query.sym_size(-2) == 0 || key.sym_size(-2) == 0) return false;
  for (const at::Tensor* t : {&query, &key, &value}) {
    if (t->sym_stride(-1) != 1) return false;
  }
  const c10::SymInt heads = query.sym_size(1), kv_heads = key.sym_size(1);
  if (key.sym_size(0) != query.sym_size(0) || value.sym_size(0) != query.sym_size(0) || value.sym_size(1) != kv_heads ||
      (heads != kv_heads && !(enable_gqa && heads % kv_heads == 0))) {
    return false;
  }
  if (!attn_mask.has_value() || !attn_mask->defined()) return true;
  const at::Tensor& mask = *attn_mask;
  if (mask.requires_grad()) return false;
  if ((mask.sym_size(-2) != query.sym_size(2) && mask.sym_size(-2) != 1) ||
      (mask.sym_size(-1) != key.sym_size(2) && mask.sym_size(-1) != 1)) {
    return false;
  }
  return mask.dim() == 2 || (mask.dim() == 4 && (mask.sym_size(0) == 1 || mask.sym_size(0) == query.sym_size(0)) &&
                             (mask.sym_size(1) == 1 || mask.sym_size(1) == heads));
}

int64_t choose_sdp_backend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool /*is_causal*/,
                           std::optional<double> /*scale*/, bool enable_gqa) {
  const auto math = static_cast<int64_t>(at::SDPBackend::math);
  if (!at::globalContext().userEnabledOverrideableSDP()) return math;
  if (query.is_nested() || key.is_nested() || value.is_nested()) return math;
  if (dropout_p == 0 && !cpu_takes_fused_kernel(query, key, value, attn_mask, enable_gqa)) return math;
  const int64_t dims = query.dim();
  if ((dims != 3 && dims != 4) || key.dim() != dims || value.dim() != dims) return math;
  const at::ScalarType type = query.scalar_type();
  const auto kernel_type = kernel_dtype(type);
  if (!kernel_type || !k::attention_supports(*kernel_type) || key.scalar_type() != type ||
      value.scalar_type() != type) {
    return math;
  }
  if (dims == 4 && (key.sym_size(0) != query.sym_size(0) || value.sym_size(0) != query.sym_size(0))) return math;
  if (key.sym_size(-1) != query.sym_size(-1) || value.sym_size(-2) != key.sym_size(-2) ||
      value.sym_size(-3) != key.sym_size(-3)) {
    return math;
  }
  const c10::SymInt heads = query.sym_size(-3), kv_heads = key.sym_size(-3);
  if (heads != kv_heads && (!enable_gqa || kv_heads == 0 || heads % kv_heads != 0)) return math;
  if (attn_mask.has_value() && attn_mask->defined()) {
    const at::Tensor& mask = *attn_mask;
    if (mask.is_nested() || (mask.scalar_type() != at::kBool && mask.scalar_type() != type)) return math;
    std::vector<c10::SymInt> scores(query.sym_sizes().begin(), query.sym_sizes().end());
    scores.back() = key.sym_size(-2);
    if (!at::is_expandable_to(mask.sym_sizes(), scores)) return math;
  }
  return static_cast<int64_t>(at::SDPBackend::overrideable);
}

void check_operands(const at::Tensor& query, std::initializer_list<const at::Tensor*> others) {
  for (const at::Tensor* t : others) {
    if (!t->defined()) continue;
    TORCH_CHECK(t->device() == query.device(), "scaled_dot_product_attention: expected all tensors on ", query.device(),
                ", got one on ", t->device());
    TORCH_CHECK(t->scalar_type() == query.scalar_type(), "scaled_dot_product_attention: expected all tensors to be ",
                query.scalar_type(), ", got ", t->scalar_type());
  }
  const auto type = kernel_dtype(query.scalar_type());
  TORCH_CHECK(type && k::attention_supports(*type),
              "the fused scaled_dot_product_attention on mlu supports float32, float16 and bfloat16, got ",
              query.scalar_type());
  TORCH_CHECK(query.dim() == 3 || query.dim() == 4,
              "the fused scaled_dot_product_attention on mlu expects 3-D or 4-D query, key and value, got ",
              query.dim(), "-D");
}

// t as [batch, heads, rows, cols] with contiguous rows (3-D: batch 1).
at::Tensor as_heads(const at::Tensor& t) {
  at::Tensor h = t.dim() == 3 ? t.unsqueeze(0) : t;
  return h.stride(-1) == 1 || h.size(-1) <= 1 ? h : h.contiguous();
}

k::HeadsView heads_view(const at::Tensor& t) {
  return {const_cast<void*>(device_ptr<const void>(t)), t.stride(0), t.stride(1), t.stride(2)};
}

// An uninitialised tensor of `sizes` laid out as PyTorch's meta kernel lays
// out the output (alloc_with_matching_layout): like `like` where the sizes
// agree, else with its dims in the order of like's strides (ties in dim
// order): an output of a head-interleaved [batch, rows, heads, cols] query
// comes back interleaved.
at::Tensor empty_matching_layout(const at::Tensor& like, at::IntArrayRef sizes) {
  if (like.sizes() == sizes) return at::empty_like(like);
  std::vector<int64_t> order(static_cast<size_t>(like.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  std::vector<int64_t> permuted, inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    permuted.push_back(sizes[static_cast<size_t>(order[i])]);
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  }
  return at::empty(permuted, like.options()).permute(inverse);
}

// Where the kernel writes a [batch, heads, rows, cols] result `t` laid out as
// declared (3-D: batch 1): t itself where its rows have unit stride, else a
// contiguous scratch that finish_into copies into t.
struct KernelTarget {
  at::Tensor result, heads;
};

KernelTarget kernel_target(const at::Tensor& t) {
  const at::Tensor h = t.dim() == 3 ? t.unsqueeze(0) : t;
  return {t, h.stride(-1) == 1 || h.size(-1) <= 1 ? h : at::empty(h.sizes(), h.options())};
}

at::Tensor finish_into(const KernelTarget& target) {
  if (!target.heads.is_alias_of(target.result)) {
    target.result.copy_(target.result.dim() == 3 ? target.heads.squeeze(0) : target.heads);
  }
  return target.result;
}

k::AttentionArgs attention_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                                double dropout_p, bool is_causal, std::optional<double> scale) {
  k::AttentionArgs a{};
  a.dtype = *kernel_dtype(q.scalar_type());
  a.batch = q.size(0);
  a.heads = q.size(1);
  a.kv_heads = k.size(1);
  a.q_len = q.size(2);
  a.kv_len = k.size(2);
  a.head_dim = q.size(3);
  a.value_dim = v.size(3);
  TORCH_CHECK(k.size(0) == a.batch && v.size(0) == a.batch && v.size(1) == a.kv_heads && v.size(2) == a.kv_len &&
                  k.size(3) == a.head_dim,
              "scaled_dot_product_attention: query ", q.sizes(), ", key ", k.sizes(), " and value ", v.sizes(),
              " do not fit together");
  TORCH_CHECK(a.kv_heads > 0 ? a.heads % a.kv_heads == 0 : a.heads == 0, "scaled_dot_product_attention: ", a.heads,
              " query heads are not a multiple of ", a.kv_heads, " key/value heads");
  a.q = heads_view(q);
  a.k = heads_view(k);
  a.v = heads_view(v);
  if (bias.defined()) {
    a.bias = {device_ptr<const void>(bias), bias.stride(0), bias.stride(1), bias.stride(2), bias.stride(3)};
  }
  a.scale = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  a.causal = is_causal;
  a.dropout_p = dropout_p;
  return a;
}

// The bias as [batch, heads, q_len, kv_len] (broadcast dims stride 0).
at::Tensor bias_as_heads(const std::optional<at::Tensor>& bias, const at::Tensor& q4, int64_t kv_len, bool three_d) {
  if (!bias.has_value() || !bias->defined()) return {};
  if (three_d) return bias->expand({q4.size(1), q4.size(2), kv_len}).unsqueeze(0);
  return bias->expand({q4.size(0), q4.size(1), q4.size(2), kv_len});
}

at::Tensor philox_scalar(uint64_t value) {
  return at::scalar_tensor(static_cast<int64_t>(value), at::TensorOptions().dtype(at::kLong));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
sdpa_fused_mlu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
               const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal, bool return_debug_mask,
               std::optional<double> scale) {
  const at::Tensor bias_given = attn_bias.has_value() ? *attn_bias : at::Tensor();
  check_operands(query, {&key, &value, &bias_given});
  TORCH_CHECK(dropout_p >= 0 && dropout_p <= 1, "scaled_dot_product_attention: dropout_p must be in [0, 1], got ",
              dropout_p);
  c10::DeviceGuard guard(query.device());
  const bool three_d = query.dim() == 3;
  const at::Tensor q = as_heads(query), k = as_heads(key), v = as_heads(value);
  const at::Tensor bias = bias_as_heads(attn_bias, q, k.size(2), three_d);
  k::AttentionArgs args = attention_args(q, k, v, bias, dropout_p, is_causal, scale);
  std::vector<int64_t> out_sizes = query.sizes().vec();
  out_sizes.back() = args.value_dim;
  const KernelTarget out = kernel_target(empty_matching_layout(query, out_sizes));
  at::Tensor lse = at::empty({args.batch, args.heads, args.q_len}, q.options().dtype(at::kFloat));
  args.out = heads_view(out.heads);
  args.logsumexp = device_ptr<float>(lse);
  PhiloxDraw draw;
  if (dropout_p > 0) draw = next_philox_draw(std::nullopt, query.device().index());
  // Inside a graph capture the seed and offset exist only when the kernel runs (Note [Graph-safe random
  // numbers]): the kernel writes them into device scalars, which the backward reads when it runs.
  at::Tensor seed_out, offset_out;
  int64_t* seed_slot = nullptr;
  int64_t* offset_slot = nullptr;
  if (draw.graph_arguments != nullptr) {
    seed_out = at::empty({}, query.options().dtype(at::kLong));
    offset_out = at::empty({}, query.options().dtype(at::kLong));
    seed_slot = device_ptr<int64_t>(seed_out);
    offset_slot = device_ptr<int64_t>(offset_out);
  }
  const c10::DeviceIndex device = query.device().index();
  launch_kernel(device, "scaled_dot_product_attention", [args, draw, seed_slot, offset_slot] {
    k::AttentionArgs resolved = args;
    const PhiloxDraw d = draw.resolved();
    resolved.seed = d.seed;
    resolved.offset = d.offset;
    if (seed_slot != nullptr) {
      *seed_slot = static_cast<int64_t>(d.seed);
      *offset_slot = static_cast<int64_t>(d.offset);
    }
    k::attention_forward(resolved);
  });
  at::Tensor debug_mask;
  if (return_debug_mask && dropout_p > 0) {
    debug_mask = at::empty({args.batch, args.heads, args.q_len, args.kv_len}, q.options().dtype(at::kBool));
    bool* mask = device_ptr<bool>(debug_mask);
    const int64_t rows = args.batch * args.heads * args.q_len, keys = args.kv_len;
    launch_kernel(device, "scaled_dot_product_attention dropout mask", [=] {
      const PhiloxDraw d = draw.resolved();
      k::attention_dropout_mask(d.seed, d.offset, dropout_p, rows, keys, mask);
    });
    if (three_d) debug_mask = debug_mask.squeeze(0);
  }
  return {finish_into(out),
          lse,
          at::Tensor(),
          at::Tensor(),
          c10::SymInt(args.q_len),
          c10::SymInt(args.kv_len),
          seed_out.defined() ? seed_out : philox_scalar(draw.seed),
          offset_out.defined() ? offset_out : philox_scalar(draw.offset),
          debug_mask};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpa_fused_backward_mlu(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/, int64_t /*max_q*/,
    int64_t /*max_k*/, double dropout_p, bool is_causal, const at::Tensor& philox_seed, const at::Tensor& philox_offset,
    std::optional<double> scale) {
  check_operands(query, {&key, &value, &attn_bias, &grad_out, &out});
  TORCH_CHECK(logsumexp.device() == query.device() && logsumexp.scalar_type() == at::kFloat,
              "scaled_dot_product_attention backward: expected a float logsumexp on ", query.device());
  c10::DeviceGuard guard(query.device());
  const bool three_d = query.dim() == 3;
  const at::Tensor q = as_heads(query), k = as_heads(key), v = as_heads(value);
  const at::Tensor bias = bias_as_heads(attn_bias, q, k.size(2), three_d);
  k::AttentionArgs args = attention_args(q, k, v, bias, dropout_p, is_causal, scale);
  const at::Tensor o = as_heads(out), lse = logsumexp.contiguous();
  args.out = heads_view(o);
  args.logsumexp = const_cast<float*>(device_ptr<const float>(lse));
  // The forward's seed and offset: host scalars, or device scalars its kernel wrote (inside a graph capture).
  const int64_t* seed_slot = nullptr;
  const int64_t* offset_slot = nullptr;
  if (dropout_p > 0 && philox_seed.is_cpu()) {
    args.seed = static_cast<uint64_t>(philox_seed.item<int64_t>());
    args.offset = static_cast<uint64_t>(philox_offset.item<int64_t>());
  } else if (dropout_p > 0) {
    TORCH_CHECK(philox_seed.device() == query.device() && philox_offset.device() == query.device() &&
                    philox_seed.scalar_type() == at::kLong && philox_offset.scalar_type() == at::kLong,
                "scaled_dot_product_attention backward: philox_seed and philox_offset must be int64 scalars on the "
                "CPU or on ",
                query.device());
    seed_slot = device_ptr<const int64_t>(philox_seed);
    offset_slot = device_ptr<const int64_t>(philox_offset);
  }
  // Each gradient laid out like its input, as PyTorch's meta kernel declares (Note [SDPA layouts are the meta
  // kernel's]).
  const KernelTarget grad_q = kernel_target(at::empty_like(query)), grad_k = kernel_target(at::empty_like(key)),
                     grad_v = kernel_target(at::empty_like(value));
  at::Tensor grad_bias;
  if (grad_input_mask[3] && bias.defined()) {
    grad_bias = at::empty({args.batch, args.heads, args.q_len, args.kv_len}, q.options());
  }
  const at::Tensor dout = as_heads(grad_out);
  k::AttentionGradients grads{heads_view(dout), heads_view(grad_q.heads), heads_view(grad_k.heads),
                              heads_view(grad_v.heads), device_ptr(grad_bias)};
  launch_kernel(query.device().index(), "scaled_dot_product_attention backward", [args, grads, seed_slot, offset_slot] {
    k::AttentionArgs resolved = args;
    if (seed_slot != nullptr) {
      resolved.seed = static_cast<uint64_t>(*seed_slot);
      resolved.offset = static_cast<uint64_t>(*offset_slot);
    }
    k::attention_backward(resolved, grads);
  });
  if (grad_bias.defined()) {
    grad_bias = at::sum_to(three_d ? grad_bias.squeeze(0) : grad_bias, attn_bias.sizes());
    at::Tensor declared = at::empty_like(attn_bias);
    if (declared.strides() != grad_bias.strides()) grad_bias = declared.copy_(grad_bias);
  }
  return {finish_into(grad_q), finish_into(grad_k), finish_into(grad_v), grad_bias};
}

// ---- _nested_tensor_from_mask_left_aligned ----

// Whether every row of mask [N, L] is some Trues followed by only Falses
// (TransformerEncoder's fast path asks before packing a padded batch). The
// answer is a host bool: it waits for the queue, as the CPU's .item() would.
bool mask_left_aligned(T /*t*/, T mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of type bool");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  if (mask.size(1) <= 1) return true;
  const at::Tensor later = mask.narrow(1, 1, mask.size(1) - 1), earlier = mask.narrow(1, 0, mask.size(1) - 1);
  return !at::logical_and(later, at::logical_not(earlier)).any().item<bool>();
}

}  // namespace

}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_mlu::choose_sdp_backend)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/AttentionOps.inc"
