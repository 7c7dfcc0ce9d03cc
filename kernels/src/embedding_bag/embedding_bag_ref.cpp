// The scalar references of embedding_bag.h: one output element (bag, column)
// or one gradient element (row, column) at a time, a loop over the positions
// of the bag(s), sums in double (the kernels sum in float for Float32 /
// Float16 / BFloat16), each result rounded once.
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/embedding_bag.h"

namespace mlu::kernels {
namespace {

template <class T>
double wide(T v) {
  return static_cast<double>(detail::widen(v));
}

bool is_padding(const EmbeddingBagArgs& a, int64_t index) { return a.padding_idx >= 0 && index == a.padding_idx; }

// The bag holding position i, -1 for none (from bounds alone).
int64_t bag_of(const EmbeddingBagArgs& a, int64_t i) {
  for (int64_t b = 0; b < a.num_bags; ++b) {
    if (a.bounds[b] <= i && i < a.bounds[b + 1]) return b;
  }
  return -1;
}

}  // namespace

BagCheck embedding_bag_ref(const EmbeddingBagArgs& a, void* output, int64_t* offset2bag, int64_t* bag_size,
                           int64_t* max_indices) {
  // The checks in the header's order: offsets first, then indices.
  if (a.num_bags > 0 && a.bounds[0] != 0) return {BagCheck::FirstOffsetNotZero, a.bounds[0]};
  for (int64_t b = 0; b < a.num_bags; ++b) {
    if (a.bounds[b + 1] < a.bounds[b]) return {BagCheck::OffsetsDecrease, a.bounds[b + 1]};
    if (a.bounds[b + 1] > a.num_indices) return {BagCheck::OffsetPastEnd, a.bounds[b + 1]};
  }
  for (int64_t i = 0; i < a.num_indices; ++i) {
    if (a.indices[i] < 0 || a.indices[i] >= a.num_weights) return {BagCheck::BadIndex, a.indices[i]};
  }
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* weight = static_cast<const T*>(a.weight);
    const T* psw = static_cast<const T*>(a.per_sample_weights);
    T* out = static_cast<T*>(output);
    for (int64_t i = 0; i < a.num_indices; ++i) offset2bag[i] = bag_of(a, i);
    for (int64_t b = 0; b < a.num_bags; ++b) {
      int64_t count = 0;
      for (int64_t i = a.bounds[b]; i < a.bounds[b + 1]; ++i) count += is_padding(a, a.indices[i]) ? 0 : 1;
      bag_size[b] = count;
      for (int64_t d = 0; d < a.dim; ++d) {
        if (a.mode == BagMode::Max) {
          // The first largest element of the column, and its row.
          T best{};
          int64_t best_row = -1;
          for (int64_t i = a.bounds[b]; i < a.bounds[b + 1]; ++i) {
            const int64_t row = a.indices[i];
            if (is_padding(a, row)) continue;
            const T v = weight[row * a.weight_row_stride + d];
            if (best_row < 0 || wide(v) > wide(best)) {
              best = v;
              best_row = row;
            }
          }
          out[b * a.dim + d] = best_row < 0 ? detail::convert<T>(0.0) : best;
          max_indices[b * a.dim + d] = best_row;
          continue;
        }
        double sum = 0;
        for (int64_t i = a.bounds[b]; i < a.bounds[b + 1]; ++i) {
          const int64_t row = a.indices[i];
          if (is_padding(a, row)) continue;
          sum += wide(weight[row * a.weight_row_stride + d]) * (psw != nullptr ? wide(psw[i]) : 1.0);
        }
        if (a.mode == BagMode::Mean && count > 0) sum /= static_cast<double>(count);
        out[b * a.dim + d] = detail::convert<T>(sum);
      }
    }
  });
  return {};
}

void embedding_bag_backward_ref(const EmbeddingBagArgs& a, const void* grad_, const int64_t* offset2bag,
                                const int64_t* bag_size, const int64_t* max_indices, bool scale_grad_by_freq,
                                void* grad_weight) {
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* grad = static_cast<const T*>(grad_);
    const T* psw = static_cast<const T*>(a.per_sample_weights);
    T* gw = static_cast<T*>(grad_weight);
    for (int64_t row = 0; row < a.num_weights; ++row) {
      // scale_grad_by_freq: the row's count over all of indices.
      int64_t frequency = 0;
      for (int64_t i = 0; i < a.num_indices; ++i) frequency += a.indices[i] == row ? 1 : 0;
      const double freq_scale = scale_grad_by_freq && frequency > 0 ? 1.0 / static_cast<double>(frequency) : 1.0;
      for (int64_t d = 0; d < a.dim; ++d) {
        double sum = 0;
        if (a.mode == BagMode::Max) {
          for (int64_t b = 0; b < a.num_bags; ++b) {
            if (max_indices[b * a.dim + d] == row) sum += wide(grad[b * a.dim + d]);
          }
        } else {
          for (int64_t i = 0; i < a.num_indices; ++i) {
            const int64_t b = offset2bag[i];
            if (a.indices[i] != row || b < 0 || is_padding(a, row)) continue;
            double scale = psw != nullptr ? wide(psw[i]) : 1.0;
            if (a.mode == BagMode::Mean) scale /= static_cast<double>(bag_size[b]);
            sum += wide(grad[b * a.dim + d]) * scale;
          }
        }
        gw[row * a.dim + d] = detail::convert<T>(sum * freq_scale);
      }
    }
  });
}

void embedding_bag_per_sample_weights_backward_ref(const EmbeddingBagArgs& a, const void* grad_,
                                                   const int64_t* offset2bag, void* grad_per_sample_weights) {
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* grad = static_cast<const T*>(grad_);
    const T* weight = static_cast<const T*>(a.weight);
    T* out = static_cast<T*>(grad_per_sample_weights);
    for (int64_t i = 0; i < a.num_indices; ++i) {
      const int64_t row = a.indices[i], b = offset2bag[i];
      double dot = 0;
      if (b >= 0 && !is_padding(a, row)) {
        for (int64_t d = 0; d < a.dim; ++d) dot += wide(grad[b * a.dim + d]) * wide(weight[row * a.weight_row_stride + d]);
      }
      out[i] = detail::convert<T>(dot);
    }
  });
}

}  // namespace mlu::kernels
