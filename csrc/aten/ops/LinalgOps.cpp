// Dense linear algebra on mlu: PyTorch's own device-generic structured
// impls (BatchLinearAlgebra.cpp) with the LAPACK stubs they call registered
// for PrivateUse1.
//
// Note [Linalg through PyTorch's impls]
// libtorch_cpu exports every piece of torch.linalg's generic layer: the meta
// functions (shape, dtype and layout checks, outputs laid out as batches of
// column-major matrices), the impls (copies, triangles, pivots, the calls to
// `<op>_stub(device_type, ...)`) and the stubs themselves. Registering a
// stub for PrivateUse1 (REGISTER_PRIVATEUSE1_DISPATCH) and the ops for mlu
// (MLUFunctional / MLUOut over at::native::structured_<op>_out) gives mlu the
// CPU's checks, error messages, layouts and autograd formulas unchanged; the
// stubs below launch the batched LAPACK kernels (mlu_kernels/linalg.h) as
// device tasks. They capture pointers and sizes, never tensors (Note in
// KernelArgs.h), and write `info` on the device: the `_ex` ops return it
// without a sync, the others raise the CPU's errors through
// _linalg_check_errors. Where the generic code is not device-clean — its
// cholesky_inverse keeps `infos` on the host — this file has its own
// wrapper, written after the CPU's.
#include <ATen/native/BatchLinearAlgebra.h>

#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/TransposeType.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det_native.h>
#include <ATen/ops/_linalg_eigh_native.h>
#include <ATen/ops/_linalg_slogdet_native.h>
#include <ATen/ops/_linalg_solve_ex_native.h>
#include <ATen/ops/_linalg_svd_native.h>
#include <ATen/ops/cholesky_inverse_native.h>
#include <ATen/ops/cholesky_native.h>
#include <ATen/ops/geqrf_native.h>
#include <ATen/ops/linalg_cholesky_ex_native.h>
#include <ATen/ops/linalg_eig_native.h>
#include <ATen/ops/_linalg_eigvals_native.h>
#include <ATen/ops/linalg_eigvals_native.h>
#include <ATen/ops/linalg_householder_product_native.h>
#include <ATen/ops/linalg_inv_ex_native.h>
#include <ATen/ops/linalg_ldl_factor_ex_native.h>
#include <ATen/ops/linalg_ldl_solve_native.h>
#include <ATen/ops/linalg_lu_factor_ex_native.h>
#include <ATen/ops/linalg_lu_native.h>
#include <ATen/ops/lu_unpack_native.h>
#include <ATen/ops/linalg_lu_solve_native.h>
#include <ATen/ops/linalg_qr_native.h>
#include <ATen/ops/linalg_solve_triangular_native.h>
#include <ATen/ops/ormqr_native.h>
#include <ATen/ops/triangular_solve_native.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/linalg.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using at::native::TransposeType;

// t's element type for LAPACK. Other dtypes fail as the CPU's AT_DISPATCH
// does, naming the kernel (`kernel`: the CPU's name with _mlu for _cpu); a
// process without LAPACK gets a clear error.
k::ScalarType lapack_dtype(T t, const char* kernel) {
  const at::ScalarType st = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(
      st == at::kFloat || st == at::kDouble || st == at::kComplexFloat || st == at::kComplexDouble, '"', kernel,
      "\" not implemented for '", c10::toString(st), "'");
  const k::ScalarType type = require_kernel_dtype(st, kernel);
  TORCH_CHECK(k::lapack_available(type), kernel, ": this process has no LAPACK for ", st,
              " (torch_mlu calls the oneMKL PyTorch's CPU build carries; this PyTorch has none)");
  return type;
}

// t (..., rows, cols) as the CPU's LAPACK kernels see it: consecutive
// column-major matrices, leading dimension max(1, rows), rows * cols apart
// (batchCount / matrixStride). The generic layer lays the tensors it hands
// to the stubs out that way; `column_major` = false where it may hand over
// the transpose instead (the triangular solve's A, read with the transpose
// flag and uplo adjusted).
k::MatrixBatch matrix_batch(T t, bool column_major = true) {
  k::MatrixBatch m;
  m.data = const_cast<void*>(device_ptr<const void>(t));
  m.rows = t.size(-2);
  m.cols = t.size(-1);
  m.ld = std::max<int64_t>(1, m.rows);
  m.batch = at::native::batchCount(t);
  m.batch_stride = m.rows * m.cols;
  const bool packed = column_major ? t.mT().is_contiguous() : t.is_contiguous() || t.mT().is_contiguous();
  TORCH_INTERNAL_ASSERT(packed || t.numel() <= 1, "linalg: expected a batch of packed matrices, got sizes ", t.sizes(),
                        " strides ", t.strides());
  return m;
}

