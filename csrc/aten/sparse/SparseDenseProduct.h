// out = beta * self + alpha * (S @ dense), for a sparse matrix S of scalars
// given by its entries: the product behind addmm / mm with a COO or CSR
// first operand on mlu. Each entry (rows[i], cols[i], values[i]) adds
// (alpha * values[i]) * dense[cols[i]] to out[rows[i]], in entry order (the
// CPU's order for a coalesced S); beta == 0 ignores self (NaNs included).
// out may be self; it is resized to [num_rows, dense.size(1)] otherwise.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mlu {

at::Tensor& sparse_dense_addmm(const at::Tensor& self, const at::Tensor& rows, const at::Tensor& cols,
                               const at::Tensor& values, int64_t num_rows, const at::Tensor& dense,
                               const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);

}  // namespace torch_mlu
