// Reductions on mlu: sum, mean, prod, amax/amin, max/min (full and along a
// dim, with indices), argmax/argmin, all/any, linalg_vector_norm and norm,
// var/std (+ _mean), cumsum/cumprod. The structured ones run PyTorch's meta
// functions (output shape, dtype and argument checks as on the CPU) and then
// one kernel of mlu_kernels/reduce.h over the input and the output viewed
// with stride 0 on the reduced dims.
#include <ATen/MemoryOverlap.h>

#include <ATen/ops/all_ops.h>
#include <ATen/ops/amax_ops.h>
#include <ATen/ops/amin_ops.h>
#include <ATen/ops/any_ops.h>
#include <ATen/ops/argmax_ops.h>
#include <ATen/ops/argmin_ops.h>
#include <ATen/ops/cumprod_ops.h>
#include <ATen/ops/cumsum_ops.h>
#include <ATen/ops/linalg_vector_norm_ops.h>
#include <ATen/ops/max_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/min_ops.h>
#include <ATen/ops/prod_ops.h>
#include <ATen/ops/sum_ops.h>
#include <algorithm>
#include <numeric>

#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/real.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/prod_meta.h>
#include <ATen/ops/real.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/sum_meta.h>
#include <mlu_kernels/reduce.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using k::ReduceOp;

// Inputs beyond the kernels' 16 dims take the CPU fallback (which also
// raises ATen's own errors for them), and so do complex ones, except for the
// reductions that are sums of parts (`complex_ok`: sum, mean; Note
// [Complex sums]).
bool has_reduce_kernel(const at::Tensor& t, bool complex_ok = false) {
  const bool complex_sum = complex_ok && t.is_complex() && kernel_dtype(t.scalar_type()).has_value();
  return (has_kernel(t) || complex_sum) && t.dim() < k::kMaxDims + (t.is_complex() ? 0 : 1);
}

// The input's dims with the output's strides (0 where reduced), ordered so
// that the input's fastest dim comes last (the kernels' inner mode).
struct Geometry {
  k::Shape shape;
  k::Strides in, out;
};

Geometry reduce_geometry(const at::Tensor& self, const at::Tensor& result, const at::native::DimMask& mask,
                         bool keepdim) {
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim <= k::kMaxDims, "mlu reductions support at most ", k::kMaxDims, " dims, got ", ndim);
  std::vector<int64_t> order(static_cast<size_t>(ndim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return std::abs(self.stride(a)) > std::abs(self.stride(b)); });
  // The result's stride for each input dim (0 where reduced).
  std::vector<int64_t> out_stride(static_cast<size_t>(ndim), 0);
  int64_t r = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    const bool reduced = mask[d];
    if (!reduced) out_stride[static_cast<size_t>(d)] = result.dim() == 0 ? 0 : result.stride(keepdim ? d : r);
    if (!reduced || keepdim) ++r;
  }
  Geometry g;
  g.shape.ndim = static_cast<int>(ndim);
  for (int64_t j = 0; j < ndim; ++j) {
    const int64_t d = order[static_cast<size_t>(j)];
    g.shape.sizes[j] = self.size(d);
    g.in.v[j] = self.stride(d);
    g.out.v[j] = out_stride[static_cast<size_t>(d)];
  }
  return g;
}

// Note [Complex sums]
// A sum or mean of complex numbers is the sum or mean of their real parts and
// of their imaginary parts: the kernels reduce the real views (one more,
// unreduced dim of 2), in the order they sum real tensors.
void launch_reduce(ReduceOp op, const at::Tensor& self, const at::Tensor& result, const at::native::DimMask& mask,
                   bool keepdim, double p = 0) {
  if (result.numel() == 0) return;
  // sum(x, dtype=torch.float64) of float32 x: the CPU's iterator casts the
  // input to the result's type and accumulates there; mlu's kernels would
  // accumulate in the input's accumulate type (float), so cast first.
  const at::ScalarType to = result.scalar_type();
  const bool arithmetic = op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Prod;
  const bool wider = (to == at::kDouble || to == at::kComplexDouble) && self.scalar_type() != to;
  const bool to_floating = c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) &&
                           (at::isFloatingType(to) || at::isComplexType(to));
  if (arithmetic && (wider || to_floating)) {
    launch_reduce(op, self.to(to), result, mask, keepdim, p);
    return;
  }
  if (self.is_complex()) {
    TORCH_INTERNAL_ASSERT(op == ReduceOp::Sum || op == ReduceOp::Mean);
    TORCH_CHECK(result.is_complex(), "mlu: a sum of complex numbers into a real result is not supported");
    at::native::DimMask parts_mask = mask;
    parts_mask[self.dim()] = false;
    launch_reduce(op, at::view_as_real(self.resolve_conj()), at::view_as_real(result), parts_mask, keepdim, p);
    return;
  }
  const Geometry g = reduce_geometry(self, result, mask, keepdim);
  const k::Operand in = kernel_operand(self, g.in, "reduce");
  const k::Operand out{device_ptr(result), require_kernel_dtype(result.scalar_type(), "reduce"), g.out};
  const k::Shape shape = g.shape;
  c10::DeviceGuard guard(result.device());
  launch_kernel(result.device().index(), "reduce", [=] { k::reduce(op, shape, out, in, p); });
}

