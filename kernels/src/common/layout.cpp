#include "mlu_kernels/layout.h"

#include <utility>

namespace mlu::kernels {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int d = 0; d < shape.ndim; ++d) n *= shape.sizes[d];
  return n;
}

namespace {

// True when the kept dim `outer` and the dim `inner` after it are one run of
// memory for every operand.
bool mergeable(const Shape& shape, Strides* operands[], int n_operands, int outer, int inner) {
  for (int k = 0; k < n_operands; ++k) {
    const int64_t* v = operands[k]->v;
    if (v[outer] != v[inner] * shape.sizes[inner]) return false;
  }
  return true;
}

}  // namespace

void sort_dims_by_stride(Shape& shape, Strides* operands[], int n_operands) {
  // Insertion sort (at most 16 dims), stable, so equal strides keep their order.
  auto outer_first = [&](int a, int b) {  // should dim a come before dim b?
    for (int k = 0; k < n_operands; ++k) {
      const int64_t sa = operands[k]->v[a] < 0 ? -operands[k]->v[a] : operands[k]->v[a];
      const int64_t sb = operands[k]->v[b] < 0 ? -operands[k]->v[b] : operands[k]->v[b];
      if (sa != sb) return sa > sb;
    }
    return false;
  };
  for (int i = 1; i < shape.ndim; ++i) {
    for (int j = i; j > 0 && outer_first(j, j - 1); --j) {
      std::swap(shape.sizes[j], shape.sizes[j - 1]);
      for (int k = 0; k < n_operands; ++k) std::swap(operands[k]->v[j], operands[k]->v[j - 1]);
    }
  }
}

void coalesce(Shape& shape, Strides* operands[], int n_operands) {
  int kept = 0;  // dims [0, kept) are the output so far
  for (int d = 0; d < shape.ndim; ++d) {
    if (shape.sizes[d] == 1) continue;
    if (kept > 0 && mergeable(shape, operands, n_operands, kept - 1, d)) {
      shape.sizes[kept - 1] *= shape.sizes[d];
      for (int k = 0; k < n_operands; ++k) operands[k]->v[kept - 1] = operands[k]->v[d];
      continue;
    }
    shape.sizes[kept] = shape.sizes[d];
    for (int k = 0; k < n_operands; ++k) operands[k]->v[kept] = operands[k]->v[d];
    ++kept;
  }
  shape.ndim = kept;
}

}  // namespace mlu::kernels
