// attention_forward / attention_backward against their full-matrix double
// references: lengths below, at and across the tile sizes, causal masks,
// additive and broadcast biases with -inf (fully masked rows too), dropout,
// grouped-query heads, head-interleaved layouts, every dtype.
#include "mlu_kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
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
  if (chance(rng, 0.3)) {
    a.dropout_p = chance(rng, 0.2) ? 1.0 : 0.3;
    a.seed = rng();
    a.offset = rng() % 1000;
  }
  c.what = std::string(scalar_type_name(type)) + " b" + std::to_string(a.batch) + " h" + std::to_string(a.heads) + "/" +
           std::to_string(a.kv_heads) + " L" + std::to_string(a.q_len) + " S" + std::to_string(a.kv_len) + " d" +
           std::to_string(a.head_dim) + "/" + std::to_string(a.value_dim) + (a.causal ? " causal" : "") +
           " dropout " + std::to_string(a.dropout_p);
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
    // Gradients cancel (a single key gives dQ = 0 exactly): compared relative
    // to at least the inputs' scale, 1. Compare in one layout: the references are [batch, heads, rows, cols].
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
    ASSERT_TRUE(close_to_max(relayout(gq, a.heads, a.q_len, a.head_dim).buffer, gq_ref.buffer, rtol, 1.0)) << "grad q " << c.what;
    ASSERT_TRUE(close_to_max(gk.buffer, gk_ref.buffer, rtol, 1.0)) << "grad k " << c.what;
    ASSERT_TRUE(close_to_max(relayout(gv, a.kv_heads, a.kv_len, a.value_dim).buffer, gv_ref.buffer, rtol, 1.0))
        << "grad v " << c.what;
    if (want_bias_grad) {
      ASSERT_TRUE(close_to_max(gbias, gbias_ref, rtol, 1.0)) << "grad bias " << c.what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionTest,
                         ::testing::Values(ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float16));

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
