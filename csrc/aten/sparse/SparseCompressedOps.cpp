// Compressed sparse (CSR) kernels of mlu's own, where PyTorch's CPU and CUDA
// kernels differ: the index conversions between COO rows and CSR row pointers
// (every conversion between the layouts goes through them) and CSR matrix x
// dense matrix products. Built from mlu's dense kernels on the indices and
// values, so they run on the device in queue order without reading anything
// back. Batched or mixed-dtype inputs take the CPU fallback, which raises the
// CPU's errors (Note [Sparse CPU fallback]).
#include <ATen/DeviceGuard.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/_convert_indices_from_coo_to_csr_ops.h>
#include <ATen/ops/_convert_indices_from_csr_to_coo_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/Fallback.h"
#include "csrc/aten/sparse/SparseDenseProduct.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

// Row pointers of `size` rows from the sorted row index of each entry:
// crow[i] = how many entries lie in rows before i.
at::Tensor& coo_to_csr_out_mlu(T rows, int64_t size, bool out_int32, at::Tensor& out) {
  if (rows.dim() != 1) {
    return cpu_fallback<ATEN_OP2(_convert_indices_from_coo_to_csr, out)>(rows, size, out_int32, out);
  }
  at::Tensor counts = at::zeros({size + 1}, rows.options().dtype(at::kLong));
  counts.index_add_(0, rows.to(at::kLong).add(1), at::ones_like(rows, at::kLong)).cumsum_(0);
  out.resize_({size + 1});
  out.copy_(counts);
  return out;
}

at::Tensor coo_to_csr_mlu(T rows, int64_t size, bool out_int32) {
  at::Tensor out = at::empty({size + 1}, rows.options().dtype(out_int32 ? at::kInt : at::kLong));
  return coo_to_csr_out_mlu(rows, size, out_int32, out);
}

// [2, nnz] COO indices (rows first, or columns first when transposed) from row
// pointers and column indices.
at::Tensor& csr_to_coo_out_mlu(T crow, T col, bool out_int32, bool transpose, at::Tensor& out) {
  if (crow.dim() != 1 || col.dim() != 1) {
    return cpu_fallback<ATEN_OP2(_convert_indices_from_csr_to_coo, out)>(crow, col, out_int32, transpose, out);
  }
  const int64_t nrows = crow.numel() - 1;
  const at::Tensor counts = crow.slice(0, 1).sub(crow.slice(0, 0, nrows));
  const at::Tensor row = at::repeat_interleave(at::arange(nrows, crow.options().dtype(at::kLong)), counts.to(at::kLong),
                                               /*dim=*/0, /*output_size=*/col.numel());
  const at::Tensor column = col.to(at::kLong);
  out.resize_({2, col.numel()});
  out.copy_(transpose ? at::stack({column, row}) : at::stack({row, column}));
  return out;
}

at::Tensor csr_to_coo_mlu(T crow, T col, bool out_int32, bool transpose) {
  at::Tensor out = at::empty({2, col.numel()}, crow.options().dtype(out_int32 ? at::kInt : at::kLong));
  return csr_to_coo_out_mlu(crow, col, out_int32, transpose, out);
}

// out = beta * self + alpha * (csr @ dense) for a 2-D CSR matrix of scalars:
// each stored entry (i, j, v) adds (alpha * v) * dense[j] to row i.
at::Tensor& addmm_out_csr_mlu(T self, T csr, T dense, const at::Scalar& beta, const at::Scalar& alpha,
                              at::Tensor& out) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));  // as CUDA's generated wrapper
  const bool common = csr.layout() == at::kSparseCsr && csr.dim() == 2 && csr.dense_dim() == 0 &&
                      dense.layout() == at::kStrided && dense.dim() == 2 && self.layout() == at::kStrided &&
                      out.layout() == at::kStrided && csr.size(1) == dense.size(0) &&
                      csr.scalar_type() == dense.scalar_type() && self.scalar_type() == dense.scalar_type() &&
                      out.scalar_type() == dense.scalar_type() &&
                      at::is_expandable_to(self.sizes(), {csr.size(0), dense.size(1)});
  if (!common) {
    return sparse_csr_cpu_fallback<ATEN_OP2(addmm, out)>(self, csr, dense, beta, alpha, out);
  }
  return sparse_dense_addmm(self, csr.crow_indices(), csr.col_indices(), csr.values(), csr.size(0), dense, beta, alpha,
                            out);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SparseCompressedOps.inc"