at::native::DimMask mask_of(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  return at::native::make_dim_mask(dim, self.dim());
}

// Rows along `dim`: the dim moves last in the kernel geometry.
struct RowGeometry {
  k::Shape shape;
  k::Strides in, out, out2;
};

RowGeometry row_geometry(const at::Tensor& self, int64_t dim, const at::Tensor& out, const at::Tensor& out2,
                         bool out_keeps_dim) {
  RowGeometry g;
  const int64_t ndim = std::max<int64_t>(self.dim(), 1);
  TORCH_CHECK(ndim <= k::kMaxDims, "mlu reductions support at most ", k::kMaxDims, " dims, got ", ndim);
  auto out_stride = [&](const at::Tensor& t, int64_t d) -> int64_t {
    if (!t.defined() || t.dim() == 0) return 0;
    if (out_keeps_dim) return t.stride(d);
    return t.stride(d < dim ? d : d - 1);
  };
  int j = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == dim) continue;
    g.shape.sizes[j] = self.size(d);
    g.in.v[j] = self.stride(d);
    g.out.v[j] = out_stride(out, d);
    g.out2.v[j] = out_stride(out2, d);
    ++j;
  }
  g.shape.sizes[j] = self.dim() == 0 ? 1 : self.size(dim);
  g.in.v[j] = self.dim() == 0 ? 1 : self.stride(dim);
  // Arg-reductions write one element per row (stride 0 along it); scans one
  // per input element.
  g.out.v[j] = out_keeps_dim && out.defined() && out.dim() > 0 && out.size(dim) > 1 ? out.stride(dim) : 0;
  g.out2.v[j] = out_keeps_dim && out2.defined() && out2.dim() > 0 && out2.size(dim) > 1 ? out2.stride(dim) : 0;
  g.shape.ndim = j + 1;
  return g;
}

// values (optional) and indices of the best element along dim.
void launch_arg_reduce(bool is_max, const at::Tensor& self, int64_t dim, const at::Tensor& values,
                       const at::Tensor& indices, bool keepdim) {
  if (indices.numel() == 0) return;
  const RowGeometry g = row_geometry(self, dim, indices, values, keepdim);
  const k::Operand in = kernel_operand(self, g.in, "argmax");
  const k::Operand idx{device_ptr(indices), k::ScalarType::Int64, g.out};
  const k::Operand val{device_ptr(values),
                       values.defined() ? require_kernel_dtype(values.scalar_type(), "max") : k::ScalarType::Int64,
                       g.out2};
  const k::Shape shape = g.shape;
  c10::DeviceGuard guard(indices.device());
  launch_kernel(indices.device().index(), is_max ? "argmax" : "argmin",
                [=] { k::arg_reduce(is_max, shape, val, idx, in); });
}

void launch_scan(k::ScanOp op, const at::Tensor& self, int64_t dim, const at::Tensor& result) {
  if (result.numel() == 0) return;
  const RowGeometry g = row_geometry(self, dim, result, at::Tensor(), /*out_keeps_dim=*/true);
  const k::Operand in = kernel_operand(self, g.in, "cumsum");
  const k::Operand out{device_ptr(result), require_kernel_dtype(result.scalar_type(), "cumsum"), g.out};
  k::Shape shape = g.shape;
  c10::DeviceGuard guard(result.device());
  launch_kernel(result.device().index(), op == k::ScanOp::Sum ? "cumsum" : "cumprod",
                [=] { k::scan(op, shape, out, in); });
}

