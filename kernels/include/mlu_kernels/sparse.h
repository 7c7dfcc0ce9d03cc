// Sparse matrix (CSR) times dense matrix, accumulated into a dense output:
//   out[i, :] += (alpha * values[p]) * dense[cols[p], :]   for p in [crow[i], crow[i + 1])
// for every row i, the entries of a row in storage order (the order in which
// PyTorch's CPU adds a coalesced matrix's entries). The caller has put
// beta * self in `out` already. Rows are independent and split over the
// compute threads, so results do not depend on the thread count.
// Float32, Float64, ComplexFloat and ComplexDouble; `alpha` is rounded to the
// values' type first, as the CPU casts it. Column indices must lie in
// [0, dense rows) (the caller's COO / CSR invariants).
#pragma once

#include <complex>
#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

struct SpmmArgs {
  ScalarType type;         // of values, dense and out
  int64_t rows = 0, n = 0;  // out is rows x n; dense has n columns
  const int64_t* crow = nullptr;  // rows + 1 row pointers
  const int64_t* cols = nullptr;
  const void* values = nullptr;
  const void* dense = nullptr;
  int64_t dense_stride0 = 0, dense_stride1 = 0;  // in elements
  void* out = nullptr;
  int64_t out_stride0 = 0, out_stride1 = 0;
  std::complex<double> alpha = 1.0;
};

bool spmm_takes(ScalarType type);
void spmm_csr(const SpmmArgs& args);
// Scalar reference: one output element at a time, the same sums in the same order.
void spmm_csr_ref(const SpmmArgs& args);

}  // namespace mlu::kernels
