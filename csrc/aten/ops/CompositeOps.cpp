// Ops that PyTorch implements with host loops on the CPU and dedicated
// kernels on CUDA, composed on mlu from mlu's native ops: nansum, trace,
// logspace, max_unpool2d/3d, masked_scatter_, nonzero_static,
// repeat_interleave's index form, cummax / cummin and median / nanmedian.
//
// Each one checks its arguments as the CPU's implementation does (same
// order, same messages) and computes what the CPU's loop computes, in the
// same types, so results equal the CPU's up to the summation order of
// reductions. Where the CPU checks index values on the host, the composed
// form ends in a scatter / gather whose kernel checks them on the device: a
// bad index is a device-side error raised at the next synchronisation.
#include <algorithm>
#include <vector>

#include <ATen/AccumulateType.h>
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/logspace_ops.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/masked_scatter_ops.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;

// ---- nansum ----

// The CPU refuses complex inputs ("nansum on CPU does not support complex
// inputs"); mlu does too, naming itself.
constexpr const char* kNansumComplex = "nansum on mlu does not support complex inputs";

// A floating input sums in the result's type, which the CPU's kernel
// defines for floating types only.
void check_nansum_type(at::ScalarType type) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type), "\"nansum_mlu\" not implemented for '", type, "'");
}

// Note [16-bit nansum as the CPU rounds it]
// The CPU's nansum stores each inner row's float sum into a 16-bit result
// with += (CastStoreAccumulate): out = r(out + r(row)); its sum avoids that
// with a float buffer (should_use_acc_buffer), nansum does not. TensorIterator
// orders the reduced dims by input stride and merges those that chain
// (size * stride == the next stride): the rows run over that merged fastest
// group, and a reduction over dims it cannot merge (dims 0 and 2 of a
// contiguous (3, 5, 7, 9)) rounds once per row, accumulating in 16 bits over
// the other reduced dims, fastest first. Here the rows are float sums, then
// added in the 16-bit type in that order; the CPU's order inside a row (its
// cascade) and its split over threads above 32768 elements are not
// reproduced (a float rounding apart).
// `self` gives the CPU's iteration order (its strides), `zeroed` the values.
at::Tensor nansum_16bit_rows(const at::Tensor& self, const at::Tensor& zeroed, at::OptionalIntArrayRef dim,
                             bool keepdim, at::ScalarType out_type) {
  const int64_t rank = self.dim();
  const auto listed = [&](int64_t d) {
    return !dim.has_value() || dim->empty() ||
           std::any_of(dim->begin(), dim->end(), [&](int64_t e) { return at::maybe_wrap_dim(e, rank) == d; });
  };
  std::vector<int64_t> reduced;
  for (int64_t d = 0; d < rank; ++d) {
    if (listed(d) && self.size(d) > 1) reduced.push_back(d);
  }
  std::stable_sort(reduced.begin(), reduced.end(),
                   [&](int64_t a, int64_t b) { return self.stride(a) < self.stride(b); });
  size_t merged = reduced.empty() ? 0 : 1;
  while (merged < reduced.size() &&
         self.stride(reduced[merged]) == self.size(reduced[merged - 1]) * self.stride(reduced[merged - 1])) {
    ++merged;
  }
  if (merged == reduced.size()) return at::sum(zeroed, dim, keepdim, out_type);  // one rounding
  const std::vector<int64_t> row_dims(reduced.begin(), reduced.begin() + static_cast<int64_t>(merged));
  at::Tensor rows = at::sum(zeroed, row_dims, /*keepdim=*/true, at::kFloat).to(out_type);
  // The remaining reduced dims to the front, slowest first, flattened: row
  // r is the r-th the CPU adds.
  std::vector<int64_t> order(reduced.rbegin(), reduced.rend() - static_cast<int64_t>(merged));
  int64_t count = 1;
  for (const int64_t d : order) count *= rows.size(d);
  std::vector<int64_t> kept_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(order.begin(), order.end(), d) == order.end()) {
      order.push_back(d);
      kept_shape.push_back(rows.size(d));
    }
  }
  kept_shape.insert(kept_shape.begin(), count);
  const at::Tensor flat = rows.permute(order).reshape(kept_shape);
  at::Tensor out = flat.select(0, 0).clone();
  for (int64_t r = 1; r < count; ++r) out.add_(flat.select(0, r));
  // out has the rows' shape without the remaining reduced dims: put them
  // back as size 1, then drop every reduced dim unless keepdim.
  std::vector<int64_t> full(static_cast<size_t>(rank), 1);
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(reduced.begin() + static_cast<int64_t>(merged), reduced.end(), d) == reduced.end()) {
      full[d] = rows.size(d);
    }
  }
  out = out.reshape(full);
  if (keepdim) return out;
  std::vector<int64_t> squeezed;
  for (int64_t d = 0; d < rank; ++d) {
    if (!listed(d)) squeezed.push_back(full[d]);
  }
  return out.reshape(squeezed);
}

