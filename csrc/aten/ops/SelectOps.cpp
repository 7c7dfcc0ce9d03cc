// Ops whose output size depends on the data: nonzero, masked_select and
// torch.unique / unique_consecutive. The size is computed on
// the device and read back (a synchronisation, as on CUDA), then one kernel
// writes the result in queue order.
#include <algorithm>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/full.h>
#include <ATen/ops/masked_select_ops.h>
#include <ATen/ops/ne.h>
#include <mlu_kernels/select.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

at::Tensor nonzero_mlu(const at::Tensor& self) {
  const k::Shape shape = kernel_shape(self);
  const k::Operand in = kernel_operand(self, "select");
  // The count by the kernel library's own pass (no self != 0 temporary).
  at::Tensor counted = at::empty({}, self.options().dtype(at::kLong));
  int64_t* count_at = device_ptr<int64_t>(counted);
  launch_kernel(self.device().index(), "nonzero", [=] { *count_at = k::count_nonzero(shape, in); });
  const int64_t count = counted.item<int64_t>();
  // Column-major, as the CPU's and CUDA's (pytorch gh-46224): out.t() is each dim's coordinates, contiguous.
  at::Tensor out = at::empty_strided({count, self.dim()}, {1, count}, self.options().dtype(at::kLong));
  if (count == 0 || self.dim() == 0) return out;
  int64_t* data = device_ptr<int64_t>(out);
  const int64_t row = out.stride(0), col = out.stride(1);
  launch_kernel(self.device().index(), "nonzero", [=] { k::nonzero(shape, in, data, row, col); });
  return out;
}

at::Tensor masked_select_mlu(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  if (!has_move_kernel(self)) {
    return cpu_fallback<ATEN_OP(masked_select)>(self, mask);
  }
  c10::OptionalDeviceGuard guard(self.device());
  auto [self_b, mask_b] = at::expand_outplace(self, mask);
  const at::Tensor m = mask_b->device() == self.device() ? *mask_b : mask_b->to(self.device());
  const int64_t count = m.sum().item<int64_t>();
  at::Tensor out = at::empty({count}, self.options());
  if (count == 0) return out;
  const Collapsed layout = kernel_layout(*self_b, m);  // Note [Collapsed dims]
  const k::Shape shape = layout.shape;
  k::Operand in = kernel_operand(*self_b, "select"), sel = kernel_operand(m, "select");
  in.strides = layout.first;
  sel.strides = layout.second;
  const k::Operand dst = kernel_operand(out, "select");
  launch_kernel(self.device().index(), "masked_select", [=] { k::masked_select(shape, in, sel, dst); });
  return out;
}

// masked_select_out_impl_cpu's checks, in its order (an out= overlapping an
// input is refused), then the functional result moved into `result`.
at::Tensor& masked_select_out_mlu(const at::Tensor& self, const at::Tensor& mask, at::Tensor& result) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == result.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(result);
  at::assert_no_overlap(result, self);
  at::assert_no_overlap(result, mask);
  if (!has_move_kernel(self)) {
    return cpu_fallback<ATEN_OP2(masked_select, out)>(self, mask, result);
  }
  const at::Tensor values = masked_select_mlu(self, mask);
  at::native::resize_output(result, values.sizes());
  result.copy_(values);
  return result;
}

// ---- torch.unique and unique_consecutive ----
// Every variant reduces to runs of equal neighbours along dim 0 of `sorted`
// (elements, or rows for the dim= variants): a mask of where a run starts,
// then compaction, cumsum and index arithmetic, all on the device. perm[i] is
// the position in the input of sorted[i] (undefined: the identity).

using UniqueResult = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// change[i]: sorted[i] starts a run (differs from sorted[i - 1]).
at::Tensor run_starts_mask(const at::Tensor& sorted) {
  const int64_t n = sorted.size(0);
  at::Tensor change = at::empty({n}, sorted.options().dtype(at::kBool));
  if (n == 0) return change;
  change.narrow(0, 0, 1).fill_(true);
  at::Tensor differs = sorted.narrow(0, 1, n - 1).ne(sorted.narrow(0, 0, n - 1));
  if (differs.dim() > 1) differs = differs.flatten(1).any(1);
  change.narrow(0, 1, n - 1).copy_(differs);
  return change;
}

