// Sparse COO kernels of mlu's own: the ops whose CPU and CUDA kernels differ in
// PyTorch, on the hot paths of sparse training (coalesce, sparse x dense
// products, dense + sparse, masking a dense tensor by a sparse one, as the
// sparse embedding gradients and SGD / SparseAdam / Adagrad use them). The
// device-generic ones are SparseGenericOps.cpp; the rest falls back to the CPU
// (Note [Sparse CPU fallback]).
//
// Each kernel works on the indices and values with mlu's dense kernels, so it
// runs on the device in queue order. Coalescing reads one number back (how
// many distinct indices there are), as CUDA's does. Inputs off the common path
// (mixed dtypes, mismatched sizes, uncoalesced sparse + sparse) take the CPU
// fallback, which raises the CPU's errors and computes the CPU's results.
//
// Each registered kernel runs under a device guard on its first tensor (self,
// else out=), as CUDA's generated wrappers do: a sparse tensor built while
// another mlu device is current would otherwise get its placeholder indices
// and values on that device (SparseTensorImpl's constructor allocates them on
// the current device of the device type).
#include <ATen/DeviceGuard.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/_convert_indices_from_coo_to_csr.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/copy_sparse_to_sparse.h>
#include <ATen/ops/sparse_mask_ops.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/sparse/SparseDenseProduct.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

// Row-major linear index of each entry over the sparse dimensions.
at::Tensor linear_index(const at::Tensor& indices, at::IntArrayRef sizes) {
  const int64_t sparse_dim = indices.size(0);
  if (sparse_dim == 0) return at::zeros({indices.size(1)}, indices.options());
  at::Tensor linear = indices.select(0, 0).clone();
  for (int64_t d = 1; d < sparse_dim; ++d) linear.mul_(sizes[d]).add_(indices.select(0, d));
  return linear;
}

// The inverse of linear_index: [sparse_dim, n] indices.
at::Tensor split_linear_index(at::Tensor linear, at::IntArrayRef sizes, int64_t sparse_dim) {
  std::vector<at::Tensor> rows(sparse_dim);
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    rows[d] = linear.remainder(sizes[d]);
    if (d > 0) linear = linear.div(sizes[d], "floor");
  }
  return sparse_dim == 0 ? linear.new_empty({0, linear.size(0)}) : at::stack(rows);
}

at::Tensor sparse_like(T self, at::Tensor indices, at::Tensor values, bool coalesced) {
  return at::_sparse_coo_tensor_with_dims_and_tensors(self.sparse_dim(), self.dense_dim(), self.sizes(), indices,
                                                      values, values.options().layout(at::kSparse), coalesced);
}

// Sorts the entries by index (stably, as the CPU does) and sums the values of
// equal indices in that order.
at::Tensor coalesce_mlu(T self) {
  TORCH_INTERNAL_ASSERT(self.is_sparse());
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  const int64_t nnz = self._nnz();
  if (nnz < 2) {
    at::Tensor copy = self.clone();
    copy._coalesced_(true);
    return copy;
  }
  const at::Tensor indices = self._indices();
  const at::Tensor values = self._values();
  const at::IntArrayRef sparse_sizes = self.sizes().slice(0, self.sparse_dim());
  auto [sorted, order] = linear_index(indices, sparse_sizes).sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  auto [unique, inverse, counts] = at::unique_consecutive(sorted, /*return_inverse=*/true);
  std::vector<int64_t> value_sizes = values.sizes().vec();
  value_sizes[0] = unique.size(0);
  at::Tensor summed = at::zeros(value_sizes, values.options()).index_add_(0, inverse, values.index_select(0, order));
  return sparse_like(self, split_linear_index(unique, sparse_sizes, self.sparse_dim()), summed, true);
}

// out = dense + alpha * sparse (CPU: add_out_dense_sparse_cpu).
at::Tensor& add_dense_sparse(T dense, T sparse, const at::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(dense.sizes().equals(sparse.sizes()),
              "add: expected 'self' and 'other' to have same size, but self "
              "has size ",
              dense.sizes(), " while other has size ", sparse.sizes(),
              " (FYI: dense-sparse addition does not currently support broadcasting)");
  const at::ScalarType common = at::promoteTypes(dense.scalar_type(), sparse.scalar_type());
  TORCH_CHECK(at::canCast(common, out.scalar_type()), "Can't convert result type ", common, " to output ",
              out.scalar_type(), " in add operation");
  TORCH_CHECK(!out.is_sparse(), "add: a dense + sparse sum is dense; out= must be a dense tensor");
  at::Tensor sum = out.scalar_type() == common ? out : dense.to(common);
  if (!sum.is_same(dense)) {
    sum.resize_(dense.sizes());
    sum.copy_(dense);
  }
  if (sparse._nnz() > 0) {
    const at::Tensor indices = sparse._indices();
    c10::List<std::optional<at::Tensor>> index;
    for (int64_t d = 0; d < sparse.sparse_dim(); ++d) index.push_back(indices.select(0, d));
    sum.index_put_(index, sparse._values().to(common).mul(alpha), /*accumulate=*/true);
  }
  if (!sum.is_same(out)) {
    out.resize_(dense.sizes());
    out.copy_(sum);
  }
  return out;
}

// Both operands coalesced, of one size, dtype and layout: the sum of their
// concatenation, coalesced, is the CPU's merge of the two sorted lists.
bool is_coalesced_sum(T self, T other, T out) {
  return self.is_coalesced() && other.is_coalesced() && self._nnz() > 0 && other._nnz() > 0 &&
         self.sizes().equals(other.sizes()) && self.sparse_dim() == other.sparse_dim() &&
         self.scalar_type() == other.scalar_type() && out.is_sparse() && out.scalar_type() == self.scalar_type() &&
         self.scalar_type() != at::kBool;
}