// The CPU's nansum_out: integers (no NaN) are a plain sum; floating inputs
// sum with NaN read as zero.
at::Tensor& nansum_out_mlu(T self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype,
                           at::Tensor& result) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), kNansumComplex);
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    return at::sum_out(result, self, dim, keepdim, dtype);
  }
  const at::ScalarType out_type = dtype.value_or(result.scalar_type());
  check_nansum_type(out_type);
  const at::Tensor zeroed = self.masked_fill(self.isnan(), 0);
  if (at::isReducedFloatingType(out_type)) {
    const at::Tensor value = nansum_16bit_rows(self, zeroed, dim, keepdim, out_type);
    at::native::resize_output(result, value.sizes());
    return result.copy_(value);
  }
  return at::sum_out(result, zeroed, dim, keepdim, dtype);
}

at::Tensor nansum_mlu(T self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), kNansumComplex);
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) return at::sum(self, dim, keepdim, dtype);
  const at::ScalarType out_type = dtype.value_or(self.scalar_type());
  check_nansum_type(out_type);
  const at::Tensor zeroed = self.masked_fill(self.isnan(), 0);
  if (at::isReducedFloatingType(out_type)) return nansum_16bit_rows(self, zeroed, dim, keepdim, out_type);
  return at::sum(zeroed, dim, keepdim, dtype);
}

// ---- trace ----

// The CPU's trace_cpu sums the diagonal in its accumulate type (double for
// float, int64 for integers) and defines no Half / BFloat16 / Bool kernel:
// those go to the CPU fallback, which raises its error.
bool trace_native(T self) {
  const at::ScalarType type = self.scalar_type();
  return !(type == at::kHalf || type == at::kBFloat16 || type == at::kBool ||
           (!has_kernel(self) && !self.is_complex()));
}

at::Tensor trace_mlu(T self) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  const at::ScalarType out_type = c10::isIntegralType(type, /*includeBool=*/false) ? at::kLong : type;
  const at::ScalarType acc = at::toAccumulateType(out_type, /*is_cuda=*/false);
  return self.diagonal().sum(acc).to(out_type);
}

// ---- logspace ----

// v rounded to the result's type, as the CPU's start.to<scalar_t>().
double in_type(const at::Scalar& v, at::ScalarType type) {
  return at::scalar_tensor(v, at::TensorOptions().dtype(type)).item<double>();
}

// The CPU's logspace_out: with start and end in the result's type and the
// step (end - start) / (steps - 1) in double (the difference taken in the
// result's type), element i is base ** (start + step * i) in the first half
// and base ** (end - step * (steps - 1 - i)) in the second, in double with
// the base in float for integer results, then converted.
at::Tensor& logspace_out_mlu(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                             at::Tensor& result) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (result.is_complex() || !has_kernel(result)) {
    return cpu_fallback<ATEN_OP2(logspace, out)>(start, end, steps, base, result);
  }
  if (result.numel() != steps) result.resize_({steps});
  if (steps == 0) return result;
  c10::OptionalDeviceGuard guard(result.device());
  const at::ScalarType type = result.scalar_type();
  const auto doubles = result.options().dtype(at::kDouble);
  if (steps == 1) {
    result.fill_(std::pow(base, start.toDouble()));
    return result;
  }
  const bool integral = c10::isIntegralType(type, /*includeBool=*/true);
  const double s = in_type(start, type), e = in_type(end, type);
  const double difference = integral ? e - s : in_type(e - s, type);
  const double step = difference / static_cast<double>(steps - 1);
  const double b = integral ? static_cast<double>(static_cast<float>(base)) : base;
  const at::Tensor i = at::arange(steps, doubles);
  const at::Tensor low = i.mul(step).add(s);
  const at::Tensor high = i.neg().add(static_cast<double>(steps - 1)).mul(step).neg().add(e);
  const at::Tensor exponent = at::where(i.lt(static_cast<double>(steps / 2)), low, high);
  result.copy_(at::pow(b, exponent));
  return result;
}

