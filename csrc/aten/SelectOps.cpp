// Ops whose output size depends on the data: nonzero, masked_select and
// torch.unique. The size is computed on
// the device and read back (a synchronisation, as on CUDA), then one kernel
// writes the result in queue order.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ne.h>
#include <mlu_kernels/select.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

k::Operand operand(const at::Tensor& t) {
  return {const_cast<void*>(t.const_data_ptr()), require_kernel_dtype(t.scalar_type(), "select"), kernel_strides(t)};
}

at::Tensor nonzero_mlu(const at::Tensor& self) {
  if (!has_kernel(self)) return cpu_fallback<at::Tensor(const at::Tensor&)>("aten::nonzero", self);
  c10::OptionalDeviceGuard guard(self.device());
  const int64_t count = self.ne(0).sum().item<int64_t>();
  at::Tensor out = at::empty({count, self.dim()}, self.options().dtype(at::kLong));
  if (count == 0 || self.dim() == 0) return out;
  const k::Shape shape = kernel_shape(self);
  const k::Operand in = operand(self);
  int64_t* data = out.data_ptr<int64_t>();
  const int64_t row = out.stride(0), col = out.stride(1);
  launch_kernel(self.device().index(), "nonzero", [=] { k::nonzero(shape, in, data, row, col); });
  return out;
}

at::Tensor masked_select_mlu(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  if (!has_kernel(self)) {
    return cpu_fallback<at::Tensor(const at::Tensor&, const at::Tensor&)>("aten::masked_select", self, mask);
  }
  c10::OptionalDeviceGuard guard(self.device());
  auto [self_b, mask_b] = at::expand_outplace(self, mask);
  const at::Tensor m = mask_b->device() == self.device() ? *mask_b : mask_b->to(self.device());
  const int64_t count = m.sum().item<int64_t>();
  at::Tensor out = at::empty({count}, self.options());
  if (count == 0) return out;
  const k::Shape shape = kernel_shape(*self_b);
  const k::Operand in = operand(*self_b), sel = operand(m), dst = operand(out);
  launch_kernel(self.device().index(), "masked_select", [=] { k::masked_select(shape, in, sel, dst); });
  return out;
}

// torch.unique (sorted): a stable sort, a mask of where values change, then
// masked_select / cumsum / nonzero, all on the device.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2_mlu(const at::Tensor& self, bool sorted, bool return_inverse,
                                                           bool return_counts) {
  if (!has_kernel(self) || self.scalar_type() == at::kBool) {
    return cpu_fallback<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, bool, bool, bool)>(
        "aten::_unique2", self, sorted, return_inverse, return_counts);
  }
  c10::OptionalDeviceGuard guard(self.device());
  const int64_t n = self.numel();
  const at::Tensor flat = self.reshape({-1});
  auto [values, perm] = flat.sort(/*stable=*/true, 0, /*descending=*/false);
  at::Tensor change = at::empty({n}, self.options().dtype(at::kBool));
  if (n > 0) {
    change.narrow(0, 0, 1).fill_(true);
    at::Tensor tail = change.narrow(0, 1, n - 1);
    at::ne_out(tail, values.narrow(0, 1, n - 1), values.narrow(0, 0, n - 1));
  }
  at::Tensor unique = values.masked_select(change);
  at::Tensor inverse = at::empty({0}, self.options().dtype(at::kLong));
  at::Tensor counts = at::empty({0}, self.options().dtype(at::kLong));
  if (return_inverse) {
    const at::Tensor group = change.cumsum(0).sub_(1);
    inverse = at::empty({n}, self.options().dtype(at::kLong)).scatter_(0, perm, group).view(self.sizes());
  }
  if (return_counts && n > 0) {
    // Group g spans [starts[g], starts[g + 1]), the last one up to n.
    const at::Tensor starts = change.nonzero().reshape({-1});
    const at::Tensor ends =
        at::cat({starts.narrow(0, 1, starts.numel() - 1), at::full({1}, n, starts.options())});
    counts = ends.sub(starts);
  }
  return {unique, inverse, counts};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", TORCH_FN(nonzero_mlu));
  m.impl("masked_select", TORCH_FN(masked_select_mlu));
  m.impl("_unique2", TORCH_FN(unique2_mlu));
}

}  // namespace torch_mlu
