// attention_forward / attention_backward against their full-matrix double
// references: lengths below, at and across the tile sizes, causal masks,
// additive and broadcast biases with -inf (fully masked rows too), dropout,
// grouped-query heads, head-interleaved layouts, every dtype.
#include "mlu_kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

// A [batch, heads, rows, cols] tensor in its own buffer, laid out either
// [batch, heads, rows, cols] or [batch, rows, heads, cols] (the layout of a
// projection split into heads).
struct Heads {
  Buffer buffer;
  HeadsView view;
  Heads(ScalarType type, int64_t batch, int64_t heads, int64_t rows, int64_t cols, bool interleaved)
      : buffer(type, batch * heads * rows * cols) {
    view.data = buffer.data();
    view.batch_stride = heads * rows * cols;
    view.head_stride = interleaved ? cols : rows * cols;
    view.row_stride = interleaved ? heads * cols : cols;
  }
};

struct Case {
  AttentionArgs args{};
  std::string what;
};

Case random_case(Rng& rng, ScalarType type) {
  Case c;
  AttentionArgs& a = c.args;
  a.dtype = type;
  a.batch = uniform(rng, 1, 2);
  a.kv_heads = uniform(rng, 1, 2);
  a.heads = a.kv_heads * (chance(rng, 0.3) ? uniform(rng, 2, 3) : 1);
  const int64_t lengths[] = {1, 5, 63, 64, 65, 130, 255, 256, 300};
  a.q_len = lengths[uniform(rng, 0, 8)];
  a.kv_len = chance(rng, 0.5) ? a.q_len : lengths[uniform(rng, 0, 8)];
  a.head_dim = chance(rng, 0.5) ? 64 : uniform(rng, 1, 40);
  a.value_dim = chance(rng, 0.5) ? a.head_dim : uniform(rng, 1, 40);
  a.scale = chance(rng, 0.8) ? 1.0 / std::sqrt(double(a.head_dim)) : -0.7;
  a.causal = chance(rng, 0.4);
  if (chance(rng, 0.4)) {  // FlashAttention's masks (Note [Attention windows])
    a.bottom_right = chance(rng, 0.7);
    const int64_t windows[] = {-1, 0, 3, 70, 300};
    a.window_left = windows[uniform(rng, 0, 4)];
    a.window_right = windows[uniform(rng, 0, 4)];
  }
  if (chance(rng, 0.3)) {
    a.dropout_p = chance(rng, 0.2) ? 1.0 : 0.3;
    a.seed = rng();
    a.offset = rng() % 1000;
  }
  c.what = std::string(scalar_type_name(type)) + " b" + std::to_string(a.batch) + " h" + std::to_string(a.heads) + "/" +
           std::to_string(a.kv_heads) + " L" + std::to_string(a.q_len) + " S" + std::to_string(a.kv_len) + " d" +
           std::to_string(a.head_dim) + "/" + std::to_string(a.value_dim) + (a.causal ? " causal" : "") + " window " +
           std::to_string(a.window_left) + "," + std::to_string(a.window_right) +
           (a.bottom_right ? " bottom_right" : "") + " dropout " + std::to_string(a.dropout_p);
  return c;
}

// A bias [batch, heads, q_len, kv_len], sometimes broadcast over batch and
// heads, with some -inf entries and, sometimes, a fully masked row.
Buffer random_bias(Rng& rng, AttentionArgs& a, std::string& what) {
  const bool broadcast = chance(rng, 0.5);
  const int64_t planes = broadcast ? 1 : a.batch * a.heads;
  Buffer bias(a.dtype, planes * a.q_len * a.kv_len);
  fill_normal(bias, rng);
  for (int64_t i = 0; i < bias.count(); ++i) {
    if (chance(rng, 0.1)) put_real(a.dtype, bias.element(i), -std::numeric_limits<double>::infinity());
  }
  if (chance(rng, 0.5)) {
    const int64_t row = uniform(rng, 0, a.q_len - 1);
    for (int64_t j = 0; j < a.kv_len; ++j) {
      put_real(a.dtype, bias.element(row * a.kv_len + j), -std::numeric_limits<double>::infinity());
    }
  }
  a.bias.data = bias.data();
  a.bias.batch_stride = broadcast ? 0 : a.heads * a.q_len * a.kv_len;
  a.bias.head_stride = broadcast ? 0 : a.q_len * a.kv_len;
  a.bias.row_stride = a.kv_len;
  a.bias.col_stride = 1;
  what += broadcast ? " broadcast bias" : " bias";
  return bias;
}

class AttentionTest : public ::testing::TestWithParam<ScalarType> {};

