#include "csrc/aten/Structured.h"

namespace torch_mlu::detail {

// As PyTorch's generated check_inplace: TensorIterator ops check the same
// through their own config, other structured ops rely on this.
void check_inplace(const at::Tensor& self, at::IntArrayRef sizes, const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == self.dtype(), "Bad in-place call: input tensor dtype ", self.dtype(),
              " and output tensor dtype ", options.dtype(), " should match");
  TORCH_CHECK(options.device() == self.device(), "Bad in-place call: input tensor device ", self.device(),
              " and output tensor device ", options.device(), " should match");
  TORCH_CHECK(sizes == self.sizes(), "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

// As PyTorch's generated resize_out: resize_output's rules (and warning),
// restriding only a tensor that was resized.
void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ", options.dtype(), ", but got ",
              out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ", options.device(),
              ", but got ", out.device(), " instead");
  const bool resized = at::native::resize_output(out, sizes);
  if (resized) {
    if (!strides.empty()) {
      TORCH_INTERNAL_ASSERT(!options.memory_format_opt().has_value());
      out.as_strided_(sizes, strides);
    } else if (options.memory_format_opt().has_value()) {
      out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
    }
  }
}

}  // namespace torch_mlu::detail
