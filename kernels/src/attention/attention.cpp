#include "mlu_kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/gemm.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "mlu_kernels/philox.h"
#include "attention_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

const detail::AttentionRowFns& row_fns() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT(attention_rows)();
}

// Note [Online softmax]
// A block of kQueryRows query rows meets the keys kKeyColumns at a time. For
// each block of keys the scores S = scale Q K^T (+ bias, causal mask) are a
// kQueryRows x kKeyColumns float tile; each row keeps its running maximum m
// and denominator l, and the unnormalised output O:
//   m' = max(m, max_j s_j),  p_j = exp(s_j - m'),  a = exp(m - m'),
//   l' = a l + sum_j p_j,    O' = a O + p V_block
// and at the end out = O / l, logsumexp = m + log l. Only the tile, O and
// the two row vectors live in memory, whatever the sequence length. Under
// causal masking, key blocks past a query block's last row are never
// visited. The backward op (FlashAttention-2) walks the same tiles per
// (batch, key/value head): p = exp(s - logsumexp) directly, dV += p^T dO,
// dS = p (dO V^T - rowsum(dO o out)), dQ += scale dS K, dK += scale dS^T Q,
// with dK and dV accumulated in float over the whole key sequence of the
// head and dQ over the key blocks of one query block.
constexpr int64_t kQueryRows = 64;
constexpr int64_t kKeyColumns = 256;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

char* element(const HeadsView& view, ScalarType type, int64_t b, int64_t h, int64_t row) {
  return static_cast<char*>(view.data) +
         (b * view.batch_stride + h * view.head_stride + row * view.row_stride) *
             static_cast<int64_t>(element_size(type));
}

// Rows of a view as float: the data itself for Float32, else a converted copy in `buffer`.
struct FloatRows {
  const float* data;
  int64_t stride;
};

FloatRows as_float(ScalarType type, const char* rows_begin, int64_t row_stride, int64_t rows, int64_t cols,
                   std::vector<float>& buffer) {
  if (type == ScalarType::Float32) return {reinterpret_cast<const float*>(rows_begin), row_stride};
  buffer.resize(static_cast<size_t>(rows * cols));
  detail::dispatch_floating(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = reinterpret_cast<const S*>(rows_begin);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) buffer[r * cols + c] = static_cast<float>(detail::widen(src[r * row_stride + c]));
    }
  });
  return {buffer.data(), cols};
}

// Rows [0, rows) of a view, transposed to float [cols][ld]: a GEMM operand
// read along keys (K^T for the scores, V^T for dP) then has contiguous rows,
// packed once per task instead of gathered per tile. ld is padded past a
// multiple of 16 floats so that successive rows do not alias in the cache.
const float* transposed(ScalarType type, const char* rows_begin, int64_t row_stride, int64_t rows, int64_t cols,
                        std::vector<float>& buffer, int64_t& ld) {
  constexpr int64_t kTile = 16;
  ld = (rows + kTile - 1) / kTile * kTile + kTile;
  buffer.resize(static_cast<size_t>(cols * ld));
  detail::dispatch_floating(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = reinterpret_cast<const S*>(rows_begin);
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c = 0; c < cols; ++c) {
        float* out = buffer.data() + c * ld;
        for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<float>(detail::widen(src[r * row_stride + c]));
      }
    }
  });
  return buffer.data();
}

// dst row r = scale[r] * src row r, rounded to `type` (scale nullptr: 1).
void store_rows(ScalarType type, char* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t rows,
                int64_t cols, const float* scale = nullptr) {
  detail::dispatch_floating(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<S, double>) {
      S* out = reinterpret_cast<S*>(dst);
      for (int64_t r = 0; r < rows; ++r) {
        const float a = scale ? scale[r] : 1.0f;
        for (int64_t c = 0; c < cols; ++c) out[r * dst_stride + c] = detail::convert<S>(a * src[r * src_stride + c]);
      }
    }
  });
}

// C (float, row-major, ldc) = alpha A B + beta C with float views of A and B.
void gemm_float(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs, int64_t a_cs,
                const float* b, int64_t b_rs, int64_t b_cs, float beta, float* c, int64_t ldc) {
  GemmArgs g{};
  g.dtype = ScalarType::Float32;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  g.a = {const_cast<float*>(a), a_rs, a_cs};
  g.b = {const_cast<float*>(b), b_rs, b_cs};
  g.c = {c, ldc, 1};
  gemm(g);
}