// ---- structured reductions: one template per variant ----

template <class Meta, bool kComplexOk = false, class Impl, class Fallback, class... Args>
at::Tensor reduce_functional(Impl&& impl, Fallback&& fallback, const at::Tensor& self, const Args&... args) {
  if (!has_reduce_kernel(self, kComplexOk)) return fallback();
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> op;
  op.meta(self, args...);
  impl(op.output(0));
  return std::move(op.output(0));
}

template <class Meta, bool kComplexOk = false, class Impl, class Fallback, class... Args>
at::Tensor& reduce_out(Impl&& impl, Fallback&& fallback, at::Tensor& out, const at::Tensor& self, const Args&... args) {
  if (!has_reduce_kernel(self, kComplexOk) || !has_reduce_kernel(out, kComplexOk)) return fallback();
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> op(out);
  op.meta(self, args...);
  impl(op.maybe_get_output(0));
  op.finish();
  return out;
}

#define MLU_REDUCE_IMPL(OP_EXPR, MASK_EXPR, KEEPDIM, P) \
  [&](const at::Tensor& result) { launch_reduce(OP_EXPR, self, result, MASK_EXPR, KEEPDIM, P); }

at::Tensor sum_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  return reduce_functional<at::meta::structured_sum_dim_IntList, true>(
      MLU_REDUCE_IMPL(ReduceOp::Sum, mask_of(self, dim), keepdim, 0),
      [&] { return cpu_fallback<ATEN_OP2(sum, dim_IntList)>(self, dim, keepdim, dtype); }, self, dim, keepdim, dtype);
}

at::Tensor& sum_out_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return reduce_out<at::meta::structured_sum_dim_IntList, true>(
      MLU_REDUCE_IMPL(ReduceOp::Sum, mask_of(self, dim), keepdim, 0),
      [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(sum, IntList_out)>(self, dim, keepdim, dtype, out); }, out,
      self, dim, keepdim, dtype);
}

at::Tensor mean_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  return reduce_functional<at::meta::structured_mean_dim, true>(
      MLU_REDUCE_IMPL(ReduceOp::Mean, mask_of(self, dim), keepdim, 0),
      [&] { return cpu_fallback<ATEN_OP2(mean, dim)>(self, dim, keepdim, dtype); }, self, dim, keepdim, dtype);
}

at::Tensor& mean_out_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype, at::Tensor& out) {
  // The CPU computes sum(...).div_(n) in out: an integral out fails the cast.
  TORCH_CHECK(!c10::isIntegralType(out.scalar_type(), /*includeBool=*/true),
              "result type Float can't be cast to "
              "the desired output type ",
              out.scalar_type());
  return reduce_out<at::meta::structured_mean_dim, true>(
      MLU_REDUCE_IMPL(ReduceOp::Mean, mask_of(self, dim), keepdim, 0),
      [&]() -> at::Tensor& { return cpu_fallback<ATEN_OP2(mean, out)>(self, dim, keepdim, dtype, out); }, out, self,
      dim, keepdim, dtype);
}

// Note [Complex products by pairs]
// The reduce and scan kernels do not multiply complex numbers; complex prod
// and cumprod multiply pairs with the native complex mul instead: prod as a
// tree of pairwise products along the dim (log2 n launches), cumprod as a
// Hillis-Steele scan (log2 n steps). Only the association of the products
// differs from the CPU's loop, as in any parallel reduction.
at::Tensor complex_prod_keepdim(at::Tensor t, int64_t dim) {
  if (t.size(dim) == 0) {
    std::vector<int64_t> sizes = t.sizes().vec();
    sizes[static_cast<size_t>(dim)] = 1;
    return at::ones(sizes, t.options());
  }
  while (t.size(dim) > 1) {
    const int64_t n = t.size(dim), half = n / 2;
    at::Tensor pairs = at::mul(t.narrow(dim, 0, half), t.narrow(dim, half, half));
    t = n % 2 == 0 ? pairs : at::cat({pairs, t.narrow(dim, 2 * half, 1)}, dim);
  }
  return t;
}

at::Tensor complex_cumprod(at::Tensor t, int64_t dim) {
  const int64_t n = t.size(dim);
  for (int64_t step = 1; step < n; step *= 2) {
    at::Tensor next = t.clone();
    next.narrow(dim, step, n - step).mul_(t.narrow(dim, 0, n - step));
    t = next;
  }
  return t;
}

