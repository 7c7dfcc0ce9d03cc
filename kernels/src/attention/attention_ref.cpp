// The scalar references of attention.h: per head, the full score and
// probability matrices in double, straight from the definitions.
#include <cmath>
#include <limits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/attention.h"

namespace mlu::kernels {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

template <class S>
S* at(const HeadsView& view, int64_t b, int64_t h, int64_t row) {
  return static_cast<S*>(view.data) + b * view.batch_stride + h * view.head_stride + row * view.row_stride;
}

// Key or value row j of batch b, paged or not.
template <class S>
const S* key_at(const AttentionArgs& a, const HeadsView& view, int64_t b, int64_t h, int64_t j) {
  if (a.pages == nullptr) return at<S>(view, b, h, j);
  return at<S>(view, a.pages[b * a.pages_per_batch + j / a.page_size], h, j % a.page_size);
}

// Whether query i sees key j by position, straight from Note [Attention windows].
bool visible(const AttentionArgs& a, int64_t i, int64_t j) {
  const int64_t diagonal = a.bottom_right ? a.kv_len - a.q_len : 0;
  const int64_t right = a.causal ? 0 : a.window_right;
  const bool after_left = a.window_left < 0 || j >= i + diagonal - a.window_left;
  const bool before_right = right < 0 || j <= i + diagonal + right;
  return after_left && before_right;
}

float& lse_at(const AttentionArgs& a, int64_t b, int64_t h, int64_t i) {
  return a.logsumexp[(b * a.heads + h) * (a.lse_head_stride != 0 ? a.lse_head_stride : a.q_len) + i];
}

// The probabilities of head (b, h) before dropout, [q_len][kv_len] (rows of
// fully masked scores are 0), and each row's log-sum-exp.
template <class S>
void probabilities(const AttentionArgs& a, int64_t b, int64_t h, std::vector<double>& p, std::vector<double>& lse) {
  const int64_t hk = h / (a.heads / a.kv_heads);
  p.assign(static_cast<size_t>(a.q_len * a.kv_len), 0.0);
  lse.assign(static_cast<size_t>(a.q_len), kNegInf);
  for (int64_t i = 0; i < a.q_len; ++i) {
    double* row = p.data() + i * a.kv_len;
    double max = kNegInf;
    for (int64_t j = 0; j < a.kv_len; ++j) {
      double s = kNegInf;
      if (visible(a, i, j)) {
        const S* q = at<S>(a.q, b, h, i);
        const S* k = key_at<S>(a, a.k, b, hk, j);
        double dot = 0;
        for (int64_t c = 0; c < a.head_dim; ++c) dot += double(detail::widen(q[c])) * double(detail::widen(k[c]));
        s = a.scale * dot;
        if (a.bias.data) {
          s += double(detail::widen(static_cast<const S*>(a.bias.data)[b * a.bias.batch_stride + h * a.bias.head_stride +
                                                                       i * a.bias.row_stride + j * a.bias.col_stride]));
        }
      }
      row[j] = s;
      if (s > max || s != s) max = s;
    }
    if (max == kNegInf) {
      for (int64_t j = 0; j < a.kv_len; ++j) row[j] = 0;
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < a.kv_len; ++j) sum += row[j] = std::exp(row[j] - max);
    for (int64_t j = 0; j < a.kv_len; ++j) row[j] /= sum;
    lse[static_cast<size_t>(i)] = max + std::log(sum);
  }
}

double dropout_factor(const AttentionArgs& a, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (a.dropout_p <= 0) return 1.0;
  const int64_t row = (b * a.heads + h) * a.q_len + i;
  return attention_dropout_keep(a.seed, a.offset, a.dropout_p, a.kv_len, row, j) ? 1.0 / (1.0 - a.dropout_p) : 0.0;
}

}  // namespace

void attention_forward_ref(const AttentionArgs& a) {
  detail::dispatch_floating(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<S, double>) {
      std::vector<double> p, lse;
      for (int64_t b = 0; b < a.batch; ++b) {
        for (int64_t h = 0; h < a.heads; ++h) {
          probabilities<S>(a, b, h, p, lse);
          const int64_t hk = h / (a.heads / a.kv_heads);
          for (int64_t i = 0; i < a.q_len; ++i) {
            const double row_lse = lse[static_cast<size_t>(i)];
            lse_at(a, b, h, i) = row_lse == kNegInf ? a.empty_row_logsumexp : static_cast<float>(row_lse);
            S* out = at<S>(a.out, b, h, i);
            for (int64_t c = 0; c < a.value_dim; ++c) {
              double acc = 0;
              for (int64_t j = 0; j < a.kv_len; ++j) {
                acc += p[static_cast<size_t>(i * a.kv_len + j)] * dropout_factor(a, b, h, i, j) *
                       double(detail::widen(key_at<S>(a, a.v, b, hk, j)[c]));
              }
              out[c] = detail::convert<S>(static_cast<float>(acc));
            }
          }
        }
      }
    }
  });
}