// Keys a query row may see in a tile starting at key j0 with `cols` keys.
int64_t visible_keys(const AttentionArgs& args, int64_t i, int64_t j0, int64_t cols) {
  return args.causal ? std::clamp<int64_t>(i - j0 + 1, 0, cols) : cols;
}

// Keys a query block ending at row last (inclusive) reaches.
int64_t keys_reached(const AttentionArgs& args, int64_t last) {
  return args.causal ? std::min(args.kv_len, last + 1) : args.kv_len;
}

// s[j] += bias(b, h, i, j0 + j) for j < n.
void add_bias(const AttentionArgs& args, int64_t b, int64_t h, int64_t i, int64_t j0, float* s, int64_t n) {
  const BiasView& bias = args.bias;
  if (bias.data == nullptr) return;
  detail::dispatch_floating(args.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* row = static_cast<const S*>(bias.data) + b * bias.batch_stride + h * bias.head_stride +
                   i * bias.row_stride + j0 * bias.col_stride;
    if (bias.col_stride == 1) {  // the usual layout: a loop the compiler vectorises
      for (int64_t j = 0; j < n; ++j) s[j] += static_cast<float>(detail::widen(row[j]));
      return;
    }
    for (int64_t j = 0; j < n; ++j) s[j] += static_cast<float>(detail::widen(row[j * bias.col_stride]));
  });
}

// The dropout factor of each key of a score row: 1 / (1 - p) kept, 0 dropped.
void dropout_factors(const AttentionArgs& args, int64_t row, int64_t j0, int64_t n, float* factor) {
  const float kept = static_cast<float>(1.0 / (1.0 - args.dropout_p));
  for (int64_t j = 0; j < n; ++j) {
    factor[j] = attention_dropout_keep(args.seed, args.offset, args.dropout_p, args.kv_len, row, j0 + j) ? kept : 0.0f;
  }
}

struct ForwardScratch {
  std::vector<float> q, keys_t, v, scores, out, factors;
};

// Query rows [i0, i0 + rows) of head (b, h) against keys_t (K^T, ld ldk) and
// v (Note [Online softmax]).
void forward_block(const AttentionArgs& args, const detail::AttentionRowFns& fns, ForwardScratch& w, int64_t b,
                   int64_t h, int64_t i0, const float* keys_t, int64_t ldk, const FloatRows& v) {
  const int64_t rows = std::min(kQueryRows, args.q_len - i0), d = args.head_dim, dv = args.value_dim;
  const FloatRows q = as_float(args.dtype, element(args.q, args.dtype, b, h, i0), args.q.row_stride, rows, d, w.q);
  w.scores.resize(static_cast<size_t>(rows * kKeyColumns));
  w.out.assign(static_cast<size_t>(rows * dv), 0.0f);
  w.factors.resize(static_cast<size_t>(kKeyColumns));
  float max[kQueryRows], sum[kQueryRows];
  std::fill_n(max, rows, kNegInf);
  std::fill_n(sum, rows, 0.0f);
  const int64_t key_end = keys_reached(args, i0 + rows - 1);
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyColumns) {
    const int64_t cols = std::min(kKeyColumns, key_end - j0);
    float* scores = w.scores.data();
    gemm_float(rows, cols, d, static_cast<float>(args.scale), q.data, q.stride, 1, keys_t + j0, ldk, 1, 0.0f, scores,
               kKeyColumns);
    float block_max[kQueryRows], shift[kQueryRows], block_sum[kQueryRows];
    if (!args.causal) {  // every row sees all `cols` keys: rows together (Note [Score rows together])
      for (int64_t r = 0; r < rows; ++r) add_bias(args, b, h, i0 + r, j0, scores + r * kKeyColumns, cols);
      fns.max_rows(scores, kKeyColumns, rows, cols, block_max);
      for (int64_t r = 0; r < rows; ++r) {
        block_max[r] = (block_max[r] != block_max[r] || block_max[r] > max[r]) ? block_max[r] : max[r];
        shift[r] = block_max[r] == kNegInf ? 0.0f : block_max[r];  // all masked: exp(-inf - 0) writes the 0s
      }
      fns.exp_sum_rows(scores, kKeyColumns, rows, cols, shift, block_sum);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      float* s = scores + r * kKeyColumns;
      const int64_t n = visible_keys(args, i, j0, cols);
      if (args.causal) {
        add_bias(args, b, h, i, j0, s, n);
        const float row_max = fns.max(s, n);
        block_max[r] = (row_max != row_max || row_max > max[r]) ? row_max : max[r];
        std::fill(s + n, s + cols, 0.0f);
        if (block_max[r] == kNegInf) {  // every key so far masked
          std::fill_n(s, n, 0.0f);
          continue;
        }
        block_sum[r] = fns.exp_sum(s, n, block_max[r]);
      }
      const float new_max = block_max[r];
      if (new_max == kNegInf) continue;  // every key so far masked; the row holds 0s
      const float rescale = std::exp(max[r] - new_max);
      sum[r] = sum[r] * rescale + block_sum[r];
      max[r] = new_max;
      if (rescale != 1.0f) {
        float* o = w.out.data() + r * dv;
        for (int64_t c = 0; c < dv; ++c) o[c] *= rescale;
      }
      if (args.dropout_p > 0) {
        dropout_factors(args, (b * args.heads + h) * args.q_len + i, j0, n, w.factors.data());
        for (int64_t j = 0; j < n; ++j) s[j] *= w.factors[j];
      }
    }
    gemm_float(rows, dv, cols, 1.0f, scores, kKeyColumns, 1, v.data + j0 * v.stride, v.stride, 1, 1.0f, w.out.data(),
               dv);
  }
  float inverse[kQueryRows];
  float* lse = args.logsumexp + (b * args.heads + h) * args.q_len + i0;
  for (int64_t r = 0; r < rows; ++r) {
    const bool masked = sum[r] == 0.0f;  // NaN scores keep NaN
    inverse[r] = masked ? 0.0f : 1.0f / sum[r];
    lse[r] = masked ? kNegInf : max[r] + std::log(sum[r]);
  }
  store_rows(args.dtype, element(args.out, args.dtype, b, h, i0), args.out.row_stride, w.out.data(), dv, rows, dv,
             inverse);
}

