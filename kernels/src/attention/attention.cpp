#include "mlu_kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
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

// Row r of a tensor read as rows: `base` + r * `stride` bytes, or (paged,
// Note [Attention windows]) row r % page_size of page pages[r / page_size],
// pages `page_stride` bytes apart.
struct RowSource {
  const char* base;
  int64_t stride;
  const int32_t* pages = nullptr;
  int64_t page_size = 0, page_stride = 0;

  const char* row(int64_t r) const {
    if (pages == nullptr) return base + r * stride;
    return base + pages[r / page_size] * page_stride + (r % page_size) * stride;
  }
};

RowSource rows_of(ScalarType type, const char* rows_begin, int64_t row_stride) {
  return {rows_begin, row_stride * static_cast<int64_t>(element_size(type))};
}

FloatRows as_float(ScalarType type, const RowSource& src, int64_t rows, int64_t cols, std::vector<float>& buffer) {
  const int64_t size = static_cast<int64_t>(element_size(type));
  if (type == ScalarType::Float32 && src.pages == nullptr) {
    return {reinterpret_cast<const float*>(src.base), src.stride / size};
  }
  buffer.resize(static_cast<size_t>(rows * cols));
  detail::dispatch_floating(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t r = 0; r < rows; ++r) {
      const S* row = reinterpret_cast<const S*>(src.row(r));
      for (int64_t c = 0; c < cols; ++c) buffer[r * cols + c] = static_cast<float>(detail::widen(row[c]));
    }
  });
  return {buffer.data(), cols};
}

FloatRows as_float(ScalarType type, const char* rows_begin, int64_t row_stride, int64_t rows, int64_t cols,
                   std::vector<float>& buffer) {
  return as_float(type, rows_of(type, rows_begin, row_stride), rows, cols, buffer);
}