TEST_P(AttentionTest, MatchesReferenceOnRandomShapes) {
  const ScalarType type = GetParam();
  const double rtol = type == ScalarType::Float32 ? 2e-5 : type == ScalarType::Float16 ? 4e-3 : 2e-2;
  Rng rng(17 + static_cast<int>(type));
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng, type);
    AttentionArgs& a = c.args;
    const bool mixed = chance(rng, 0.5);
    Heads q(type, a.batch, a.heads, a.q_len, a.head_dim, mixed), k(type, a.batch, a.kv_heads, a.kv_len, a.head_dim, mixed),
        v(type, a.batch, a.kv_heads, a.kv_len, a.value_dim, false), out(type, a.batch, a.heads, a.q_len, a.value_dim, mixed),
        out_ref(type, a.batch, a.heads, a.q_len, a.value_dim, mixed), gout(type, a.batch, a.heads, a.q_len, a.value_dim, false);
    for (Buffer* b : {&q.buffer, &k.buffer, &v.buffer, &gout.buffer}) fill_normal(*b, rng);
    Buffer bias(type, 0);
    if (chance(rng, 0.4) && !a.causal) bias = random_bias(rng, a, c.what);
    a.q = q.view;
    a.k = k.view;
    a.v = v.view;
    std::vector<float> lse(static_cast<size_t>(a.batch * a.heads * a.q_len)), lse_ref(lse.size());

    AttentionArgs ref = a;
    ref.out = out_ref.view;
    ref.logsumexp = lse_ref.data();
    attention_forward_ref(ref);
    a.out = out.view;
    a.logsumexp = lse.data();
    attention_forward(a);
    ASSERT_TRUE(close_to_max(out.buffer, out_ref.buffer, rtol)) << "forward " << c.what;
    for (size_t i = 0; i < lse.size(); ++i) {
      if (std::isinf(lse_ref[i])) {
        ASSERT_EQ(lse[i], lse_ref[i]) << "logsumexp " << i << " " << c.what;
      } else {
        ASSERT_NEAR(lse[i], lse_ref[i], 1e-4 * (1 + std::abs(lse_ref[i]))) << "logsumexp " << i << " " << c.what;
      }
    }

    Heads gq(type, a.batch, a.heads, a.q_len, a.head_dim, mixed), gk(type, a.batch, a.kv_heads, a.kv_len, a.head_dim, false),
        gv(type, a.batch, a.kv_heads, a.kv_len, a.value_dim, mixed);
    Heads gq_ref(type, a.batch, a.heads, a.q_len, a.head_dim, false), gk_ref(type, a.batch, a.kv_heads, a.kv_len, a.head_dim, false),
        gv_ref(type, a.batch, a.kv_heads, a.kv_len, a.value_dim, false);
    const bool want_bias_grad = a.bias.data != nullptr;
    Buffer gbias(type, a.batch * a.heads * a.q_len * a.kv_len), gbias_ref(type, gbias.count());
    AttentionGradients g{gout.view, gq.view, gk.view, gv.view, want_bias_grad ? gbias.data() : nullptr};
    AttentionGradients g_ref{gout.view, gq_ref.view, gk_ref.view, gv_ref.view, want_bias_grad ? gbias_ref.data() : nullptr};
    attention_backward_ref(ref, g_ref);
    attention_backward(a, g);
    // Gradients cancel (a row that sees a single key has dQ = 0 exactly, as the
    // difference of dO.V terms of size ~sqrt(d) rounded to the dtype: the
    // kernel's rowsum(dO o out) reads the stored output, as FlashAttention's
    // does), so they are compared relative to at least 4, the size of those
    // terms; a window of one key makes every row such a row. Compare in one
    // layout: the references are [batch, heads, rows, cols].
    constexpr double kGradientScale = 4.0;
    const auto relayout = [&](const Heads& h, int64_t heads, int64_t rows, int64_t cols) {
      Heads plain(type, a.batch, heads, rows, cols, false);
      const size_t es = element_size(type);
      for (int64_t b = 0; b < a.batch; ++b)
        for (int64_t hh = 0; hh < heads; ++hh)
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(plain.buffer.element(((b * heads + hh) * rows + r) * cols),
                        static_cast<const unsigned char*>(h.view.data) +
                            (b * h.view.batch_stride + hh * h.view.head_stride + r * h.view.row_stride) * es,
                        static_cast<size_t>(cols) * es);
      return plain;
    };
    ASSERT_TRUE(close_to_max(relayout(gq, a.heads, a.q_len, a.head_dim).buffer, gq_ref.buffer, rtol, kGradientScale))
        << "grad q " << c.what;
    ASSERT_TRUE(close_to_max(gk.buffer, gk_ref.buffer, rtol, kGradientScale)) << "grad k " << c.what;
    ASSERT_TRUE(
        close_to_max(relayout(gv, a.kv_heads, a.kv_len, a.value_dim).buffer, gv_ref.buffer, rtol, kGradientScale))
        << "grad v " << c.what;
    if (want_bias_grad) {
      ASSERT_TRUE(close_to_max(gbias, gbias_ref, rtol, kGradientScale)) << "grad bias " << c.what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionTest,
                         ::testing::Values(ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float16));