UniqueResult unique_runs(const at::Tensor& sorted, const at::Tensor& perm, bool return_inverse, bool return_counts,
                         at::IntArrayRef inverse_shape) {
  const int64_t n = sorted.size(0);
  const at::TensorOptions index_options = sorted.options().dtype(at::kLong);
  const at::Tensor change = run_starts_mask(sorted);
  const at::Tensor starts = change.nonzero().reshape({-1});
  at::Tensor unique = sorted.index_select(0, starts);
  at::Tensor inverse = at::empty({0}, index_options);
  at::Tensor counts = at::empty({0}, index_options);
  if (return_inverse) {
    const at::Tensor group = change.cumsum(0).sub_(1);
    inverse = perm.defined() ? at::empty({n}, index_options).scatter_(0, perm, group) : group;
    inverse = inverse.view(inverse_shape);
  }
  if (return_counts && n > 0) {
    // Run g spans [starts[g], starts[g + 1]), the last one up to n.
    const at::Tensor ends = at::cat({starts.narrow(0, 1, starts.numel() - 1), at::full({1}, n, index_options)});
    counts = ends.sub(starts);
  }
  return {unique, inverse, counts};
}

// Bool has no sort kernel: unique runs on its bytes and converts back.
at::Tensor as_sortable(const at::Tensor& t) { return t.scalar_type() == at::kBool ? t.to(at::kByte) : t; }

UniqueResult restore_bool(UniqueResult r, at::ScalarType dtype) {
  if (dtype == at::kBool) std::get<0>(r) = std::get<0>(r).to(at::kBool);
  return r;
}

// Flattened: sorted by a stable sort (torch.unique; sorted=False may sort
// too, its order is unspecified) or as given (unique_consecutive).
UniqueResult unique_flat(const at::Tensor& self, bool consecutive, bool return_inverse, bool return_counts) {
  c10::OptionalDeviceGuard guard(self.device());
  const at::Tensor flat = as_sortable(self).reshape({-1});
  if (consecutive)
    return restore_bool(unique_runs(flat, {}, return_inverse, return_counts, self.sizes()), self.scalar_type());
  auto [values, perm] = flat.sort(/*stable=*/true, 0, /*descending=*/false);
  return restore_bool(unique_runs(values, perm, return_inverse, return_counts, self.sizes()), self.scalar_type());
}

// Along `dim`: the slices self.select(dim, i) as rows, sorted lexicographically
// by one stable sort per column from the last to the first (what the CPU's
// row comparator orders), then runs of equal rows. Layout of the result as
// the CPU builds it (transpose to the front and back).
UniqueResult unique_dim_impl(const at::Tensor& self, int64_t dim, bool consecutive, bool return_inverse,
                             bool return_counts) {
  c10::OptionalDeviceGuard guard(self.device());
  dim = at::maybe_wrap_dim(dim, self.dim());
  const at::TensorOptions index_options = self.options().dtype(at::kLong);
  const auto sizes = self.sizes();
  const auto zero_dims = std::count(sizes.begin(), sizes.end(), 0);
  if (self.size(dim) == 0) {
    TORCH_CHECK(zero_dims == 1, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return {at::empty(self.sizes(), self.options()), at::empty({0}, index_options), at::empty({0}, index_options)};
  }
  TORCH_CHECK(zero_dims == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  const at::Tensor moved = self.transpose(dim, 0);
  std::vector<int64_t> unique_sizes = moved.sizes().vec();
  unique_sizes[0] = -1;
  const int64_t n = moved.size(0);
  const at::Tensor rows = as_sortable(moved).contiguous().view({n, -1});
  at::Tensor perm;
  at::Tensor sorted = rows;
  if (!consecutive) {
    perm = at::arange(n, index_options);
    for (int64_t c = rows.size(1) - 1; c >= 0; --c) {
      const at::Tensor key = rows.select(1, c).index_select(0, perm);
      perm = perm.index_select(0, std::get<1>(key.sort(/*stable=*/true, 0, /*descending=*/false)));
    }
    sorted = rows.index_select(0, perm);
  }
  auto [unique, inverse, counts] =
      restore_bool(unique_runs(sorted, perm, return_inverse, return_counts, {n}), self.scalar_type());
  return {unique.view(unique_sizes).transpose(0, dim), inverse, counts};
}

std::tuple<at::Tensor, at::Tensor> unique_mlu(const at::Tensor& self, bool return_inverse) {
  auto [unique, inverse, counts] = unique_flat(self, /*consecutive=*/false, return_inverse, false);
  return {unique, inverse};
}

UniqueResult unique_consecutive_mlu(const at::Tensor& self, bool return_inverse, bool return_counts,
                                    std::optional<int64_t> dim) {
  if (dim.has_value()) return unique_dim_impl(self, *dim, /*consecutive=*/true, return_inverse, return_counts);
  return unique_flat(self, /*consecutive=*/true, return_inverse, return_counts);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SelectOps.inc"
