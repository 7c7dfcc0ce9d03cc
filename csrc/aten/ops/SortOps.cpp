// Ordering ops on mlu: sort, topk, kthvalue. Their values are the CPU's, and
// so are their indices among equal elements (Note [The CPU's order among
// equal keys] in kernels/src/sort/sort.cpp).
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/SortingUtils.h>
#include <mlu_kernels/sort.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

// Strides of t with `dim` moved last (t.dim() == ndim, or 0-dim).
k::Strides strides_dim_last(const at::Tensor& t, int64_t dim) {
  k::Strides s{};
  int j = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d != dim) s.v[j++] = t.stride(d);
  }
  s.v[j] = t.dim() == 0 ? 1 : t.stride(dim);
  return s;
}

k::Shape shape_dim_last(const at::Tensor& t, int64_t dim, int64_t last_size) {
  k::Shape s;
  int j = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d != dim) s.sizes[j++] = t.size(d);
  }
  s.sizes[j] = last_size;
  s.ndim = j + 1;
  return s;
}

// Whether the CPU's sort keeps equal keys in input order: stable=True, or a
// case its sort_kernel hands to fbgemm's radix sort (stable): a 1-d integer
// tensor of at least GRAIN_SIZE (32768) elements in ascending order. Other
// unstable sorts order equal keys as Note [The CPU's order among equal keys].
bool cpu_sort_is_stable(const at::Tensor& values, std::optional<bool> stable, bool descending) {
  if (stable.value_or(false)) return true;
  return values.dim() == 1 && c10::isIntegralType(values.scalar_type(), /*includeBool=*/false) && !descending &&
         values.numel() >= at::internal::GRAIN_SIZE;
}

void launch_sort(const at::Tensor& self, int64_t dim, bool descending, bool stable, const at::Tensor& values,
                 const at::Tensor& indices) {
  if (self.numel() == 0) return;
  dim = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  const k::Shape shape = shape_dim_last(self, dim, self.dim() == 0 ? 1 : self.size(dim));
  const k::Operand in = kernel_operand(self, strides_dim_last(self, dim), "sort");
  const k::Operand v = kernel_operand(values, strides_dim_last(values, dim), "sort");
  const k::Operand x = kernel_operand(indices, strides_dim_last(indices, dim), "sort");
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "sort", [=] { k::sort(shape, v, x, in, descending, stable); });
}

void launch_topk(const at::Tensor& self, int64_t k_count, int64_t dim, bool largest, bool sorted,
                 const at::Tensor& values, const at::Tensor& indices) {
  if (self.numel() == 0 || k_count == 0) return;
  dim = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  const k::Shape shape = shape_dim_last(self, dim, self.dim() == 0 ? 1 : self.size(dim));
  const k::Operand in = kernel_operand(self, strides_dim_last(self, dim), "topk");
  const k::Operand v = kernel_operand(values, strides_dim_last(values, dim), "topk");
  const k::Operand x = kernel_operand(indices, strides_dim_last(indices, dim), "topk");
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "topk", [=] { k::topk(shape, k_count, v, x, in, largest, sorted); });
}

// kthvalue_out_impl_cpu's checks and outputs (the reduced dim kept until the
// end); the element from the CPU's own quickselect (kernels::kth_smallest).
std::tuple<at::Tensor&, at::Tensor&> kthvalue_values_mlu(const at::Tensor& self, int64_t k_th, int64_t dim_,
                                                         bool keepdim, at::Tensor& values, at::Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k_th >= 1 && k_th <= n, "kthvalue(): selected number k out of range for dimension ", dim);
  at::assert_no_overlap(self, values);
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim_, keepdim);
  c10::OptionalDeviceGuard guard(self.device());
  if (self.dim() == 0 && self.numel() == 1) {
    values.copy_(self);
    indices.zero_();
    return {values, indices};
  }
  const k::Shape shape = shape_dim_last(self, dim, n);
  const k::Operand in = kernel_operand(self, strides_dim_last(self, dim), "kthvalue");
  const k::Operand v = kernel_operand(values, strides_dim_last(values, dim), "kthvalue");
  const k::Operand x = kernel_operand(indices, strides_dim_last(indices, dim), "kthvalue");
  launch_kernel(self.device().index(), "kthvalue", [=] { k::kth_smallest(shape, k_th, v, x, in); });
  if (!keepdim) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SortOps.inc"
