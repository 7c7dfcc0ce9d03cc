// See sparse_table.h. Compiled once per ISA (Note [Per-ISA variants]); the
// adds are not contracted into FMAs (the library compiles in ISO mode), so
// every ISA gives spmm_csr_ref's bits.
#include "sparse_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

template <class T>
void spmm_rows(const SpmmArgs& a, int64_t begin, int64_t end) {
  const T alpha = static_cast<T>(a.alpha.real());
  const T* values = static_cast<const T*>(a.values);
  const T* dense = static_cast<const T*>(a.dense);
  T* out = static_cast<T*>(a.out);
  const bool unit = a.out_stride1 == 1 && a.dense_stride1 == 1;
  for (int64_t i = begin; i < end; ++i) {
    T* __restrict row = out + i * a.out_stride0;
    for (int64_t p = a.crow[i]; p < a.crow[i + 1]; ++p) {
      const T scale = alpha * values[p];
      const T* __restrict source = dense + a.cols[p] * a.dense_stride0;
      if (unit) {
        for (int64_t j = 0; j < a.n; ++j) row[j] += scale * source[j];
      } else {
        for (int64_t j = 0; j < a.n; ++j) row[j * a.out_stride1] += scale * source[j * a.dense_stride1];
      }
    }
  }
}

}  // namespace

const detail::SpmmTable& spmm_table() {
  static const detail::SpmmTable table{&spmm_rows<float>, &spmm_rows<double>};
  return table;
}

}  // namespace mlu::kernels::MLU_ISA_NS
