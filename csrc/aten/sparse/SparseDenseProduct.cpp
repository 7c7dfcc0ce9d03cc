#include "csrc/aten/sparse/SparseDenseProduct.h"

#include <vector>

namespace torch_mlu {

at::Tensor& sparse_dense_addmm(const at::Tensor& self, const at::Tensor& rows, const at::Tensor& cols,
                               const at::Tensor& values, int64_t num_rows, const at::Tensor& dense,
                               const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  const std::vector<int64_t> shape = {num_rows, dense.size(1)};
  if (!out.is_same(self)) out.resize_(shape);
  if (beta.equal(0)) {
    out.zero_();
  } else {
    if (!out.is_same(self)) out.copy_(self.expand(shape));
    if (!beta.equal(1)) out.mul_(beta);
  }
  if (values.numel() == 0 || shape[1] == 0) return out;
  const at::Tensor scaled = values.mul(alpha).unsqueeze(1);
  out.index_add_(0, rows, dense.index_select(0, cols).mul_(scaled));
  return out;
}

}  // namespace torch_mlu