int32_t* int_data(T t) { return device_ptr<int32_t>(t); }

// The CPU kernels read every operand with data_ptr<scalar_t>() of the
// input's type; an out= tensor of another dtype fails there with this
// message, and must here too (raw pointers would reinterpret it).
void check_scalar_type(T t, at::ScalarType expected) {
  TORCH_CHECK(!t.defined() || t.scalar_type() == expected, "expected scalar type ", expected, " but found ",
              t.scalar_type());
}

char blas_trans(TransposeType trans) { return at::native::to_blas(trans); }

// ---- stubs (signatures: ATen/native/BatchLinearAlgebra.h) -------------------

void cholesky_mlu(T input, T infos, bool upper) {
  const auto type = lapack_dtype(input, "cholesky_mlu");
  if (input.numel() == 0) return;
  const auto a = matrix_batch(input);
  int32_t* info = int_data(infos);
  launch_kernel(input.device().index(), "cholesky", [=] { k::cholesky(type, a, upper, info); });
}

// linalg_cholesky_ex's impl: the CPU's structured impl (L <- tril(A) or
// triu(A), potrf, the optional error check) with the copy, the
// factorization and the triangle in one device task (k::cholesky_of) instead
// of the three the generic impl launches for a non-CPU device. False where
// A's layout does not allow it (A partly overlapping L, too many dims): the
// caller then runs the generic impl.
bool cholesky_ex_fused(T A, bool upper, bool check_errors, T L, T info) {
  if (L.numel() == 0 || A.dim() > k::kMaxDims || L.scalar_type() != A.scalar_type()) return false;
  if (A.storage().is_alias_of(L.storage()) && at::get_overlap_status(L, A) != at::MemOverlapStatus::Full) return false;
  const auto type = lapack_dtype(L, "cholesky_mlu");
  k::StridedMatrices a;
  a.data = device_ptr<const void>(A);
  a.batch.ndim = static_cast<int>(A.dim()) - 2;
  for (int d = 0; d < a.batch.ndim; ++d) {
    a.batch.sizes[d] = A.size(d);
    a.batch_strides.v[d] = A.stride(d);
  }
  a.row_stride = A.stride(-2);
  a.col_stride = A.stride(-1);
  const auto l = matrix_batch(L);
  int32_t* infos = int_data(info);
  launch_kernel(L.device().index(), "cholesky", [=] { k::cholesky_of(type, a, l, upper, infos); });
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
  return true;
}

at::Tensor& cholesky_inverse_mlu(at::Tensor& result, at::Tensor& infos, bool upper) {
  const auto type = lapack_dtype(result, "cholesky_inverse_out_mlu");
  if (result.numel() == 0) return result;
  const auto a = matrix_batch(result);
  int32_t* info = int_data(infos);
  launch_kernel(result.device().index(), "cholesky_inverse", [=] { k::cholesky_inverse(type, a, upper, info); });
  return result;
}