// ---- max_unpool2d / max_unpool3d ----

// out (already shaped) = zeros with self's values scattered to indices
// within each (batch, channel) plane; the last write of a plane wins, as in
// the CPU's serial loop over a plane.
void unpool_into(at::Tensor& out, T self, T indices, int64_t spatial_dims) {
  out.zero_();
  if (out.numel() == 0 || self.numel() == 0) return;
  const int64_t lead = self.dim() - spatial_dims;
  int64_t plane_count = 1;
  for (int64_t d = 0; d < lead; ++d) plane_count *= self.size(d);
  const at::Tensor values = self.reshape({plane_count, -1});
  const at::Tensor where = indices.reshape({plane_count, -1});
  at::Tensor flat = at::zeros({plane_count, out.numel() / plane_count}, self.options());
  flat.scatter_(1, where, values);
  out.copy_(flat.view(out.sizes()));
}

void check_unpool_input(const char* fn, T self) {
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, fn, "Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  }
}

at::Tensor& max_unpool2d_out_mlu(T self, T indices, at::IntArrayRef output_size, at::Tensor& out) {
  at::globalContext().alertNotDeterministic("max_unpooling2d_forward_out");
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 2, "There should be exactly two elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
              "max_unpooling2d(): output_size must contain non-negative spatial dimensions, but got output_size=(",
              output_size[0], ", ", output_size[1], ")");
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  check_unpool_input("max_unpooling2d_forward_out_cpu(): ", self);
  c10::OptionalDeviceGuard guard(self.device());
  const auto memory_format = self.suggest_memory_format();
  if (self.dim() == 3) {
    out.resize_({self.size(0), output_size[0], output_size[1]});
  } else {
    out.resize_({self.size(0), self.size(1), output_size[0], output_size[1]}, memory_format);
  }
  unpool_into(out, self, indices, /*spatial_dims=*/2);
  return out;
}

at::Tensor max_unpool2d_mlu(T self, T indices, at::IntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  return max_unpool2d_out_mlu(self, indices, output_size, out);
}

at::Tensor& max_unpool3d_out_mlu(T self, T indices, at::IntArrayRef output_size, at::IntArrayRef stride,
                                 at::IntArrayRef padding, at::Tensor& out) {
  at::globalContext().alertNotDeterministic("max_unpooling3d_forward_out");
  TORCH_CHECK(out.is_contiguous(), "output must be contiguous");
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 3,
              "There should be exactly three elements (depth, height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but got: ", stride.size(),
              " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but got: ", padding.size(),
              " elements.");
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  check_unpool_input("max_unpooling3d_forward_out_cpu(): ", self);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0 && output_size[2] >= 0,
              "max_unpooling3d(): output_size must contain non-negative spatial dimensions, but got output_size=(",
              output_size[0], ", ", output_size[1], ", ", output_size[2], ")");
  c10::OptionalDeviceGuard guard(self.device());
  if (self.dim() == 5) {
    out.resize_({self.size(0), self.size(1), output_size[0], output_size[1], output_size[2]});
  } else {
    out.resize_({self.size(0), output_size[0], output_size[1], output_size[2]});
  }
  unpool_into(out, self, indices, /*spatial_dims=*/3);
  return out;
}

at::Tensor max_unpool3d_mlu(T self, T indices, at::IntArrayRef output_size, at::IntArrayRef stride,
                            at::IntArrayRef padding) {
  at::Tensor out = at::empty({0}, self.options());
  return max_unpool3d_out_mlu(self, indices, output_size, stride, padding, out);
}

// ---- masked_scatter_ ----