bool complex_product_native(const at::Tensor& self) {
  return self.is_complex() && has_move_kernel(self) && self.dim() < k::kMaxDims;
}

at::Tensor prod_dim_mlu(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  if (complex_product_native(self)) {
    c10::OptionalDeviceGuard guard(self.device());
    MLUFunctional<at::meta::structured_prod_dim_int> meta;
    meta.meta(self, dim, keepdim, dtype);
    at::Tensor& result = meta.output(0);
    const at::Tensor source = (self.dim() == 0 ? self.unsqueeze(0) : self).to(result.scalar_type());
    const int64_t d = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
    result.copy_(complex_prod_keepdim(source, d).view(result.sizes()));
    return std::move(result);
  }
  return reduce_functional<at::meta::structured_prod_dim_int>(
      MLU_REDUCE_IMPL(ReduceOp::Prod, mask_of(self, at::IntArrayRef(dim)), keepdim, 0),
      [&] { return cpu_fallback<ATEN_OP2(prod, dim_int)>(self, dim, keepdim, dtype); }, self, dim, keepdim, dtype);
}

at::Tensor prod_mlu(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (!has_reduce_kernel(self) && !complex_product_native(self)) {
    return cpu_fallback<ATEN_OP(prod)>(self, dtype);
  }
  c10::OptionalDeviceGuard guard(self.device());
  const at::ScalarType out_dtype = at::native::get_dtype_from_self(self, dtype, /*promote_integers=*/true);
  if (self.is_complex()) {
    return complex_prod_keepdim(self.reshape({-1}).to(out_dtype), 0).reshape({});
  }
  at::Tensor result = at::empty({}, self.options().dtype(out_dtype));
  launch_reduce(ReduceOp::Prod, self, result, mask_of(self, {}), false);
  return result;
}

template <class Meta, class AtenOp>
at::Tensor amax_like(ReduceOp op, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return reduce_functional<Meta>(
      MLU_REDUCE_IMPL(op, mask_of(self, dim), keepdim, 0), [&] { return cpu_fallback<AtenOp>(self, dim, keepdim); },
      self, dim, keepdim);
}

template <class Meta, class AtenOp>
at::Tensor& amax_like_out(ReduceOp op, const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return reduce_out<Meta>(
      MLU_REDUCE_IMPL(op, mask_of(self, dim), keepdim, 0),
      [&]() -> at::Tensor& { return cpu_fallback<AtenOp>(self, dim, keepdim, out); }, out, self, dim, keepdim);
}

// max() / min() over every element.
at::Tensor max_all_mlu(const at::Tensor& self, bool is_max) {
  TORCH_CHECK(self.numel() > 0, is_max ? "max" : "min",
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  if (!has_reduce_kernel(self)) {
    return is_max ? cpu_fallback<ATEN_OP(max)>(self) : cpu_fallback<ATEN_OP(min)>(self);
  }
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor result = at::empty({}, self.options());
  launch_reduce(is_max ? ReduceOp::Max : ReduceOp::Min, self, result, mask_of(self, {}), false);
  return result;
}

template <class Meta>
std::tuple<at::Tensor, at::Tensor> max_dim_mlu(bool is_max, const at::Tensor& self, int64_t dim, bool keepdim) {
  if (!has_reduce_kernel(self)) {
    return is_max ? cpu_fallback<ATEN_OP2(max, dim)>(self, dim, keepdim)
                  : cpu_fallback<ATEN_OP2(min, dim)>(self, dim, keepdim);
  }
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta, 2> op;
  const auto pre = op.meta(self, dim, keepdim);
  launch_arg_reduce(is_max, self, self.dim() == 0 ? 0 : pre.dim, op.output(0), op.output(1), keepdim);
  return {std::move(op.output(0)), std::move(op.output(1))};
}

template <class Meta>
at::Tensor argmax_mlu(bool is_max, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!has_reduce_kernel(self)) {
    return is_max ? cpu_fallback<ATEN_OP(argmax)>(self, dim, keepdim)
                  : cpu_fallback<ATEN_OP(argmin)>(self, dim, keepdim);
  }
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> op;
  op.meta(self, dim, keepdim);
  at::Tensor& result = op.output(0);
  if (result.numel() == 0) return std::move(result);
  if (dim.has_value()) {
    const int64_t d = self.dim() == 0 ? 0 : at::maybe_wrap_dim(*dim, self.dim());
    launch_arg_reduce(is_max, self, d, at::Tensor(), result, keepdim);
  } else {
    // Over the flattened input: its index is the row-major linear index.
    const at::Tensor flat = self.reshape({-1});
    launch_arg_reduce(is_max, flat, 0, at::Tensor(), result.view(at::IntArrayRef()), false);
  }
  return std::move(result);
}