at::Tensor& add_out_sparse_mlu(T self, T other, const at::Scalar& alpha, at::Tensor& out) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  if (!self.is_sparse() && other.is_sparse()) return add_dense_sparse(self, other, alpha, out);
  TORCH_CHECK(other.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  if (!is_coalesced_sum(self, other, out)) {
    return sparse_cpu_fallback<ATEN_OP2(add, out)>(self, other, alpha, out);
  }
  at::Tensor values = at::cat({self._values(), other._values().mul(alpha)});
  at::Tensor concatenated = sparse_like(self, at::cat({self._indices(), other._indices()}, 1), values, false);
  at::copy_sparse_to_sparse_(out, coalesce_mlu(concatenated));
  return out;
}

// sparse * a 0-dim dense tensor (or a wrapped Scalar): the values scaled, the
// indices and their coalesced state kept (CPU: mul_out_sparse_zerodim).
at::Tensor& mul_out_sparse_mlu(T self, T other, at::Tensor& out) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  const bool scalar_other = self.is_sparse() && !other.is_sparse() && other.dim() == 0;
  const bool scalar_self = other.is_sparse() && !self.is_sparse() && self.dim() == 0;
  if (!(scalar_other || scalar_self) || !out.is_sparse()) {
    return sparse_cpu_fallback<ATEN_OP2(mul, out)>(self, other, out);
  }
  const at::Tensor& sparse = scalar_other ? self : other;
  const at::Tensor& scalar = scalar_other ? other : self;
  if (out.is_same(sparse)) {
    out._values().mul_(scalar);
    return out;
  }
  at::Tensor values = sparse._values().mul(scalar).to(out.scalar_type());
  at::copy_sparse_to_sparse_(out, sparse_like(sparse, sparse._indices(), values, sparse.is_coalesced()));
  return out;
}

// A 2-D sparse matrix of scalars times a dense matrix, all of one dtype.
bool is_sparse_dense_product(T self, T sparse, T dense) {
  return sparse.sparse_dim() == 2 && sparse.dense_dim() == 0 && dense.dim() == 2 && !dense.is_sparse() &&
         !self.is_sparse() && sparse.size(1) == dense.size(0) && sparse.scalar_type() == dense.scalar_type() &&
         self.scalar_type() == dense.scalar_type() &&
         at::is_expandable_to(self.sizes(), {sparse.size(0), dense.size(1)});
}

// out = beta * self + alpha * (sparse @ dense) (CPU: addmm_out_sparse_dense_cpu):
// each entry (i, j, v) adds (alpha * v) * dense[j] to row i, in index order.
at::Tensor& addmm_out_sparse_mlu(T self, T sparse, T dense, const at::Scalar& beta, const at::Scalar& alpha,
                                 at::Tensor& out) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  if (!is_sparse_dense_product(self, sparse, dense) || out.is_sparse() || out.scalar_type() != dense.scalar_type()) {
    return sparse_cpu_fallback<ATEN_OP2(addmm, out)>(self, sparse, dense, beta, alpha, out);
  }
  const at::Tensor coalesced = sparse.coalesce();
  const at::Tensor indices = coalesced._indices();
  const at::Tensor crow = at::_convert_indices_from_coo_to_csr(indices.select(0, 0), sparse.size(0));
  return sparse_dense_addmm(self, crow, indices.select(0, 1), coalesced._values(), sparse.size(0), dense, beta, alpha,
                            out);
}

at::Tensor addmm_sparse_mlu(T self, T sparse, T dense, const at::Scalar& beta, const at::Scalar& alpha) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  at::Tensor out = at::empty({0}, dense.options());
  return addmm_out_sparse_mlu(self, sparse, dense, beta, alpha, out);
}

at::Tensor& addmm_sparse_mlu_(at::Tensor& self, T sparse, T dense, const at::Scalar& beta, const at::Scalar& alpha) {
  return addmm_out_sparse_mlu(self, sparse, dense, beta, alpha, self);
}

// A dense tensor's values at a sparse tensor's indices, as a sparse tensor with
// the mask's indices (coalesced as the mask is).
at::Tensor sparse_mask_mlu(T self, T mask) {
  const c10::OptionalDeviceGuard guard(at::device_of(self));
  if (self.is_sparse() || !self.sizes().equals(mask.sizes()) || mask._nnz() == 0) {
    return sparse_cpu_fallback<ATEN_OP(sparse_mask)>(self, mask);
  }
  const at::Tensor indices = mask._indices();
  c10::List<std::optional<at::Tensor>> index;
  for (int64_t d = 0; d < mask.sparse_dim(); ++d) index.push_back(indices.select(0, d));
  return at::_sparse_coo_tensor_with_dims_and_tensors(mask.sparse_dim(), mask.dense_dim(), mask.sizes(),
                                                      indices.clone(), self.index(index),
                                                      self.options().layout(at::kSparse), mask.is_coalesced());
}

// The CPU fallback's copy back of a written sparse argument.
at::Tensor copy_from_and_resize_sparse(T self, T dst) {
  const c10::OptionalDeviceGuard guard(at::device_of(dst));
  if (dst.layout() == at::kSparse) {
    const_cast<at::Tensor&>(dst).copy_(self);
    return dst;
  }
  // A compressed tensor resizes after a template whose index tensors it copies the options of, device included
  // (and resize_as_sparse_ refuses a template on another device, as CUDA's does): the template comes to dst first.
  const at::Tensor moved = self.to(dst.device());
  dst.resize_as_sparse_(moved);
  const_cast<at::Tensor&>(dst).copy_(moved);
  return dst;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SparseOps.inc"