void lu_factor_mlu(T input, T pivots, T infos, bool compute_pivots) {
  TORCH_CHECK(compute_pivots, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  const auto type = lapack_dtype(input, "lu_mlu");
  if (input.numel() == 0) return;
  const auto a = matrix_batch(input);
  int32_t* piv = int_data(pivots);
  const int64_t pivot_stride = pivots.size(-1);
  int32_t* info = int_data(infos);
  launch_kernel(input.device().index(), "lu_factor", [=] { k::lu_factor(type, a, piv, pivot_stride, info); });
}

// The LU matrix each matrix of B's batch uses when LU's batch broadcasts to
// B's (the CPU's BroadcastLinearIndices); empty when they match.
std::shared_ptr<std::vector<int64_t>> broadcast_index(at::IntArrayRef from, at::IntArrayRef to) {
  if (from.equals(to)) return nullptr;
  const int64_t count = c10::multiply_integers(from);
  const at::Tensor index =
      at::arange(count, at::TensorOptions().dtype(at::kLong)).view(from).broadcast_to(to).contiguous();
  const int64_t* p = index.const_data_ptr<int64_t>();  // on the host
  return std::make_shared<std::vector<int64_t>>(p, p + index.numel());
}

void lu_solve_mlu(T LU, T pivots, T B, TransposeType trans) {
  const auto type = lapack_dtype(LU, "linalg.lu_solve_mlu");
  check_scalar_type(B, LU.scalar_type());
  if (B.numel() == 0) return;
  // As the CPU: LU's batch may broadcast to B's (`index`), and a 2-d LU serves every matrix of B.
  k::MatrixBatch lu = matrix_batch(LU);
  lu.batch_stride = LU.dim() > 2 ? LU.stride(-3) : 0;
  const auto b = matrix_batch(B);
  const int32_t* piv = device_ptr<const int32_t>(pivots);
  const int64_t pivot_stride = pivots.dim() > 1 ? pivots.stride(-2) : 0;
  const int64_t pivot_count = pivots.numel();
  const auto index = broadcast_index(LU.sizes().slice(0, LU.dim() - 2), B.sizes().slice(0, B.dim() - 2));
  const char t = blas_trans(trans);
  // Out-of-range pivots would send getrs outside the matrix: checked on the
  // device, failing the task with the CPU's message (raised at the next sync).
  launch_kernel(LU.device().index(), "lu_solve", [=](mlu::TaskContext& context) {
    for (int64_t i = 0; i < pivot_count; ++i) {
      if (piv[i] < 1) {
        return context.fail(
            "Pivots given to lu_solve must all be greater or equal to 1. Did you properly pass the "
            "result of lu_factor?");
      }
      if (piv[i] > lu.rows) {
        return context.fail(
            "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). Did you properly "
            "pass the result of lu_factor?");
      }
    }
    k::lu_solve(type, lu, piv, pivot_stride, b, index ? index->data() : nullptr, t);
  });
}

void triangular_solve_mlu(T A, T B, bool left, bool upper, TransposeType trans, bool unitriangular) {
  const auto type = lapack_dtype(A, "triangular_solve_mlu");
  check_scalar_type(B, A.scalar_type());
  if (A.numel() == 0 || B.numel() == 0) return;
  const auto a = matrix_batch(A, /*column_major=*/false);
  const auto b = matrix_batch(B);
  TORCH_INTERNAL_ASSERT(a.batch == b.batch);
  const char t = blas_trans(trans);
  launch_kernel(A.device().index(), "triangular_solve",
                [=] { k::triangular_solve(type, a, b, nullptr, left, upper, t, unitriangular); });
}

void ldl_factor_mlu(T LD, T pivots, T infos, bool upper, bool hermitian) {
  const auto type = lapack_dtype(LD, "ldl_factor_kernel_mlu");
  if (LD.numel() == 0) return;
  const auto a = matrix_batch(LD);
  int32_t* piv = int_data(pivots);
  const int64_t pivot_stride = pivots.size(-1);
  int32_t* info = int_data(infos);
  launch_kernel(LD.device().index(), "ldl_factor",
                [=] { k::ldl_factor(type, a, piv, pivot_stride, info, upper, hermitian); });
}

void ldl_solve_mlu(T LD, T pivots, T result, bool upper, bool hermitian) {
  const auto type = lapack_dtype(LD, "ldl_solve_kernel_mlu");
  check_scalar_type(result, LD.scalar_type());
  if (result.numel() == 0) return;
  // As the CPU: pivots of any integer dtype, read as int32.
  const at::Tensor pivots_int = pivots.to(at::kInt).contiguous();
  k::MatrixBatch ld = matrix_batch(LD);
  ld.batch_stride = LD.dim() > 2 ? LD.stride(-3) : 0;
  const auto b = matrix_batch(result);
  const int32_t* piv = device_ptr<const int32_t>(pivots_int);
  const int64_t pivot_stride = pivots_int.dim() > 1 ? pivots_int.stride(-2) : 0;
  const int64_t pivot_count = pivots_int.numel();
  // The CPU indexes LD with B's batch index even where LD's batch is smaller
  // (reading past it); here LD's batch broadcasts to B's.
  const auto index = broadcast_index(LD.sizes().slice(0, LD.dim() - 2), result.sizes().slice(0, result.dim() - 2));
  launch_kernel(LD.device().index(), "ldl_solve", [=](mlu::TaskContext& context) {
    for (int64_t i = 0; i < pivot_count; ++i) {
      const int64_t p = piv[i] < 0 ? -static_cast<int64_t>(piv[i]) : piv[i];
      if (p < 1) {
        return context.fail(
            "Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the "
            "result of ldl_factor?");
      }
      if (p > ld.rows) {
        return context.fail(
            "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly "
            "pass the result of ldl_factor?");
      }
    }
    k::ldl_solve(type, ld, piv, pivot_stride, b, index ? index->data() : nullptr, upper, hermitian);
  });
}

void geqrf_mlu(T input, T tau) {
  const auto type = lapack_dtype(input, "geqrf_mlu");
  check_scalar_type(tau, input.scalar_type());
  if (input.numel() == 0) return;
  const auto a = matrix_batch(input);
  void* taus = device_ptr(tau);
  const int64_t tau_stride = tau.size(-1);
  launch_kernel(input.device().index(), "geqrf", [=] { k::geqrf(type, a, taus, tau_stride); });
}

at::Tensor& orgqr_mlu(at::Tensor& result, T tau) {
  const auto type = lapack_dtype(result, "orgqr_mlu");
  check_scalar_type(tau, result.scalar_type());
  if (result.numel() == 0) return result;
  const auto a = matrix_batch(result);
  TORCH_INTERNAL_ASSERT(a.rows >= a.cols && a.cols >= tau.size(-1));
  const void* taus = device_ptr<const void>(tau);
  const int64_t tau_stride = tau.size(-1), k = tau.size(-1);
  launch_kernel(result.device().index(), "orgqr", [=] { k::orgqr(type, a, taus, tau_stride, k); });
  return result;
}

void ormqr_mlu(T input, T tau, T other, bool left, bool transpose) {
  const auto type = lapack_dtype(input, "ormqr_mlu");
  check_scalar_type(tau, input.scalar_type());
  check_scalar_type(other, input.scalar_type());
  if (other.numel() == 0) return;
  const auto a = matrix_batch(input);
  const auto c = matrix_batch(other);
  const void* taus = device_ptr<const void>(tau);
  const int64_t tau_stride = tau.size(-1), k = tau.size(-1);
  launch_kernel(input.device().index(), "ormqr", [=] { k::ormqr(type, a, taus, tau_stride, k, c, left, transpose); });
}

void eigh_mlu(T values, T vectors, T infos, bool upper, bool compute_vectors) {
  const auto type = lapack_dtype(vectors, "linalg_eigh_mlu");
  check_scalar_type(values, c10::toRealValueType(vectors.scalar_type()));
  if (vectors.numel() == 0) return;
  const auto a = matrix_batch(vectors);
  void* w = device_ptr(values);
  const int64_t w_stride = values.size(-1);
  int32_t* info = int_data(infos);
  launch_kernel(vectors.device().index(), "eigh", [=] { k::eigh(type, a, w, w_stride, info, upper, compute_vectors); });
}

void eig_mlu(at::Tensor& values, at::Tensor& vectors, at::Tensor& infos, T input, bool compute_vectors) {
  const auto type = lapack_dtype(input, "linalg_eig_out_mlu");
  if (input.numel() == 0) return;
  // geev destroys its input: a column-major copy (the CPU's linalg_eig_kernel).
  const at::Tensor copy = at::native::cloneBatchedColumnMajor(input);
  const auto a = matrix_batch(copy);
  if (compute_vectors) check_scalar_type(vectors, input.scalar_type());
  check_scalar_type(values, input.scalar_type());
  void* w = device_ptr(values);
  const int64_t w_stride = values.size(-1);
  void* vr = compute_vectors ? device_ptr(vectors) : nullptr;
  int32_t* info = int_data(infos);
  launch_kernel(input.device().index(), "eig", [=] { k::eig(type, a, w, w_stride, vr, info, compute_vectors); });
}

void eig_complex_vectors_mlu(T complex_vectors, T complex_values, T real_vectors) {
  TORCH_INTERNAL_ASSERT(complex_vectors.mT().is_contiguous() && complex_values.is_contiguous() &&
                        real_vectors.mT().is_contiguous());
  if (real_vectors.numel() == 0) return;
  const auto type = require_kernel_dtype(real_vectors.scalar_type(), "linalg_eig_make_complex_eigenvectors_mlu");
  const int64_t batch = at::native::batchCount(real_vectors), n = real_vectors.size(-1);
  const void* values = device_ptr<const void>(complex_values);
  const void* reals = device_ptr<const void>(real_vectors);
  void* out = device_ptr(complex_vectors);
  launch_kernel(real_vectors.device().index(), "eig complex vectors",
                [=] { k::eig_complex_vectors(type, batch, n, values, reals, out); });
}

void svd_mlu(T A, const bool full_matrices, const bool compute_uv, const std::optional<std::string_view>& driver, T U,
             T S, T Vh, T infos) {
  TORCH_INTERNAL_ASSERT(!driver.has_value());
  const auto type = lapack_dtype(A, "linalg_svd_mlu");
  check_scalar_type(S, c10::toRealValueType(A.scalar_type()));
  if (compute_uv) {
    check_scalar_type(U, A.scalar_type());
    check_scalar_type(Vh, A.scalar_type());
  }
  // gesdd destroys its input: a column-major copy (the CPU's svd_kernel).
  const at::Tensor copy = at::native::cloneBatchedColumnMajor(A);
  const auto a = matrix_batch(copy);
  const auto u = compute_uv ? matrix_batch(U) : k::MatrixBatch{};
  const auto vh = compute_uv ? matrix_batch(Vh) : k::MatrixBatch{};
  void* s = device_ptr(S);
  const int64_t s_stride = S.size(-1);
  int32_t* info = int_data(infos);
  launch_kernel(A.device().index(), "svd",
                [=] { k::svd(type, a, s, s_stride, u, vh, info, full_matrices, compute_uv); });
}

// lu_unpack's permutations: for each pivot row (int32, 1-based) of the
// iterator's batch, the int64 permutation row swapped in pivot order (the
// CPU's unpack_pivots_cpu_kernel). The iterator squashes the last dim: its
// shape is the batch, its operands point at the rows.
void unpack_pivots_mlu(at::TensorIterator& iter, const int64_t dim_size, const int64_t max_pivot) {
  if (iter.numel() == 0 || dim_size == 0) return;
  auto* perm = static_cast<char*>(device_ptr(iter.data_ptr(0)));
  const auto* pivots = static_cast<const char*>(device_ptr(iter.data_ptr(1)));
  const std::vector<int64_t> shape(iter.shape().begin(), iter.shape().end());
  const std::vector<int64_t> perm_strides(iter.strides(0).begin(), iter.strides(0).end());
  const std::vector<int64_t> pivot_strides(iter.strides(1).begin(), iter.strides(1).end());
  const int64_t rows = iter.numel();
  launch_kernel(iter.device(0).index(), "unpack_pivots", [=](mlu::TaskContext& context) {
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rest = row, perm_offset = 0, pivot_offset = 0;
      for (size_t d = 0; d < shape.size(); ++d) {  // dim 0 varies fastest in a TensorIterator
        const int64_t index = rest % shape[d];
        rest /= shape[d];
        perm_offset += index * perm_strides[d];
        pivot_offset += index * pivot_strides[d];
      }
      auto* p = reinterpret_cast<int64_t*>(perm + perm_offset);
      const auto* v = reinterpret_cast<const int32_t*>(pivots + pivot_offset);
      for (int64_t i = 0; i < dim_size; ++i) {
        const int64_t target = v[i] - 1;
        if (target < 0 || target >= max_pivot) {
          return context.fail(
              "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
              "properly pass the result of lu_factor?");
        }
        std::swap(p[i], p[target]);
      }
    }
  });
}