// Query blocks [block_begin, block_end) of head (b, h): K^T and V (as float)
// once, then block by block.
void forward_blocks(const AttentionArgs& args, const detail::AttentionRowFns& fns, int64_t b, int64_t h,
                    int64_t block_begin, int64_t block_end) {
  thread_local ForwardScratch w;
  const int64_t hk = h / (args.heads / args.kv_heads);
  const int64_t keys = keys_reached(args, std::min(args.q_len, block_end * kQueryRows) - 1);
  int64_t ldk = 0;
  const float* keys_t =
      transposed(args.dtype, element(args.k, args.dtype, b, hk, 0), args.k.row_stride, keys, args.head_dim, w.keys_t, ldk);
  const FloatRows v =
      as_float(args.dtype, element(args.v, args.dtype, b, hk, 0), args.v.row_stride, keys, args.value_dim, w.v);
  for (int64_t block = block_begin; block < block_end; ++block) {
    forward_block(args, fns, w, b, h, block * kQueryRows, keys_t, ldk, v);
  }
}

struct BackwardScratch {
  std::vector<float> k, keys_t, values_t, q, grad_out, out, probs, dropped, grad_scores, grad_q, grad_k, grad_v, factors;
};

// Writes grad_bias rows [i0, i0 + rows) of head (b, h), columns [j0, j0 + cols), from a float tile.
void store_grad_bias(const AttentionArgs& args, const AttentionGradients& grads, int64_t b, int64_t h, int64_t i0,
                     int64_t rows, int64_t j0, int64_t cols, const float* tile, int64_t ld) {
  char* base = static_cast<char*>(grads.grad_bias) +
               (((b * args.heads + h) * args.q_len + i0) * args.kv_len + j0) *
                   static_cast<int64_t>(element_size(args.dtype));
  store_rows(args.dtype, base, args.kv_len, tile, ld, rows, cols);
}