// all / any: bool results (uint8 for uint8 inputs, as PyTorch).
template <class Meta, class AtenOp, class... Args>
at::Tensor all_any_mlu(ReduceOp op, const at::Tensor& self, const at::native::DimMask& mask, bool keepdim,
                       const Args&... args) {
  if (self.is_complex() && has_move_kernel(self) && self.dim() < k::kMaxDims) {  // whether each element is nonzero
    return all_any_mlu<Meta, AtenOp>(op, at::ne(self, 0), mask, keepdim, args...);
  }
  if (!has_reduce_kernel(self)) {
    return cpu_fallback<AtenOp>(self, args...);
  }
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> op_meta;
  op_meta.meta(self, args...);
  launch_reduce(op, self, op_meta.output(0), mask, keepdim);
  return std::move(op_meta.output(0));
}

ReduceOp norm_op(double ord) {
  if (ord == 2) return ReduceOp::Norm2;
  if (ord == 1) return ReduceOp::Norm1;
  if (ord == 0) return ReduceOp::Norm0;
  if (std::isinf(ord)) return ord > 0 ? ReduceOp::AbsMax : ReduceOp::AbsMin;
  return ReduceOp::NormP;
}

// The norm of complex elements is the norm of their absolute values (in the
// dtype's real counterpart), as the CPU's kernel computes it.
bool complex_norm_native(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return self.is_complex() && has_move_kernel(self) && self.dim() < k::kMaxDims &&
         (!dtype.has_value() || kernel_dtype(*dtype).has_value());
}

at::Tensor complex_abs_for_norm(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!dtype.has_value() || at::isComplexType(*dtype),
              "linalg.vector_norm: dtype should be complex for complex inputs, but got ", *dtype);
  return at::abs(dtype.has_value() ? self.to(*dtype) : self);
}

at::Tensor linalg_vector_norm_mlu(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim,
                                  bool keepdim, std::optional<at::ScalarType> dtype) {
  if (complex_norm_native(self, dtype)) {
    return at::linalg_vector_norm(complex_abs_for_norm(self, dtype), ord, dim, keepdim, std::nullopt);
  }
  return reduce_functional<at::meta::structured_linalg_vector_norm>(
      [&](const at::Tensor& result) {
        const double p = ord.toDouble();
        launch_reduce(norm_op(p), self, result, at::native::make_dim_mask(dim, self.dim()), keepdim, p);
      },
      [&] { return cpu_fallback<ATEN_OP(linalg_vector_norm)>(self, ord, dim, keepdim, dtype); }, self, ord, dim,
      keepdim, dtype);
}

at::Tensor& linalg_vector_norm_out_mlu(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim,
                                       bool keepdim, std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (complex_norm_native(self, dtype)) {
    return at::linalg_vector_norm_out(out, complex_abs_for_norm(self, dtype), ord, dim, keepdim, std::nullopt);
  }
  return reduce_out<at::meta::structured_linalg_vector_norm>(
      [&](const at::Tensor& result) {
        const double p = ord.toDouble();
        launch_reduce(norm_op(p), self, result, at::native::make_dim_mask(dim, self.dim()), keepdim, p);
      },
      [&]() -> at::Tensor& {
        return cpu_fallback<ATEN_OP2(linalg_vector_norm, out)>(self, ord, dim, keepdim, dtype, out);
      },
      out, self, ord, dim, keepdim, dtype);
}