// A paged key/value cache (pages of 7 or 16 rows in shuffled order, a
// partly filled last page) reads the same keys as the plain layout, and packed
// variable-length sequences compute each sequence on its own.
TEST_P(AttentionTest, PagedKeysAndPackedSequencesMatchReference) {
  const ScalarType type = GetParam();
  const double rtol = type == ScalarType::Float32 ? 2e-5 : type == ScalarType::Float16 ? 4e-3 : 2e-2;
  Rng rng(99 + static_cast<int>(type));
  for (int trial = 0; trial < 12; ++trial) {
    Case c = random_case(rng, type);
    AttentionArgs& a = c.args;
    a.dropout_p = 0;
    a.bias = {};
    a.bottom_right = true;
    const int64_t page_size = chance(rng, 0.5) ? 7 : 16;
    const int64_t pages_per_batch = (a.kv_len + page_size - 1) / page_size + uniform(rng, 0, 1);
    const int64_t pages = a.batch * pages_per_batch + 2;
    Heads q(type, a.batch, a.heads, a.q_len, a.head_dim, true),
        k(type, a.batch, a.kv_heads, a.kv_len, a.head_dim, true),
        v(type, a.batch, a.kv_heads, a.kv_len, a.value_dim, true);
    for (Buffer* b : {&q.buffer, &k.buffer, &v.buffer}) fill_normal(*b, rng);
    // The cache: [pages, page_size, kv_heads, dim], page p of batch b at table[b][p].
    Heads k_cache(type, pages, a.kv_heads, page_size, a.head_dim, true),
        v_cache(type, pages, a.kv_heads, page_size, a.value_dim, true);
    std::vector<int32_t> order(static_cast<size_t>(pages));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int32_t> table(static_cast<size_t>(a.batch * pages_per_batch));
    for (size_t i = 0; i < table.size(); ++i) table[i] = order[i];
    const size_t es = element_size(type);
    for (int64_t b = 0; b < a.batch; ++b) {
      for (int64_t h = 0; h < a.kv_heads; ++h) {
        for (int64_t j = 0; j < a.kv_len; ++j) {
          const int64_t page = table[static_cast<size_t>(b * pages_per_batch + j / page_size)], row = j % page_size;
          const auto copy = [&](const Heads& from, Heads& to, int64_t dim) {
            std::memcpy(static_cast<char*>(to.view.data) +
                            (page * to.view.batch_stride + h * to.view.head_stride + row * to.view.row_stride) * es,
                        static_cast<const char*>(from.view.data) +
                            (b * from.view.batch_stride + h * from.view.head_stride + j * from.view.row_stride) * es,
                        static_cast<size_t>(dim) * es);
          };
          copy(k, k_cache, a.head_dim);
          copy(v, v_cache, a.value_dim);
        }
      }
    }
    Heads out(type, a.batch, a.heads, a.q_len, a.value_dim, true),
        out_ref(type, a.batch, a.heads, a.q_len, a.value_dim, true);
    std::vector<float> lse(static_cast<size_t>(a.batch * a.heads * a.q_len)), lse_ref(lse.size());
    AttentionArgs ref = a;
    ref.q = q.view;
    ref.k = k.view;
    ref.v = v.view;
    ref.out = out_ref.view;
    ref.logsumexp = lse_ref.data();
    attention_forward_ref(ref);
    AttentionArgs paged = ref;
    paged.k = k_cache.view;
    paged.v = v_cache.view;
    paged.pages = table.data();
    paged.page_size = page_size;
    paged.pages_per_batch = pages_per_batch;
    paged.out = out.view;
    paged.logsumexp = lse.data();
    attention_forward(paged);
    ASSERT_TRUE(close_to_max(out.buffer, out_ref.buffer, rtol)) << "paged " << c.what;

    // The same batch as packed sequences: batch entry b is sequence b, its
    // queries from row b * q_len, its keys from row b * kv_len.
    const auto packed = [](const Heads& h) {  // interleaved [batch, rows, heads, dim] is [batch * rows, heads, dim]
      HeadsView view = h.view;
      view.batch_stride = 0;
      return view;
    };
    std::vector<int32_t> q_starts, k_starts;
    for (int64_t b = 0; b <= a.batch; ++b) {
      q_starts.push_back(static_cast<int32_t>(b * a.q_len));
      k_starts.push_back(static_cast<int32_t>(b * a.kv_len));
    }
    Heads out_packed(type, a.batch, a.heads, a.q_len, a.value_dim, true);
    std::vector<float> lse_packed(lse.size());
    AttentionArgs varlen = ref;
    varlen.batch = 1;
    varlen.q = packed(q);
    varlen.k = packed(k);
    varlen.v = packed(v);
    varlen.out = packed(out_packed);
    varlen.logsumexp = lse_packed.data();
    varlen.lse_head_stride = a.batch * a.q_len;
    VarlenSequences seqs;
    seqs.count = a.batch;
    seqs.q_rows = a.batch * a.q_len;
    seqs.k_rows = a.batch * a.kv_len;
    seqs.q_starts = q_starts.data();
    seqs.k_starts = k_starts.data();
    ASSERT_EQ(varlen_attention_problem(varlen, seqs), "");
    attention_forward_varlen(varlen, seqs);
    ASSERT_TRUE(close_to_max(out_packed.buffer, out_ref.buffer, rtol)) << "varlen " << c.what;
    for (int64_t b = 0; b < a.batch; ++b) {
      for (int64_t h = 0; h < a.heads; ++h) {
        for (int64_t i = 0; i < a.q_len; ++i) {
          const float want = lse_ref[static_cast<size_t>((b * a.heads + h) * a.q_len + i)];
          const float got = lse_packed[static_cast<size_t>(h * a.batch * a.q_len + b * a.q_len + i)];
          if (std::isinf(want)) {
            ASSERT_EQ(got, want) << "varlen lse " << c.what;
          } else {
            ASSERT_NEAR(got, want, 1e-4 * (1 + std::abs(want))) << "varlen lse " << c.what;
          }
        }
      }
    }
  }
}