void attention_backward_ref(const AttentionArgs& a, const AttentionGradients& g) {
  detail::dispatch_floating(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<S, double>) {
      const auto w = [](const S* x, int64_t c) { return double(detail::widen(x[c])); };
      std::vector<double> p, lse;
      std::vector<double> gk(static_cast<size_t>(a.kv_len * a.head_dim)), gv(static_cast<size_t>(a.kv_len * a.value_dim));
      std::vector<double> ds(static_cast<size_t>(a.q_len * a.kv_len));
      for (int64_t b = 0; b < a.batch; ++b) {
        for (int64_t hk = 0; hk < a.kv_heads; ++hk) {
          std::fill(gk.begin(), gk.end(), 0.0);
          std::fill(gv.begin(), gv.end(), 0.0);
          const int64_t group = a.heads / a.kv_heads;
          for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
            probabilities<S>(a, b, h, p, lse);
            for (int64_t i = 0; i < a.q_len; ++i) {
              const S* dout = at<S>(g.grad_out, b, h, i);
              double delta = 0;  // sum_j P_dropped dP_dropped = dO . out, from the definitions
              for (int64_t j = 0; j < a.kv_len; ++j) {
                const double pd = p[static_cast<size_t>(i * a.kv_len + j)] * dropout_factor(a, b, h, i, j);
                double dpd = 0;
                for (int64_t c = 0; c < a.value_dim; ++c) dpd += w(dout, c) * w(key_at<S>(a, a.v, b, hk, j), c);
                for (int64_t c = 0; c < a.value_dim; ++c) gv[static_cast<size_t>(j * a.value_dim + c)] += pd * w(dout, c);
                ds[static_cast<size_t>(i * a.kv_len + j)] = dpd * dropout_factor(a, b, h, i, j);
                delta += pd * dpd;
              }
              for (int64_t j = 0; j < a.kv_len; ++j) {
                double& d = ds[static_cast<size_t>(i * a.kv_len + j)];
                d = p[static_cast<size_t>(i * a.kv_len + j)] * (d - delta);
              }
              S* gq = at<S>(g.grad_q, b, h, i);
              for (int64_t c = 0; c < a.head_dim; ++c) {
                double acc = 0;
                for (int64_t j = 0; j < a.kv_len; ++j)
                  acc += ds[static_cast<size_t>(i * a.kv_len + j)] * w(key_at<S>(a, a.k, b, hk, j), c);
                gq[c] = detail::convert<S>(static_cast<float>(a.scale * acc));
              }
              for (int64_t j = 0; j < a.kv_len; ++j) {
                for (int64_t c = 0; c < a.head_dim; ++c) {
                  gk[static_cast<size_t>(j * a.head_dim + c)] +=
                      a.scale * ds[static_cast<size_t>(i * a.kv_len + j)] * w(at<S>(a.q, b, h, i), c);
                }
              }
              if (g.grad_bias) {
                S* gb = static_cast<S*>(g.grad_bias) + ((b * a.heads + h) * a.q_len + i) * a.kv_len;
                for (int64_t j = 0; j < a.kv_len; ++j) gb[j] = detail::convert<S>(static_cast<float>(ds[static_cast<size_t>(i * a.kv_len + j)]));
              }
            }
          }
          for (int64_t j = 0; j < a.kv_len; ++j) {
            S* dk = at<S>(g.grad_k, b, hk, j);
            S* dv = at<S>(g.grad_v, b, hk, j);
            for (int64_t c = 0; c < a.head_dim; ++c) dk[c] = detail::convert<S>(static_cast<float>(gk[static_cast<size_t>(j * a.head_dim + c)]));
            for (int64_t c = 0; c < a.value_dim; ++c) dv[c] = detail::convert<S>(static_cast<float>(gv[static_cast<size_t>(j * a.value_dim + c)]));
          }
        }
      }
    }
  });
}

}  // namespace mlu::kernels