// ---- ops whose generic code is not device-clean ------------------------------

// _cholesky_solve_helper: the CPU's _cholesky_solve_helper_cpu (there is no
// stub; the op is registered per device).
at::Tensor cholesky_solve_helper(T self, T A, bool upper) {
  c10::DeviceGuard guard(self.device());
  const auto type = lapack_dtype(self, "cholesky_solve_mlu");
  check_scalar_type(A, self.scalar_type());
  const at::Tensor b = at::native::cloneBatchedColumnMajor(self);
  const at::Tensor a = at::native::cloneBatchedColumnMajor(A);
  const at::Tensor infos = at::zeros({at::native::batchCount(self)}, self.options().dtype(at::kInt));
  if (b.numel() != 0 && a.numel() != 0) {
    const auto am = matrix_batch(a), bm = matrix_batch(b);
    int32_t* info = int_data(infos);
    launch_kernel(self.device().index(), "cholesky_solve", [=] { k::cholesky_solve(type, am, bm, upper, info); });
  }
  at::_linalg_check_errors(infos, "cholesky_solve_mlu", self.dim() == 2);
  return b;
}

// cholesky_inverse: the CPU's cholesky_inverse_out with `infos` on the
// device (the generic version keeps them on the host for MAGMA).
at::Tensor& cholesky_inverse_out(T input, bool upper, at::Tensor& result) {
  at::native::squareCheckInputs(input, "cholesky_inverse");
  at::native::checkSameDevice("cholesky_inverse", result, input);
  at::native::checkLinalgCompatibleDtype("cholesky_inverse", result, input);
  c10::DeviceGuard guard(input.device());
  at::Tensor infos = at::zeros({std::max<int64_t>(1, at::native::batchCount(input))}, input.options().dtype(at::kInt));
  const bool same_type = result.scalar_type() == input.scalar_type();
  if (result.numel() == 0 && same_type) {
    // As the CPU: an empty result becomes a batch of column-major matrices.
    result.resize_(input.mT().sizes(), at::MemoryFormat::Contiguous);
    result.transpose_(-2, -1);
  }
  const bool in_place =
      same_type && result.dim() >= 2 && result.mT().is_contiguous() && result.sizes().equals(input.sizes());
  at::Tensor work = in_place ? result : at::native::cloneBatchedColumnMajor(input);
  if (in_place) work.copy_(input);
  cholesky_inverse_mlu(work, infos, upper);
  if (!in_place) {
    at::native::resize_output(result, work.sizes());
    result.copy_(work);
  }
  at::_linalg_check_errors(infos, "cholesky_inverse", result.dim() == 2);
  return result;
}

}  // namespace