// A bad offset or page is named, not read.
TEST(AttentionVarlen, ProblemsAreNamed) {
  AttentionArgs a{};
  a.dtype = ScalarType::Float32;
  std::vector<int32_t> q_starts{0, 3, 2}, k_starts{0, 4, 9};
  VarlenSequences seqs;
  seqs.count = 2;
  seqs.q_rows = 5;
  seqs.k_rows = 8;
  seqs.q_starts = q_starts.data();
  seqs.k_starts = k_starts.data();
  EXPECT_EQ(varlen_attention_problem(a, seqs), "cu_seq_q[2] = 2 is below 3");
  q_starts = {0, 3, 5};
  EXPECT_EQ(varlen_attention_problem(a, seqs), "cu_seq_k[2] = 9 is past 8");
  k_starts = {0, 4, 8};
  EXPECT_EQ(varlen_attention_problem(a, seqs), "");
  std::vector<int32_t> used{2, 5};
  seqs.k_used = used.data();
  EXPECT_EQ(varlen_attention_problem(a, seqs), "seqused_k[1] = 5 is outside 0 .. 4");
  std::vector<int32_t> table{0, 1, 2, 7};
  a.pages = table.data();
  a.page_size = 4;
  a.pages_per_batch = 2;
  seqs.k_starts = nullptr;
  seqs.k_rows = 3;
  EXPECT_EQ(varlen_attention_problem(a, seqs), "block_table[1, 1] = 7 is not a page of the cache (it has 3)");
}

// The dropout mask keeps about 1 - p of the probabilities, and is a function
// of (seed, offset, row, key) only.
TEST(AttentionDropout, KeepsOneMinusPAndDependsOnSeedAndOffset) {
  const int64_t rows = 64, keys = 301;
  std::vector<char> a(rows * keys), b(rows * keys), c(rows * keys);
  attention_dropout_mask(5, 9, 0.25, rows, keys, reinterpret_cast<bool*>(a.data()));
  attention_dropout_mask(5, 9, 0.25, rows, keys, reinterpret_cast<bool*>(b.data()));
  attention_dropout_mask(5, 10, 0.25, rows, keys, reinterpret_cast<bool*>(c.data()));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int64_t kept = 0;
  for (char x : a) kept += x;
  EXPECT_NEAR(double(kept) / double(rows * keys), 0.75, 0.02);
  EXPECT_EQ(bool(a[37 * keys + 200]), attention_dropout_keep(5, 9, 0.25, keys, 37, 200));
}

}  // namespace
}  // namespace mlu::kernels