// Every query head of key/value head (b, hk), all query blocks.
void backward_head(const AttentionArgs& args, const AttentionGradients& grads, const detail::AttentionRowFns& fns,
                   int64_t b, int64_t hk) {
  thread_local BackwardScratch w;
  const int64_t d = args.head_dim, dv = args.value_dim, keys = args.kv_len;
  const int64_t group = args.heads / args.kv_heads;
  const ScalarType t = args.dtype;
  const float scale = static_cast<float>(args.scale);
  const FloatRows k = as_float(t, element(args.k, t, b, hk, 0), args.k.row_stride, keys, d, w.k);
  int64_t ldk = 0, ldv = 0;
  const float* keys_t = transposed(t, element(args.k, t, b, hk, 0), args.k.row_stride, keys, d, w.keys_t, ldk);
  const float* values_t = transposed(t, element(args.v, t, b, hk, 0), args.v.row_stride, keys, dv, w.values_t, ldv);
  w.grad_k.assign(static_cast<size_t>(keys * d), 0.0f);
  w.grad_v.assign(static_cast<size_t>(keys * dv), 0.0f);
  w.probs.resize(static_cast<size_t>(kQueryRows * kKeyColumns));
  w.dropped.resize(static_cast<size_t>(kQueryRows * kKeyColumns));
  w.grad_scores.resize(static_cast<size_t>(kQueryRows * kKeyColumns));
  w.factors.resize(static_cast<size_t>(kKeyColumns));
  const bool dropout = args.dropout_p > 0;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    for (int64_t i0 = 0; i0 < args.q_len; i0 += kQueryRows) {
      const int64_t rows = std::min(kQueryRows, args.q_len - i0);
      const FloatRows q = as_float(t, element(args.q, t, b, h, i0), args.q.row_stride, rows, d, w.q);
      const FloatRows dout = as_float(t, element(grads.grad_out, t, b, h, i0), grads.grad_out.row_stride, rows, dv,
                                      w.grad_out);
      const FloatRows out = as_float(t, element(args.out, t, b, h, i0), args.out.row_stride, rows, dv, w.out);
      const float* lse = args.logsumexp + (b * args.heads + h) * args.q_len + i0;
      float delta[kQueryRows];
      for (int64_t r = 0; r < rows; ++r) delta[r] = fns.dot(dout.data + r * dout.stride, out.data + r * out.stride, dv);
      w.grad_q.assign(static_cast<size_t>(rows * d), 0.0f);
      const int64_t key_end = keys_reached(args, i0 + rows - 1);
      for (int64_t j0 = 0; j0 < key_end; j0 += kKeyColumns) {
        const int64_t cols = std::min(kKeyColumns, key_end - j0);
        float* p = w.probs.data();
        gemm_float(rows, cols, d, scale, q.data, q.stride, 1, keys_t + j0, ldk, 1, 0.0f, p, kKeyColumns);
        float* pd = dropout ? w.dropped.data() : p;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          float* s = p + r * kKeyColumns;
          const int64_t n = lse[r] == kNegInf ? 0 : visible_keys(args, i, j0, cols);
          add_bias(args, b, h, i, j0, s, n);
          fns.exp_sum(s, n, lse[r]);
          std::fill(s + n, s + cols, 0.0f);
          if (dropout) {
            dropout_factors(args, (b * args.heads + h) * args.q_len + i, j0, cols, w.factors.data());
            for (int64_t j = 0; j < cols; ++j) pd[r * kKeyColumns + j] = s[j] * w.factors[j];
          }
        }
        // dV += P_dropped^T dO
        gemm_float(cols, dv, rows, 1.0f, pd, 1, kKeyColumns, dout.data, dout.stride, 1, 1.0f,
                   w.grad_v.data() + j0 * dv, dv);
        // dP = dO V^T, then through the dropout and the softmax.
        float* ds = w.grad_scores.data();
        gemm_float(rows, cols, dv, 1.0f, dout.data, dout.stride, 1, values_t + j0, ldv, 1, 0.0f, ds, kKeyColumns);
        for (int64_t r = 0; r < rows; ++r) {
          float* g = ds + r * kKeyColumns;
          if (dropout) {
            dropout_factors(args, (b * args.heads + h) * args.q_len + i0 + r, j0, cols, w.factors.data());
            for (int64_t j = 0; j < cols; ++j) g[j] *= w.factors[j];
          }
          fns.softmax_grad(g, p + r * kKeyColumns, cols, delta[r]);
        }
        if (grads.grad_bias) store_grad_bias(args, grads, b, h, i0, rows, j0, cols, ds, kKeyColumns);
        gemm_float(rows, d, cols, scale, ds, kKeyColumns, 1, k.data + j0 * k.stride, k.stride, 1, 1.0f,
                   w.grad_q.data(), d);
        gemm_float(cols, d, rows, scale, ds, 1, kKeyColumns, q.data, q.stride, 1, 1.0f, w.grad_k.data() + j0 * d, d);
      }
      if (grads.grad_bias && key_end < keys) {
        std::fill_n(w.grad_scores.data(), kKeyColumns, 0.0f);
        for (int64_t j0 = key_end; j0 < keys; j0 += kKeyColumns) {
          store_grad_bias(args, grads, b, h, i0, rows, j0, std::min(kKeyColumns, keys - j0), w.grad_scores.data(), 0);
        }
      }
      store_rows(t, element(grads.grad_q, t, b, h, i0), grads.grad_q.row_stride, w.grad_q.data(), d, rows, d);
    }
  }
  store_rows(t, element(grads.grad_k, t, b, hk, 0), grads.grad_k.row_stride, w.grad_k.data(), d, keys, d);
  store_rows(t, element(grads.grad_v, t, b, hk, 0), grads.grad_v.row_stride, w.grad_v.data(), dv, keys, dv);
}