namespace {

// linalg_cholesky_ex: PyTorch's meta and impl, unless the fused path takes the call.
std::tuple<at::Tensor, at::Tensor> linalg_cholesky_ex_mlu(T A, bool upper, bool check_errors) {
  MLUFunctional<at::native::structured_linalg_cholesky_ex_out, 2> op;
  op.meta(A, upper, check_errors);
  if (!cholesky_ex_fused(A, upper, check_errors, op.output(0), op.output(1))) {
    op.impl(A, upper, check_errors, op.output(0), op.output(1));
  }
  return std::make_tuple(std::move(op.output(0)), std::move(op.output(1)));
}

std::tuple<at::Tensor&, at::Tensor&> linalg_cholesky_ex_out_mlu(T A, bool upper, bool check_errors, at::Tensor& L,
                                                                at::Tensor& info) {
  MLUOut<at::native::structured_linalg_cholesky_ex_out, 2> op(L, info);
  op.meta(A, upper, check_errors);
  if (!cholesky_ex_fused(A, upper, check_errors, op.maybe_get_output(0), op.maybe_get_output(1))) {
    op.impl(A, upper, check_errors, op.maybe_get_output(0), op.maybe_get_output(1));
  }
  op.finish();
  return std::forward_as_tuple(L, info);
}

at::Tensor cholesky_inverse_mlu(T input, bool upper) {
  at::Tensor result = at::empty({0}, input.options());
  cholesky_inverse_out(input, upper, result);
  return result;
}

}  // namespace

}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_stub, &torch_mlu::cholesky_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_inverse_stub, &torch_mlu::cholesky_inverse_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(lu_factor_stub, &torch_mlu::lu_factor_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(lu_solve_stub, &torch_mlu::lu_solve_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(triangular_solve_stub, &torch_mlu::triangular_solve_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(geqrf_stub, &torch_mlu::geqrf_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(orgqr_stub, &torch_mlu::orgqr_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(ormqr_stub, &torch_mlu::ormqr_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(linalg_eigh_stub, &torch_mlu::eigh_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(svd_stub, &torch_mlu::svd_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(unpack_pivots_stub, &torch_mlu::unpack_pivots_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(ldl_factor_stub, &torch_mlu::ldl_factor_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(ldl_solve_stub, &torch_mlu::ldl_solve_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(linalg_eig_stub, &torch_mlu::eig_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(linalg_eig_make_complex_eigenvectors_stub, &torch_mlu::eig_complex_vectors_mlu)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/LinalgOps.inc"
