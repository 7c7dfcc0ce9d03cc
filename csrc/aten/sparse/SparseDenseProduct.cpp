#include "csrc/aten/sparse/SparseDenseProduct.h"

#include <vector>

#include <ATen/ops/_convert_indices_from_csr_to_coo.h>
#include <mlu_kernels/sparse.h>

#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {

at::Tensor& sparse_dense_addmm(const at::Tensor& self, const at::Tensor& crow, const at::Tensor& cols,
                               const at::Tensor& values, int64_t num_rows, const at::Tensor& dense,
                               const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  namespace k = mlu::kernels;
  const std::vector<int64_t> shape = {num_rows, dense.size(1)};
  if (!out.is_same(self)) out.resize_(shape);
  if (beta.equal(0)) {
    out.zero_();
  } else {
    if (!out.is_same(self)) out.copy_(self.expand(shape));
    if (!beta.equal(1)) out.mul_(beta);
  }
  if (values.numel() == 0 || shape[1] == 0) return out;
  const std::optional<k::ScalarType> type = kernel_dtype(values.scalar_type());
  if (!type || !k::spmm_takes(*type)) {
    const at::Tensor rows = at::_convert_indices_from_csr_to_coo(crow, cols).select(0, 0);
    const at::Tensor scaled = values.mul(alpha).unsqueeze(1);
    out.index_add_(0, rows, dense.index_select(0, cols).mul_(scaled));
    return out;
  }
  const at::Tensor row_pointers = crow.to(at::kLong).contiguous();
  const at::Tensor columns = cols.to(at::kLong).contiguous();
  const at::Tensor entries = values.contiguous();
  const c10::complex<double> scale = alpha.toComplexDouble();
  k::SpmmArgs args{*type,
                   num_rows,
                   shape[1],
                   device_ptr<const int64_t>(row_pointers),
                   device_ptr<const int64_t>(columns),
                   device_ptr<const void>(entries),
                   device_ptr<const void>(dense),
                   dense.stride(0),
                   dense.stride(1),
                   device_ptr(out),
                   out.stride(0),
                   out.stride(1),
                   {scale.real(), scale.imag()}};
  launch_kernel(out.device().index(), "spmm_csr", [args] { k::spmm_csr(args); });
  return out;
}

}  // namespace torch_mlu