// "batch2 heads8/2 q128 kv128 d64/64 causal dropout0.1" (kv heads, value dim after the slashes).
void describe(detail::VerboseCall& call, const AttentionArgs& args) {
  call.describe(args.dtype, "batch%lld heads%lld/%lld q%lld kv%lld d%lld/%lld%s dropout%g",
                static_cast<long long>(args.batch), static_cast<long long>(args.heads),
                static_cast<long long>(args.kv_heads), static_cast<long long>(args.q_len),
                static_cast<long long>(args.kv_len), static_cast<long long>(args.head_dim),
                static_cast<long long>(args.value_dim), args.causal ? " causal" : "", args.dropout_p);
}

}  // namespace

bool attention_supports(ScalarType dtype) {
  return dtype == ScalarType::Float32 || dtype == ScalarType::Float16 || dtype == ScalarType::BFloat16;
}

bool attention_dropout_keep(uint64_t seed, uint64_t offset, double p, int64_t kv_len, int64_t row, int64_t key) {
  // One Philox block gives the draws of four consecutive keys.
  const uint64_t blocks_per_row = static_cast<uint64_t>((kv_len + 3) / 4);
  const auto draws = philox4x32(seed, static_cast<uint64_t>(row) * blocks_per_row + static_cast<uint64_t>(key / 4), offset);
  const float uniform = static_cast<float>(draws[static_cast<size_t>(key % 4)] >> 8) * 0x1.0p-24f;
  return uniform < static_cast<float>(1.0 - p);
}

void attention_dropout_mask(uint64_t seed, uint64_t offset, double p, int64_t rows, int64_t kv_len, bool* mask) {
  parallel_for(0, rows, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t j = 0; j < kv_len; ++j) mask[r * kv_len + j] = attention_dropout_keep(seed, offset, p, kv_len, r, j);
    }
  });
}

void attention_forward(const AttentionArgs& args) {
  const detail::AttentionRowFns& fns = row_fns();
  const int64_t heads = args.batch * args.heads;
  const int64_t blocks = (args.q_len + kQueryRows - 1) / kQueryRows;
  if (heads == 0 || blocks == 0) return;
  detail::VerboseCall call("attention_forward");
  if (call) describe(call, args);
  // Whole heads per task when there are enough of them (K^T is built once
  // per task); else each head's query blocks in a few chunks, taken in
  // zigzag order (first, last, second, ...) so that under a causal mask the
  // cheap early chunks and the costly late ones mix in every thread's share.
  const int64_t chunks = std::clamp<int64_t>((4 * num_threads() + heads - 1) / heads, 1, blocks);
  call.path(chunks == 1 ? "whole_heads" : "query_chunks");
  parallel_for(0, heads * chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t bh = t / chunks, p = t % chunks;
      const int64_t chunk = p % 2 == 0 ? p / 2 : chunks - 1 - p / 2;
      forward_blocks(args, fns, bh / args.heads, bh % args.heads, chunk * blocks / chunks,
                     (chunk + 1) * blocks / chunks);
    }
  });
}

void attention_backward(const AttentionArgs& args, const AttentionGradients& grads) {
  const detail::AttentionRowFns& fns = row_fns();
  detail::VerboseCall call("attention_backward");
  if (call) describe(call, args);
  call.path("per_kv_head");
  parallel_for(0, args.batch * args.kv_heads, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) backward_head(args, grads, fns, t / args.kv_heads, t % args.kv_heads);
  });
}

}  // namespace mlu::kernels