// The k-th set element of the mask (in self's logical order) takes source's
// k-th element (in source's logical order), as the CPU's linear iteration.
at::Tensor& masked_scatter_mlu(at::Tensor& self, T mask, T source) {
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.dtype() == at::ScalarType::Bool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  if (!has_move_kernel(self)) return cpu_fallback<ATEN_OP(masked_scatter_)>(self, mask, source);
  c10::MaybeOwned<at::Tensor> b_mask = at::expand_inplace(self, mask, "masked_scatter_");
  if (b_mask->numel() == 0) return self;
  c10::OptionalDeviceGuard guard(self.device());
  const at::Tensor flat_mask = b_mask->reshape(-1);
  const int64_t available = source.numel();
  const at::Tensor rank = flat_mask.cumsum(0).sub_(1);
  // Unmasked positions read a padding element at `available`; a masked one
  // past source's end reads `available + 1`, out of bounds, so the gather
  // raises a device-side error where the CPU raises "Number of elements of
  // source < number of ones in mask".
  const at::Tensor position = at::where(flat_mask, at::where(rank.lt(available), rank, available + 1), available);
  const at::Tensor padded = at::cat({source.reshape(-1), at::zeros({1}, source.options())});
  const at::Tensor values = padded.index_select(0, position).view(self.sizes());
  self.copy_(at::where(*b_mask, values, self));
  return self;
}

// ---- nonzero_static ----

at::Tensor& nonzero_static_out_mlu(T self, int64_t size, int64_t fill_value, at::Tensor& result) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(result.scalar_type() == at::kLong,
              "nonzero_static: Expected out tensor to have scalar type Long but got scalar type", result.scalar_type());
  const int64_t ndim = self.dim();
  if (result.dim() != 2 || result.size(0) != size || result.size(1) != ndim) {
    at::native::resize_output(result, {size, ndim});
  }
  TORCH_CHECK(result.dim() == 2, "nonzero_static: Expected out tensor to be a 2D tensor but got a ", result.dim(),
              "D tensor");
  TORCH_CHECK(result.size(0) == size && result.size(1) == ndim, "nonzero_static: Expected out tensor to have Size([",
              size, ", ", ndim, "]) but got Size([", result.size(0), ", ", result.size(1), "]) ");
  if (result.size(0) == 0 || result.size(1) == 0) return result;
  const at::Tensor found = at::nonzero(self);
  const int64_t copied = std::min(size, found.size(0));
  result.narrow(0, 0, copied).copy_(found.narrow(0, 0, copied));
  if (size > copied) result.narrow(0, copied, size - copied).fill_(fill_value);
  return result;
}

at::Tensor nonzero_static_mlu(T self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  at::Tensor result = at::empty({size, self.dim()}, self.options().dtype(at::kLong));
  return nonzero_static_out_mlu(self, size, fill_value, result);
}

// ---- repeat_interleave(repeats) ----

// result[j] = i for j in [cumsum[i] - repeats[i], cumsum[i]): the number of
// cumulative ends at or before j, a histogram of the ends summed up.
at::Tensor repeat_interleave_mlu(T repeats, std::optional<int64_t> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  if (repeats.size(0) == 0) return at::empty_like(repeats, LEGACY_CONTIGUOUS_MEMORY_FORMAT);
  c10::OptionalDeviceGuard guard(repeats.device());
  const at::Tensor ends = repeats.cumsum(0, at::kLong);
  const int64_t required = ends[-1].item<int64_t>();
  int64_t total = required;
  if (output_size.has_value()) {
    total = *output_size;
    TORCH_CHECK(total == required, "repeat_interleave: Invalid output_size, expected ", required, " but got ", total);
  } else {
    TORCH_CHECK(repeats.ge(0).all().item<bool>(), "repeats can not be negative");
  }
  at::Tensor marks = at::zeros({total + 1}, repeats.options().dtype(at::kLong));
  marks.index_add_(0, ends, at::ones_like(ends));
  return marks.narrow(0, 0, total).cumsum(0).to(repeats.scalar_type());
}

// ---- cummax / cummin ----