// var (or std, `take_sqrt`) and mean as two passes of native kernels (mean,
// then the mean of squared deviations), in float for 16-bit inputs like
// PyTorch's accumulation; std takes its square root before the one rounding
// to the 16-bit type, as the CPU's Welford reduction does.
std::tuple<at::Tensor, at::Tensor> moments(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                           const std::optional<at::Scalar>& correction, bool keepdim, bool take_sqrt) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || self.is_complex(),
              "std and var only support floating point and complex dtypes");
  const bool half = self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16;
  const at::Tensor x = half ? self.to(at::kFloat) : self;
  const at::Tensor mean = at::mean(x, dim, /*keepdim=*/true);
  const at::Tensor diff = x.sub(mean);
  const at::Tensor sq = x.is_complex() ? at::real(diff.mul(diff.conj())) : diff.mul(diff);
  const auto mask = at::native::make_dim_mask(dim, self.dim());
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) n *= self.size(d);
  }
  const double c = correction.has_value() ? correction->toDouble() : 1.0;
  const double divisor = std::max(0.0, static_cast<double>(n) - c);
  at::Tensor var = at::sum(sq, dim, keepdim).div_(divisor);
  if (take_sqrt) var.sqrt_();
  at::Tensor m = keepdim ? mean : (dim.has_value() && !dim->empty() ? mean.squeeze(*dim) : mean.reshape({}));
  if (half) {
    var = var.to(self.scalar_type());
    m = m.to(self.scalar_type());
  }
  return {var, m};
}

std::tuple<at::Tensor, at::Tensor> var_mean_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments(self, dim, correction, keepdim, /*take_sqrt=*/false);
}

at::Tensor var_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                   bool keepdim) {
  return std::get<0>(moments(self, dim, correction, keepdim, /*take_sqrt=*/false));
}

at::Tensor std_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                   bool keepdim) {
  return std::get<0>(moments(self, dim, correction, keepdim, /*take_sqrt=*/true));
}

std::tuple<at::Tensor, at::Tensor> std_mean_mlu(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments(self, dim, correction, keepdim, /*take_sqrt=*/true);
}

// Whether the scans take self: the real dtypes, and complex ones: cumsum
// sums the real and imaginary planes apart (Note [Complex elements moved as
// bits] in KernelArgs.h), cumprod multiplies pairs (Note [Complex products by
// pairs]).
bool scan_takes(k::ScanOp, const at::Tensor& self) {
  return has_reduce_kernel(self) || (self.is_complex() && has_move_kernel(self) && self.dim() < k::kMaxDims);
}

// The scan of self into result (of result's dtype, to which a complex self is
// converted first, as the CPU's cumsum does).
void scan_into(k::ScanOp op, const at::Tensor& self, int64_t dim, const at::Tensor& result) {
  dim = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  if (!self.is_complex()) return launch_scan(op, self, dim, result);
  const at::Tensor source = self.scalar_type() == result.scalar_type() ? self : self.to(result.scalar_type());
  if (!result.is_complex()) return launch_scan(op, source, dim, result);
  if (op == k::ScanOp::Prod) {  // Note [Complex products by pairs]
    result.copy_(source.dim() == 0 ? source : complex_cumprod(source, dim));
    return;
  }
  launch_scan(op, at::real(source), dim, at::real(result));
  launch_scan(op, at::imag(source), dim, at::imag(result));
}

template <class Meta, class AtenOp>
at::Tensor cumulative_mlu(k::ScanOp op, const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  if (!scan_takes(op, self) || (dtype.has_value() && !kernel_dtype(*dtype))) {
    return cpu_fallback<AtenOp>(self, dim, dtype);
  }
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> meta;
  meta.meta(self, dim, dtype);
  scan_into(op, self, dim, meta.output(0));
  return std::move(meta.output(0));
}

template <class Meta, class AtenOp>
at::Tensor& cumulative_out_mlu(k::ScanOp op, const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                               at::Tensor& out) {
  if (!scan_takes(op, self) || !scan_takes(op, out)) {
    return cpu_fallback<AtenOp>(self, dim, dtype, out);
  }
  at::assert_no_internal_overlap(out);  // an expanded out= (or cumsum_ self): the CPU's error
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> meta(out);
  meta.meta(self, dim, dtype);
  // In place (cumsum_): the kernel reads each row while writing it, so it scans a copy.
  scan_into(op, out.is_same(self) ? self.clone() : self, dim, meta.maybe_get_output(0));
  meta.finish();
  return out;
}

}  // namespace

namespace {

// out = result, resized as structured kernels resize their out (a warning if
// a non-empty out had another shape).
at::Tensor& copy_to_out(const char* name, const at::Tensor& result, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kBool || out.scalar_type() == at::kByte, name,
              " only supports bool tensor for result, got: ", out.scalar_type());
  TORCH_CHECK(out.device() == result.device(), "Expected out tensor to have device ", result.device(),
              ", but got out on ", out.device(), " instead");
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ReduceOps.inc"
