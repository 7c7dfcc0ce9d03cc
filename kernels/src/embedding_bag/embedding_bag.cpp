#include "mlu_kernels/embedding_bag.h"

#include <algorithm>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

BagCheck check(const EmbeddingBagArgs& a) {
  if (a.num_bags > 0 && a.bounds[0] != 0) return {BagCheck::FirstOffsetNotZero, a.bounds[0]};
  for (int64_t b = 0; b < a.num_bags; ++b) {
    if (a.bounds[b + 1] < a.bounds[b]) return {BagCheck::OffsetsDecrease, a.bounds[b + 1]};
    if (a.bounds[b + 1] > a.num_indices) return {BagCheck::OffsetPastEnd, a.bounds[b + 1]};
  }
  for (int64_t i = 0; i < a.num_indices; ++i) {
    if (a.indices[i] < 0 || a.indices[i] >= a.num_weights) return {BagCheck::BadIndex, a.indices[i]};
  }
  return {};
}

bool skipped(const EmbeddingBagArgs& a, int64_t index) { return a.padding_idx >= 0 && index == a.padding_idx; }

}  // namespace

BagCheck embedding_bag(const EmbeddingBagArgs& a, void* output, int64_t* offset2bag, int64_t* bag_size,
                       int64_t* max_indices) {
  detail::VerboseCall call("embedding_bag");
  if (call) {
    call.describe(a.type, "indices%lld bags%lld dim%lld", detail::lld(a.num_indices), detail::lld(a.num_bags),
                  detail::lld(a.dim));
  }
  const BagCheck found = check(a);
  if (found.kind != BagCheck::Ok) return found;
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* weight = static_cast<const T*>(a.weight);
    const T* psw = static_cast<const T*>(a.per_sample_weights);
    T* out = static_cast<T*>(output);
    // Positions past the last bag (include_last_offset) belong to none.
    std::fill(offset2bag + a.bounds[a.num_bags], offset2bag + a.num_indices, int64_t{-1});
    parallel_for(0, a.num_bags, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.dim, 1)), [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(a.dim));
      for (int64_t b = lo; b < hi; ++b) {
        std::fill(acc.begin(), acc.end(), A(0));
        int64_t* best = a.mode == BagMode::Max ? max_indices + b * a.dim : nullptr;
        if (best) std::fill_n(best, a.dim, int64_t{-1});
        int64_t count = 0;
        for (int64_t i = a.bounds[b]; i < a.bounds[b + 1]; ++i) {
          offset2bag[i] = b;
          const int64_t index = a.indices[i];
          if (skipped(a, index)) continue;
          const T* row = weight + index * a.weight_row_stride;
          if (a.mode == BagMode::Max) {
            for (int64_t d = 0; d < a.dim; ++d) {
              const A v = detail::convert<A>(row[d]);
              if (count == 0 || v > acc[static_cast<size_t>(d)]) {
                acc[static_cast<size_t>(d)] = v;
                best[d] = index;
              }
            }
          } else {
            const A scale = psw ? detail::convert<A>(psw[i]) : A(1);
            for (int64_t d = 0; d < a.dim; ++d) acc[static_cast<size_t>(d)] += detail::convert<A>(row[d]) * scale;
          }
          ++count;
        }
        bag_size[b] = count;
        const A divisor = a.mode == BagMode::Mean && count > 0 ? static_cast<A>(count) : A(1);
        for (int64_t d = 0; d < a.dim; ++d) out[b * a.dim + d] = detail::convert<T>(acc[static_cast<size_t>(d)] / divisor);
      }
    });
  });
  return found;
}

void embedding_bag_backward(const EmbeddingBagArgs& a, const void* grad_, const int64_t* offset2bag,
                            const int64_t* bag_size, const int64_t* max_indices, bool scale_grad_by_freq,
                            void* grad_weight) {
  detail::VerboseCall call("embedding_bag_backward");
  if (call) {
    call.describe(a.type, "indices%lld bags%lld dim%lld", detail::lld(a.num_indices), detail::lld(a.num_bags),
                  detail::lld(a.dim));
  }
  std::vector<int64_t> frequency;
  if (scale_grad_by_freq) {
    frequency.assign(static_cast<size_t>(a.num_weights), 0);
    for (int64_t i = 0; i < a.num_indices; ++i) ++frequency[static_cast<size_t>(a.indices[i])];
  }
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* grad = static_cast<const T*>(grad_);
    const T* psw = static_cast<const T*>(a.per_sample_weights);
    T* gw = static_cast<T*>(grad_weight);
    std::fill_n(gw, a.num_weights * a.dim, T(0));
    const auto add = [&](int64_t row, int64_t d, A value) {
      if (scale_grad_by_freq) value /= static_cast<A>(frequency[static_cast<size_t>(row)]);
      T& g = gw[row * a.dim + d];
      g = detail::convert<T>(detail::convert<A>(g) + value);
    };
    // Threads split the columns: no two write one element.
    parallel_for(0, a.dim, std::max<int64_t>(1, a.dim / std::max(1, num_threads())), [&](int64_t lo, int64_t hi) {
      if (a.mode == BagMode::Max) {
        for (int64_t b = 0; b < a.num_bags; ++b) {
          for (int64_t d = lo; d < hi; ++d) {
            const int64_t row = max_indices[b * a.dim + d];
            if (row >= 0) add(row, d, detail::convert<A>(grad[b * a.dim + d]));
          }
        }
        return;
      }
      for (int64_t i = 0; i < a.num_indices; ++i) {
        const int64_t index = a.indices[i], b = offset2bag[i];
        if (b < 0 || skipped(a, index)) continue;
        A scale = psw ? detail::convert<A>(psw[i]) : A(1);
        if (a.mode == BagMode::Mean) scale /= static_cast<A>(bag_size[b]);
        for (int64_t d = lo; d < hi; ++d) add(index, d, detail::convert<A>(grad[b * a.dim + d]) * scale);
      }
    });
  });
}

void embedding_bag_per_sample_weights_backward(const EmbeddingBagArgs& a, const void* grad_,
                                               const int64_t* offset2bag, void* grad_per_sample_weights) {
  detail::VerboseCall call("embedding_bag_per_sample_weights_backward");
  if (call) {
    call.describe(a.type, "indices%lld bags%lld dim%lld", detail::lld(a.num_indices), detail::lld(a.num_bags),
                  detail::lld(a.dim));
  }
  detail::dispatch_floating(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* grad = static_cast<const T*>(grad_);
    const T* weight = static_cast<const T*>(a.weight);
    T* out = static_cast<T*>(grad_per_sample_weights);
    parallel_for(0, a.num_indices, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.dim, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t index = a.indices[i];
        A dot = 0;
        if (offset2bag[i] >= 0 && !skipped(a, index)) {
          const T* row = weight + index * a.weight_row_stride;
          const T* g = grad + offset2bag[i] * a.dim;
          for (int64_t d = 0; d < a.dim; ++d) dot += detail::convert<A>(g[d]) * detail::convert<A>(row[d]);
        }
        out[i] = detail::convert<T>(dot);
      }
    });
  });
}

}  // namespace mlu::kernels