// Running maximum (or minimum) along dim by doubling: after the step with
// offset k every element holds the extreme of the 2k elements ending at it.
// maximum / minimum propagate NaN, as the CPU's running loop does.
at::Tensor running_extreme(at::Tensor v, int64_t dim, bool is_max) {
  const int64_t n = v.size(dim);
  for (int64_t k = 1; k < n; k *= 2) {
    const at::Tensor later = v.narrow(dim, k, n - k), earlier = v.narrow(dim, 0, n - k);
    v = at::cat({v.narrow(dim, 0, k), is_max ? at::maximum(later, earlier) : at::minimum(later, earlier)}, dim);
  }
  return v;
}

// The CPU's cummax_cummin_helper takes element j as the new extreme when it
// is NaN or, while the extreme is not NaN, when it ties or beats it (>= for
// max, <= for min); its index is the last such j. Those j are exactly the
// ones equal to the running extreme at j, or NaN, so the index is the
// running maximum of j over them.
void cumulative_extreme(T self, at::Tensor& values, at::Tensor& indices, int64_t dim, bool is_max) {
  c10::OptionalDeviceGuard guard(self.device());
  const at::Tensor extreme = running_extreme(self, dim, is_max);
  std::vector<int64_t> shape(self.dim(), 1);
  shape[dim] = self.size(dim);
  const at::Tensor position = at::arange(self.size(dim), self.options().dtype(at::kLong)).view(shape);
  at::Tensor takes = self.eq(extreme);
  if (self.is_floating_point()) takes.logical_or_(self.isnan());
  const at::Tensor candidate = at::where(takes, position, -1);
  values.copy_(extreme);
  indices.copy_(running_extreme(candidate, dim, /*is_max=*/true));
}

// ---- median / nanmedian ----

// The CPU's median_impl and median_with_indices_impl select with
// nth_element, NaN ordered last and ties by index: the element a stable sort
// puts at position k. median: k = (n - 1) / 2, or the first NaN when there is
// one; nanmedian: k = (n - nans - 1) / 2 (0 when all are NaN). Bool and
// complex, which the CPU does not define, go to the fallback for its error.
bool median_native(T self) { return has_kernel(self) && !self.is_complex() && self.scalar_type() != at::kBool; }

// Position k of the median along dim, one per slice (dim kept, size 1).
at::Tensor median_position(T values, int64_t dim, int64_t n, bool ignore_nan) {
  if (!values.is_floating_point()) {
    std::vector<int64_t> shape = values.sizes().vec();
    shape[dim] = 1;
    return at::full(shape, (n - 1) / 2, values.options().dtype(at::kLong));
  }
  const at::Tensor nans = values.isnan().sum(dim, /*keepdim=*/true);
  if (ignore_nan) return nans.neg().add(n - 1).clamp_min(0).div(2, "floor");
  return at::where(nans.gt(0), nans.neg().add(n), (n - 1) / 2);
}

at::Tensor median_all(T self, bool ignore_nan) {
  const int64_t n = self.numel();
  if (n <= 0) return at::full({}, std::numeric_limits<float>::quiet_NaN()).to(self.options());
  c10::OptionalDeviceGuard guard(self.device());
  const at::Tensor sorted = std::get<0>(at::sort(self.reshape(-1), /*stable=*/true, 0, /*descending=*/false));
  return sorted.gather(0, median_position(self.reshape(-1), 0, n, ignore_nan)).squeeze(0);
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(T self, int64_t dim, bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices, bool ignore_nan) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.dim() > 0 ? self.size(dim) : 1;
  at::native::zero_numel_check_dims(self, dim, "median()");
  at::checkDeviceType("median", {values, indices}, self.device().type());
  at::checkScalarType("median", {indices, "indices", 1}, at::kLong);
  at::checkSameType("median", {values, "values", 0}, {self, "self", 2});
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) {
      shape[dim] = 1;
    } else {
      shape.erase(shape.begin() + dim);
    }
  }
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  if (values.numel() == 0) return {values, indices};
  c10::OptionalDeviceGuard guard(self.device());
  const at::Tensor in = self.dim() > 0 ? self : self.unsqueeze(0);
  auto [sorted, order] = at::sort(in, /*stable=*/true, dim, /*descending=*/false);
  const at::Tensor k = median_position(in, dim, n, ignore_nan);
  values.copy_(sorted.gather(dim, k).view(shape));
  indices.copy_(order.gather(dim, k).view(shape));
  return {values, indices};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/CompositeOps.inc"
