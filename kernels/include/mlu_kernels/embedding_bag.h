// EmbeddingBag: per bag, the sum / mean / maximum of embedding rows, and the
// backward ops, as PyTorch's CPU computes them (EmbeddingBag.cpp).
//
// Bag b holds positions [bounds[b], bounds[b + 1]) of `indices`; an entry
// equal to padding_idx (>= 0) is skipped (and not counted for the mean). Sum
// may weight each position (per_sample_weights); mean divides by the bag's
// count; max takes each column's largest row (the first one on ties) and
// records its row index (max_indices, -1 for an empty bag). Empty bags give
// zero rows. offset2bag[i] is the bag of position i (-1 past the last bag),
// bag_size[b] the count
// of a bag's non-padding positions. Weight rows are contiguous (row stride
// free); Float16/BFloat16 accumulate in float.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

enum class BagMode { Sum = 0, Mean = 1, Max = 2 };

struct EmbeddingBagArgs {
  ScalarType type;  // of weight, output, per_sample_weights and gradients
  int64_t num_weights = 0, dim = 0, num_indices = 0, num_bags = 0;
  const void* weight = nullptr;
  int64_t weight_row_stride = 0;
  const int64_t* indices = nullptr;
  const int64_t* bounds = nullptr;  // num_bags + 1
  const void* per_sample_weights = nullptr;
  BagMode mode = BagMode::Sum;
  int64_t padding_idx = -1;
};

// What the forward op found wrong (nothing written then): an index outside
// [0, num_weights), or bounds that do not start at 0, decrease or pass the
// end of indices (value: the offending entry).
struct BagCheck {
  enum Kind { Ok, BadIndex, FirstOffsetNotZero, OffsetsDecrease, OffsetPastEnd } kind = Ok;
  int64_t value = 0;
};

// output [num_bags, dim]; offset2bag [num_indices]; bag_size [num_bags];
// max_indices [num_bags, dim] (Max only, else may be nullptr).
BagCheck embedding_bag(const EmbeddingBagArgs& args, void* output, int64_t* offset2bag, int64_t* bag_size,
                       int64_t* max_indices);
// Scalar reference (embedding_bag_ref.cpp): one output element at a time, sums in double.
BagCheck embedding_bag_ref(const EmbeddingBagArgs& args, void* output, int64_t* offset2bag, int64_t* bag_size,
                           int64_t* max_indices);

// grad_weight [num_weights, dim] (overwritten) from grad [num_bags, dim]
// (contiguous); scale_grad_by_freq divides by each row's count in indices.
void embedding_bag_backward(const EmbeddingBagArgs& args, const void* grad, const int64_t* offset2bag,
                            const int64_t* bag_size, const int64_t* max_indices, bool scale_grad_by_freq,
                            void* grad_weight);
// Scalar reference: one grad_weight element at a time, summing its positions (or bags, Max) in double.
void embedding_bag_backward_ref(const EmbeddingBagArgs& args, const void* grad, const int64_t* offset2bag,
                                const int64_t* bag_size, const int64_t* max_indices, bool scale_grad_by_freq,
                                void* grad_weight);

// grad_per_sample_weights [num_indices] = grad[bag] . weight[index] (0 for padding).
void embedding_bag_per_sample_weights_backward(const EmbeddingBagArgs& args, const void* grad,
                                               const int64_t* offset2bag, void* grad_per_sample_weights);
// Scalar reference: each dot product in double.
void embedding_bag_per_sample_weights_backward_ref(const EmbeddingBagArgs& args, const void* grad,
                                                   const int64_t* offset2bag, void* grad_per_sample_weights);

}  // namespace mlu::kernels