// Rows [0, rows) of a view, transposed to float [cols][ld]: a GEMM operand
// read along keys (K^T for the scores, V^T for dP) then has contiguous rows,
// packed once per task instead of gathered per tile. ld is padded past a
// multiple of 16 floats so that successive rows do not alias in the cache.
const float* transposed(ScalarType type, const RowSource& src, int64_t rows, int64_t cols, std::vector<float>& buffer,
                        int64_t& ld) {
  constexpr int64_t kTile = 16;
  ld = (rows + kTile - 1) / kTile * kTile + kTile;
  buffer.resize(static_cast<size_t>(cols * ld));
  detail::dispatch_floating(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      const S* row[kTile];
      for (int64_t r = r0; r < r1; ++r) row[r - r0] = reinterpret_cast<const S*>(src.row(r));
      for (int64_t c = 0; c < cols; ++c) {
        float* out = buffer.data() + c * ld;
        for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<float>(detail::widen(row[r - r0][c]));
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

// The keys [begin, end) query row i sees by position (Note [Attention windows]).
struct KeySpan {
  int64_t begin, end;
};

KeySpan visible_span(const AttentionArgs& args, int64_t i) {
  const int64_t diagonal = i + (args.bottom_right ? args.kv_len - args.q_len : 0);
  const int64_t right = args.causal ? 0 : args.window_right;
  const int64_t begin = args.window_left < 0 ? 0 : std::clamp<int64_t>(diagonal - args.window_left, 0, args.kv_len);
  const int64_t end = right < 0 ? args.kv_len : std::clamp<int64_t>(diagonal + right + 1, 0, args.kv_len);
  return {begin, std::max(begin, end)};
}

bool masks_by_position(const AttentionArgs& args) {
  return args.causal || args.window_left >= 0 || args.window_right >= 0;
}

// The part of row i's span in the tile of `cols` keys from key j0, in tile columns.
KeySpan span_in_tile(const AttentionArgs& args, int64_t i, int64_t j0, int64_t cols) {
  const KeySpan span = visible_span(args, i);
  const int64_t begin = std::clamp<int64_t>(span.begin - j0, 0, cols);
  return {begin, std::clamp<int64_t>(span.end - j0, begin, cols)};
}

// The keys some row of query rows [first, last] sees: the spans only move
// right as i grows.
KeySpan keys_reached(const AttentionArgs& args, int64_t first, int64_t last) {
  const KeySpan span{visible_span(args, first).begin, visible_span(args, last).end};
  return span.begin < span.end ? span : KeySpan{0, 0};
}

float* lse_row(const AttentionArgs& args, int64_t b, int64_t h) {
  const int64_t head_stride = args.lse_head_stride != 0 ? args.lse_head_stride : args.q_len;
  return args.logsumexp + (b * args.heads + h) * head_stride;
}

// The source of key/value head (b, hk)'s rows, paged or not.
RowSource key_rows(const AttentionArgs& args, const HeadsView& view, int64_t b, int64_t hk) {
  const int64_t size = static_cast<int64_t>(element_size(args.dtype));
  if (args.pages == nullptr) return rows_of(args.dtype, element(view, args.dtype, b, hk, 0), view.row_stride);
  return {element(view, args.dtype, 0, hk, 0), view.row_stride * size, args.pages + b * args.pages_per_batch,
          args.page_size, view.batch_stride * size};
}

RowSource from_row(RowSource src, int64_t first) {
  if (src.pages == nullptr) {
    src.base += first * src.stride;
    return src;
  }
  // Paged sources start on a page boundary (the callers' spans begin at 0 or
  // are re-based on whole pages).
  src.pages += first / src.page_size;
  return src;
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

// Query rows [i0, i0 + rows) of head (b, h) against keys_t (K^T, ld ldk)
// and v, which hold keys from key_base on (Note [Online softmax]).
void forward_block(const AttentionArgs& args, const detail::AttentionRowFns& fns, ForwardScratch& w, int64_t b,
                   int64_t h, int64_t i0, const float* keys_t, int64_t ldk, const FloatRows& v, int64_t key_base) {
  const int64_t rows = std::min(kQueryRows, args.q_len - i0), d = args.head_dim, dv = args.value_dim;
  const FloatRows q = as_float(args.dtype, element(args.q, args.dtype, b, h, i0), args.q.row_stride, rows, d, w.q);
  w.scores.resize(static_cast<size_t>(rows * kKeyColumns));
  w.out.assign(static_cast<size_t>(rows * dv), 0.0f);
  w.factors.resize(static_cast<size_t>(kKeyColumns));
  float max[kQueryRows], sum[kQueryRows];
  std::fill_n(max, rows, kNegInf);
  std::fill_n(sum, rows, 0.0f);
  const bool positional = masks_by_position(args);
  const KeySpan keys = keys_reached(args, i0, i0 + rows - 1);
  for (int64_t j0 = keys.begin; j0 < keys.end; j0 += kKeyColumns) {
    const int64_t cols = std::min(kKeyColumns, keys.end - j0);
    float* scores = w.scores.data();
    gemm_float(rows, cols, d, static_cast<float>(args.scale), q.data, q.stride, 1, keys_t + (j0 - key_base), ldk, 1,
               0.0f, scores, kKeyColumns);
    float block_max[kQueryRows], shift[kQueryRows], block_sum[kQueryRows];
    if (!positional) {  // every row sees all `cols` keys: rows together (Note [Score rows together])
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
      const KeySpan seen = positional ? span_in_tile(args, i, j0, cols) : KeySpan{0, cols};
      if (positional) {
        const int64_t n = seen.end - seen.begin;
        add_bias(args, b, h, i, j0 + seen.begin, s + seen.begin, n);
        const float row_max = fns.max(s + seen.begin, n);
        block_max[r] = (row_max != row_max || row_max > max[r]) ? row_max : max[r];
        std::fill(s, s + seen.begin, 0.0f);
        std::fill(s + seen.end, s + cols, 0.0f);
        if (block_max[r] == kNegInf) {  // every key so far masked
          std::fill_n(s + seen.begin, n, 0.0f);
          continue;
        }
        block_sum[r] = fns.exp_sum(s + seen.begin, n, block_max[r]);
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
        dropout_factors(args, (b * args.heads + h) * args.q_len + i, j0, seen.end, w.factors.data());
        for (int64_t j = seen.begin; j < seen.end; ++j) s[j] *= w.factors[j];
      }
    }
    gemm_float(rows, dv, cols, 1.0f, scores, kKeyColumns, 1, v.data + (j0 - key_base) * v.stride, v.stride, 1, 1.0f,
               w.out.data(), dv);
  }
  float inverse[kQueryRows];
  float* lse = lse_row(args, b, h) + i0;
  for (int64_t r = 0; r < rows; ++r) {
    const bool masked = sum[r] == 0.0f;  // NaN scores keep NaN
    inverse[r] = masked ? 0.0f : 1.0f / sum[r];
    lse[r] = masked ? args.empty_row_logsumexp : max[r] + std::log(sum[r]);
  }
  store_rows(args.dtype, element(args.out, args.dtype, b, h, i0), args.out.row_stride, w.out.data(), dv, rows, dv,
             inverse);
}

// Query blocks [block_begin, block_end) of query heads [h_begin, h_end) of
// batch b, heads that share one key/value head: the keys they reach as float
// (K^T and V) once, then head by head and block by block.
void forward_blocks(const AttentionArgs& args, const detail::AttentionRowFns& fns, int64_t b, int64_t h_begin,
                    int64_t h_end, int64_t block_begin, int64_t block_end) {
  thread_local ForwardScratch w;
  const int64_t hk = h_begin / (args.heads / args.kv_heads);
  const KeySpan keys = keys_reached(args, block_begin * kQueryRows, std::min(args.q_len, block_end * kQueryRows) - 1);
  const int64_t key_base = args.pages != nullptr ? keys.begin - keys.begin % args.page_size : keys.begin;
  int64_t ldk = 0;
  const float* keys_t = transposed(args.dtype, from_row(key_rows(args, args.k, b, hk), key_base), keys.end - key_base,
                                   args.head_dim, w.keys_t, ldk);
  const FloatRows v =
      as_float(args.dtype, from_row(key_rows(args, args.v, b, hk), key_base), keys.end - key_base, args.value_dim, w.v);
  for (int64_t h = h_begin; h < h_end; ++h) {
    for (int64_t block = block_begin; block < block_end; ++block) {
      forward_block(args, fns, w, b, h, block * kQueryRows, keys_t, ldk, v, key_base);
    }
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
  const RowSource key_source = key_rows(args, args.k, b, hk), value_source = key_rows(args, args.v, b, hk);
  const FloatRows k = as_float(t, key_source, keys, d, w.k);
  int64_t ldk = 0, ldv = 0;
  const float* keys_t = transposed(t, key_source, keys, d, w.keys_t, ldk);
  const float* values_t = transposed(t, value_source, keys, dv, w.values_t, ldv);
  const bool positional = masks_by_position(args);
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
      const float* lse = lse_row(args, b, h) + i0;
      float delta[kQueryRows];
      for (int64_t r = 0; r < rows; ++r) delta[r] = fns.dot(dout.data + r * dout.stride, out.data + r * out.stride, dv);
      w.grad_q.assign(static_cast<size_t>(rows * d), 0.0f);
      const KeySpan reached = keys_reached(args, i0, i0 + rows - 1);
      for (int64_t j0 = reached.begin; j0 < reached.end; j0 += kKeyColumns) {
        const int64_t cols = std::min(kKeyColumns, reached.end - j0);
        float* p = w.probs.data();
        gemm_float(rows, cols, d, scale, q.data, q.stride, 1, keys_t + j0, ldk, 1, 0.0f, p, kKeyColumns);
        float* pd = dropout ? w.dropped.data() : p;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          float* s = p + r * kKeyColumns;
          KeySpan seen = positional ? span_in_tile(args, i, j0, cols) : KeySpan{0, cols};
          if (lse[r] == args.empty_row_logsumexp) seen = {0, 0};
          add_bias(args, b, h, i, j0 + seen.begin, s + seen.begin, seen.end - seen.begin);
          fns.exp_sum(s + seen.begin, seen.end - seen.begin, lse[r]);
          std::fill(s, s + seen.begin, 0.0f);
          std::fill(s + seen.end, s + cols, 0.0f);
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
      if (grads.grad_bias) {  // zeros for the keys no row of the block sees
        std::fill_n(w.grad_scores.data(), kKeyColumns, 0.0f);
        for (const KeySpan unseen : {KeySpan{0, reached.begin}, KeySpan{reached.end, keys}}) {
          for (int64_t j0 = unseen.begin; j0 < unseen.end; j0 += kKeyColumns) {
            store_grad_bias(args, grads, b, h, i0, rows, j0, std::min(kKeyColumns, unseen.end - j0),
                            w.grad_scores.data(), 0);
          }
        }
      }
      store_rows(t, element(grads.grad_q, t, b, h, i0), grads.grad_q.row_stride, w.grad_q.data(), d, rows, d);
    }
  }
  store_rows(t, element(grads.grad_k, t, b, hk, 0), grads.grad_k.row_stride, w.grad_k.data(), d, keys, d);
  store_rows(t, element(grads.grad_v, t, b, hk, 0), grads.grad_v.row_stride, w.grad_v.data(), dv, keys, dv);
}

// "batch2 heads8/2 q128 kv128 d64/64 causal dropout0.1" (kv heads, value dim after the slashes).
// With a window: " window-1,0 bottom_right"; paged: " paged16".
void describe(detail::VerboseCall& call, const AttentionArgs& args) {
  call.describe(args.dtype, "batch%lld heads%lld/%lld q%lld kv%lld d%lld/%lld%s dropout%g%s%s",
                static_cast<long long>(args.batch), static_cast<long long>(args.heads),
                static_cast<long long>(args.kv_heads), static_cast<long long>(args.q_len),
                static_cast<long long>(args.kv_len), static_cast<long long>(args.head_dim),
                static_cast<long long>(args.value_dim), args.causal ? " causal" : "", args.dropout_p,
                (args.window_left >= 0 || args.window_right >= 0)
                    ? (" window" + std::to_string(args.window_left) + "," + std::to_string(args.window_right)).c_str()
                    : "",
                (std::string(args.bottom_right ? " bottom_right" : "") +
                 (args.pages ? " paged" + std::to_string(args.page_size) : std::string()))
                    .c_str());
}

// Sequence s of a varlen call as a batch of one (VarlenSequences).
AttentionArgs sequence_args(const AttentionArgs& args, const VarlenSequences& seqs, int64_t s) {
  AttentionArgs a = args;
  const int64_t q_begin = seqs.q_starts[s], size = static_cast<int64_t>(element_size(args.dtype));
  a.batch = 1;
  a.q_len = seqs.q_starts[s + 1] - q_begin;
  const auto offset = [&](HeadsView view, int64_t row) {
    view.data = static_cast<char*>(view.data) + row * view.row_stride * size;
    return view;
  };
  a.q = offset(args.q, q_begin);
  a.out = offset(args.out, q_begin);
  a.logsumexp = args.logsumexp + q_begin;
  a.kv_len = seqs.k_used ? seqs.k_used[s] : seqs.k_starts[s + 1] - seqs.k_starts[s];
  if (args.pages != nullptr) {
    a.pages = args.pages + s * args.pages_per_batch;
  } else {
    a.k = offset(args.k, seqs.k_starts[s]);
    a.v = offset(args.v, seqs.k_starts[s]);
  }
  return a;
}

// Rows [first, end) of head h of a batch-1 view, zeroed.
void zero_rows(ScalarType type, const HeadsView& view, int64_t h, int64_t first, int64_t end, int64_t cols) {
  const size_t bytes = static_cast<size_t>(cols) * element_size(type);
  for (int64_t r = first; r < end; ++r) std::memset(element(view, type, 0, h, r), 0, bytes);
}

// Runs task(t) for t in [0, tasks) over the compute threads, each taking the
// next task when it is free: the sequences of a varlen call differ in cost.
template <class F>
void run_tasks(int64_t tasks, const F& task) {
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(tasks, num_threads()), 1, [&](int64_t, int64_t) {
    for (int64_t t = next++; t < tasks; t = next++) task(t);
  });
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
      forward_blocks(args, fns, bh / args.heads, bh % args.heads, bh % args.heads + 1, chunk * blocks / chunks,
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

std::string varlen_attention_problem(const AttentionArgs& args, const VarlenSequences& seqs) {
  const bool paged = args.pages != nullptr;
  const auto say = [](const char* what, int64_t s, int64_t value, const std::string& why) {
    return std::string(what) + "[" + std::to_string(s) + "] = " + std::to_string(value) + " " + why;
  };
  for (int64_t s = 0; s <= seqs.count; ++s) {
    const int64_t q = seqs.q_starts[s], q_previous = s > 0 ? seqs.q_starts[s - 1] : 0;
    if (q < q_previous) return say("cu_seq_q", s, q, "is below " + std::to_string(q_previous));
    if (q > seqs.q_rows) return say("cu_seq_q", s, q, "is past " + std::to_string(seqs.q_rows));
    if (seqs.k_starts == nullptr) continue;
    const int64_t k = seqs.k_starts[s], k_previous = s > 0 ? seqs.k_starts[s - 1] : 0;
    if (k < k_previous) return say("cu_seq_k", s, k, "is below " + std::to_string(k_previous));
    if (!paged && k > seqs.k_rows) return say("cu_seq_k", s, k, "is past " + std::to_string(seqs.k_rows));
  }
  for (int64_t s = 0; s < seqs.count; ++s) {
    const int64_t length = seqs.k_used ? seqs.k_used[s] : seqs.k_starts[s + 1] - seqs.k_starts[s];
    const int64_t room = paged ? args.pages_per_batch * args.page_size
                               : (seqs.k_starts ? seqs.k_starts[s + 1] - seqs.k_starts[s] : seqs.k_rows);
    if (seqs.k_used && (length < 0 || length > room)) {
      return say("seqused_k", s, length, "is outside 0 .. " + std::to_string(room));
    }
    if (length > room) {
      return "sequence " + std::to_string(s) + " has " + std::to_string(length) + " keys, more than its " +
             std::to_string(room) + " page slots";
    }
    for (int64_t p = 0; paged && p * args.page_size < length; ++p) {
      const int64_t page = args.pages[s * args.pages_per_batch + p];
      if (page < 0 || page >= seqs.k_rows) {
        return "block_table[" + std::to_string(s) + ", " + std::to_string(p) + "] = " + std::to_string(page) +
               " is not a page of the cache (it has " + std::to_string(seqs.k_rows) + ")";
      }
    }
  }
  return {};
}

void attention_forward_varlen(const AttentionArgs& args, const VarlenSequences& seqs) {
  const detail::AttentionRowFns& fns = row_fns();
  detail::VerboseCall call("attention_forward_varlen");
  if (call) describe(call, args);
  // A task per (sequence, query head); a sequence shorter than a query block
  // (decoding) gives a task per key/value head instead, whose query heads
  // share the keys converted once (grouped-query attention reads them once).
  call.path("per_sequence_head");
  std::vector<AttentionArgs> sequences;
  for (int64_t s = 0; s < seqs.count; ++s) sequences.push_back(sequence_args(args, seqs, s));
  const int64_t group = args.heads / args.kv_heads;
  run_tasks(seqs.count * args.heads, [&](int64_t t) {
    const AttentionArgs& a = sequences[static_cast<size_t>(t / args.heads)];
    const int64_t h = t % args.heads, blocks = (a.q_len + kQueryRows - 1) / kQueryRows;
    if (a.q_len >= kQueryRows) {
      forward_blocks(a, fns, 0, h, h + 1, 0, blocks);
    } else if (h % group == 0) {
      forward_blocks(a, fns, 0, h, h + group, 0, blocks);
    }
  });
  const int64_t used_rows = seqs.q_starts[seqs.count];
  for (int64_t h = 0; h < args.heads; ++h) {
    zero_rows(args.dtype, args.out, h, used_rows, seqs.q_rows, args.value_dim);
    std::fill(lse_row(args, 0, h) + used_rows, lse_row(args, 0, h) + seqs.q_rows, args.empty_row_logsumexp);
  }
}

void attention_backward_varlen(const AttentionArgs& args, const AttentionGradients& grads,
                               const VarlenSequences& seqs) {
  const detail::AttentionRowFns& fns = row_fns();
  detail::VerboseCall call("attention_backward_varlen");
  if (call) describe(call, args);
  call.path("per_sequence_kv_head");
  const int64_t size = static_cast<int64_t>(element_size(args.dtype));
  const auto offset = [&](HeadsView view, int64_t row) {
    view.data = static_cast<char*>(view.data) + row * view.row_stride * size;
    return view;
  };
  run_tasks(seqs.count * args.kv_heads, [&](int64_t t) {
    const int64_t s = t / args.kv_heads;
    const AttentionArgs a = sequence_args(args, seqs, s);
    AttentionGradients g = grads;
    g.grad_out = offset(grads.grad_out, seqs.q_starts[s]);
    g.grad_q = offset(grads.grad_q, seqs.q_starts[s]);
    g.grad_k = offset(grads.grad_k, seqs.k_starts[s]);
    g.grad_v = offset(grads.grad_v, seqs.k_starts[s]);
    backward_head(a, g, fns, 0, t % args.kv_heads);
  });
  const int64_t q_used = seqs.q_starts[seqs.count], k_used = seqs.k_starts[seqs.count];
  for (int64_t h = 0; h < args.heads; ++h) zero_rows(args.dtype, grads.grad_q, h, q_used, seqs.q_rows, args.head_dim);
  for (int64_t h = 0; h < args.kv_heads; ++h) {
    zero_rows(args.dtype, grads.grad_k, h, k_used, seqs.k_rows, args.head_dim);
    zero_rows(args.dtype, grads.grad_v, h, k_used, seqs.k_rows, args.value_dim);
  }
}

}  // namespace mlu::kernels
