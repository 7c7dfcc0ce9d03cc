// out = beta * self + alpha * (S @ dense), for a sparse matrix S of scalars in
// CSR form (row pointers `crow`, column indices `cols`, `values`): the product
// behind addmm / mm with a COO or CSR first operand on mlu. Each entry of a
// row adds (alpha * value) * dense[col] to that row of out, in storage order
// (the CPU's order for a coalesced S); beta == 0 ignores self (NaNs
// included). out may be self; it is resized to [num_rows, dense.size(1)]
// otherwise. Float and complex values run mlu_kernels/sparse.h's spmm_csr,
// other dtypes compose index_select and index_add.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mlu {

at::Tensor& sparse_dense_addmm(const at::Tensor& self, const at::Tensor& crow, const at::Tensor& cols,
                               const at::Tensor& values, int64_t num_rows, const at::Tensor& dense,
                               const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);

}  // namespace torch_mlu
