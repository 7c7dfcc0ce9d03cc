// Indexing on mlu: index_select, gather, scatter (value / src / reduce),
// scatter_add, scatter_reduce, index_add, index_reduce, masked_fill, cat and embedding's backward.
//
// Index values are checked on the device, while the kernel runs: an
// out-of-range index is a device-side error naming the op, stored on the
// stream's queue and raised at the next synchronisation that covers it (Note
// [Errors belong to queues] in mlu_runtime/queue.h); the device keeps working.
#include <ATen/ops/index_select_ops.h>
#include <ATen/ops/masked_fill_ops.h>
#include <limits>

#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/real.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <mlu_kernels/index.h>

#include "csrc/aten/Copy.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

k::Shape shape_of(const at::Tensor& t) {
  k::Shape s;
  s.ndim = static_cast<int>(std::max<int64_t>(t.dim(), 1));
  s.sizes[0] = 1;
  for (int64_t d = 0; d < t.dim(); ++d) s.sizes[d] = t.size(d);
  return s;
}

std::string bounds_message(const char* op, int64_t bad, int64_t dim, int64_t size) {
  return std::string(op) + "(): index " + std::to_string(bad) + " is out of bounds for dimension " +
         std::to_string(dim) + " with size " + std::to_string(size);
}

// out[p] = in[p with p[dim] := index[p]] over `shape` (index's shape, or the
// output's with the index broadcast).
void launch_gather(const char* op, const k::Shape& shape, int dim, const k::Operand& out, const k::Operand& in,
                   int64_t dim_size, const k::Operand& index, c10::Device device) {
  c10::DeviceGuard guard(device);
  launch_kernel(device.index(), op, [=](mlu::TaskContext& context) {
    const k::IndexCheck check = k::gather(shape, dim, out, in, dim_size, index);
    if (!check.ok) context.fail(bounds_message(op, check.bad_index, dim, dim_size));
  });
}

void launch_scatter(const char* op, k::ScatterOp kind, const k::Shape& shape, int dim, const k::Operand& self,
                    int64_t dim_size, const k::Operand& src, const k::Operand& index, double alpha, c10::Device device,
                    bool round_each_update = false) {
  c10::DeviceGuard guard(device);
  launch_kernel(device.index(), op, [=](mlu::TaskContext& context) {
    const k::IndexCheck check = k::scatter(kind, shape, dim, self, dim_size, src, index, alpha, round_each_update);
    if (!check.ok) context.fail(bounds_message(op, check.bad_index, dim, dim_size));
  });
}

// ---- index_select: a gather with the 1-D index broadcast along `dim` ----

at::Tensor& index_select_out_mlu(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "index_select(): self and result must have the same scalar "
              "type");
  TORCH_CHECK(self.device() == out.device() && index.device() == self.device(),
              "Expected all tensors to be on the same device, but found index on ", index.device(), " and self on ",
              self.device());
  if (!has_move_kernel(self)) {
    return cpu_fallback<ATEN_OP2(index_select, out)>(self, dim, index, out);
  }
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  c10::OptionalDeviceGuard guard(self.device());
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) sizes[static_cast<size_t>(dim)] = index.numel();
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(dim) > 0,
                    "index_select(): self indexing axis dim should be "
                    "positive");
  k::Operand idx{
      const_cast<void*>(device_ptr<const void>(index)), require_kernel_dtype(index.scalar_type(), "index_select"), {}};
  if (self.dim() > 0) idx.strides.v[dim] = index.dim() == 0 ? 0 : index.stride(0);
  // Note [Transposed index_select]: when `dim` is the input's unit-stride dim
  // (x.t() selecting rows), every slice is strided and the gather reads one
  // element per cache line. For an index of at least a quarter of the dim,
  // one tiled transposing copy first (Note [Blocked transposing copies]),
  // then row-major slices, reads whole cache lines and is much faster
  // (timings: docs/bench_kernels.md). The copy is queued before the gather
  // and freed in stream order.
  const bool strided_slices = self.dim() > 1 && !self.is_contiguous() && self.stride(dim) == 1 && self.size(dim) > 1 &&
                              index.numel() * 4 >= self.size(dim);
  const at::Tensor source = strided_slices ? self.contiguous() : self;
  launch_gather("index_select", shape_of(out), static_cast<int>(self.dim() == 0 ? 0 : dim),
                kernel_operand(out, "index_select"), kernel_operand(source, "index_select"),
                self.dim() == 0 ? 1 : self.size(dim), idx, self.device());
  return out;
}

at::Tensor index_select_mlu(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out_mlu(self, dim, index, out);
}

// ---- gather / scatter through their meta functions ----

void gather_impl(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& out) {
  if (index.numel() == 0) return;
  dim = at::maybe_wrap_dim(dim, self.dim());
  launch_gather("gather", shape_of(index), static_cast<int>(dim), kernel_operand(out, "gather"),
                kernel_operand(self, "gather"), self.dim() == 0 ? 1 : self.size(dim), kernel_operand(index, "gather"),
                self.device());
}

k::ScatterOp scatter_kind(c10::string_view reduce) {
  if (reduce == "add" || reduce == "sum" || reduce == "mean") return k::ScatterOp::Add;
  if (reduce == "multiply" || reduce == "prod") return k::ScatterOp::Mul;
  if (reduce == "amax") return k::ScatterOp::Max;
  if (reduce == "amin") return k::ScatterOp::Min;
  return k::ScatterOp::Assign;
}

// Whether the scatter kernels take t for this op: the real dtypes, and
// complex ones for assignment and addition, which act on the real and
// imaginary planes independently (Note [Complex elements moved as bits]).
bool scatter_takes(k::ScatterOp kind, const at::Tensor& t) {
  return has_kernel(t) ||
         (t.is_complex() && has_move_kernel(t) && (kind == k::ScatterOp::Assign || kind == k::ScatterOp::Add));
}

// Writes src (a tensor, or a scalar when !src.defined()) into result, which
// already holds self (functional / out) or is self (in-place).
void scatter_impl(const char* op, k::ScatterOp kind, const at::Tensor& self, const at::Tensor& result, int64_t dim,
                  const at::Tensor& index, const at::Tensor& src, const at::Scalar& value) {
  if (!result.is_same(self)) copy_on_device(result, self);
  if (index.numel() == 0) return;
  dim = at::maybe_wrap_dim(dim, self.dim());
  // A scalar, converted like fill_, travels in a 0-dim mlu tensor.
  at::Tensor source = src;
  if (!src.defined()) {
    source = at::empty({}, result.options());
    source.fill_(value);
  }
  auto launch = [&](const at::Tensor& into, const at::Tensor& from) {
    // Float16 / BFloat16 sums and products accumulate in float in the kernel
    // (Note [Scatter accumulation in float], kernels/src/index/index.cpp).
    launch_scatter(op, kind, shape_of(index), static_cast<int>(dim), kernel_operand(into, op),
                   into.dim() == 0 ? 1 : into.size(dim), kernel_operand(from, op), kernel_operand(index, op), 1.0,
                   self.device());
  };
  if (result.is_complex()) {
    launch(at::real(result), at::real(source));
    launch(at::imag(result), at::imag(source));
    return;
  }
  launch(result, source);
}

// scatter_reduce.two, as on the CPU: with include_self=False the positions
// that receive a src element first get the reduction's identity; "mean" is a
// sum divided by how many values met at each position (self counting once
// when included), floor-divided for integers.
at::Scalar reduction_identity(c10::string_view reduce, at::ScalarType dtype) {
  if (reduce == "prod") return 1;
  if (reduce != "amax" && reduce != "amin") return 0;
  const bool high = reduce == "amin";
  if (at::isFloatingType(dtype)) {
    const double inf = std::numeric_limits<double>::infinity();
    return high ? inf : -inf;
  }
  return AT_DISPATCH_INTEGRAL_TYPES_AND(at::kBool, dtype, "scatter_reduce", [&] {
    return at::Scalar(high ? std::numeric_limits<scalar_t>::max() : std::numeric_limits<scalar_t>::lowest());
  });
}

void scatter_reduce_two_impl(const at::Tensor& self, const at::Tensor& result, int64_t dim, const at::Tensor& index,
                             const at::Tensor& src, c10::string_view reduce, bool include_self) {
  if (!result.is_same(self)) copy_on_device(result, self);
  if (index.numel() == 0) return;
  if (!include_self) {
    scatter_impl("scatter_reduce", k::ScatterOp::Assign, result, result, dim, index, at::Tensor(),
                 reduction_identity(reduce, result.scalar_type()));
  }
  scatter_impl("scatter_reduce", scatter_kind(reduce), result, result, dim, index, src, 0);
  if (reduce != "mean") return;
  at::Tensor count = include_self ? at::ones_like(result) : at::zeros_like(result);
  count.scatter_add_(dim, index, at::ones_like(src));
  count.masked_fill_(count.eq(0), 1);
  if (result.is_floating_point()) {
    result.div_(count);
  } else {
    result.div_(count, "floor");
  }
}

// index_add / index_copy: a scatter over source's shape with the 1-D index
// broadcast along every other dim.
at::Tensor& index_scatter_impl(const char* op, k::ScatterOp kind, const at::Tensor& self, int64_t dim,
                               const at::Tensor& index, const at::Tensor& source, const at::Scalar& alpha,
                               const at::Tensor& result, bool round_each_update) {
  if (!result.is_same(self)) copy_on_device(result, self);
  if (index.numel() == 0 || source.numel() == 0) return const_cast<at::Tensor&>(result);
  k::Operand idx{const_cast<void*>(device_ptr<const void>(index)), require_kernel_dtype(index.scalar_type(), op), {}};
  if (source.dim() > 0) idx.strides.v[dim] = index.dim() == 0 ? 0 : index.stride(0);
  auto launch = [&](const at::Tensor& into, const at::Tensor& from) {
    launch_scatter(op, kind, shape_of(from), static_cast<int>(from.dim() == 0 ? 0 : dim), kernel_operand(into, op),
                   into.dim() == 0 ? 1 : into.size(dim), kernel_operand(from, op), idx, alpha.toDouble(), self.device(),
                   round_each_update);
  };
  if (result.is_complex()) {  // a real alpha (index_scatter_takes): plane by plane
    launch(at::real(result), at::real(source));
    launch(at::imag(result), at::imag(source));
  } else {
    launch(result, source);
  }
  return const_cast<at::Tensor&>(result);
}

// index_add / index_copy of complex tensors go plane by plane: a copy, or an
// addition scaled by a real alpha (Note [Complex elements moved as bits]).
bool index_scatter_takes(const at::Tensor& self, const at::Scalar& alpha) {
  if (has_kernel(self)) return true;
  return self.is_complex() && has_move_kernel(self) && (!alpha.isComplex() || alpha.toComplexDouble().imag() == 0);
}

// The CPU's index_add / index_copy of a 0-d or 1-d tensor rounds Float16 /
// BFloat16 after every update; of larger tensors, once
// (kernels/include/mlu_kernels/index.h).
bool index_add_rounds_each_update(const at::Tensor& result) { return result.dim() <= 1; }

// index_reduce as the CPU's index_reduce_func_impl: indexed slots start from
// the reduction's identity unless include_self, every update is one binary op
// in the element type (so Float16 / BFloat16 round after each), and mean
// divides by the number of contributions (floor division for integers).
void index_reduce_impl(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       c10::string_view reduce, bool include_self, const at::Tensor& result) {
  TORCH_WARN_ONCE("index_reduce() is in beta and the API may change at any time.");
  if (!result.is_same(self)) copy_on_device(result, self);
  if (index.numel() == 0) return;
  if (!include_self) {
    const at::Tensor identity = at::scalar_tensor(reduction_identity(reduce, result.scalar_type()), result.options());
    auto sizes = result.sizes().vec();
    if (result.dim() > 0) sizes[dim] = index.numel();
    index_scatter_impl("index_reduce", k::ScatterOp::Assign, result, dim, index, identity.expand(sizes), 1, result,
                       /*round_each_update=*/true);
  }
  index_scatter_impl("index_reduce", scatter_kind(reduce), result, dim, index, source, 1, result,
                     /*round_each_update=*/true);
  if (reduce != "mean") return;
  at::Tensor count = include_self ? at::ones_like(result) : at::zeros_like(result);
  count.index_add_(dim, index, at::ones_like(source));
  count.masked_fill_(count.eq(0), 1);
  if (result.is_floating_point() || result.is_complex()) {
    result.div_(count);
  } else {
    result.div_(count, "floor");
  }
}

// masked_fill_: where(mask, value, self) written into self.
at::Tensor& masked_fill_impl(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(mask.dtype() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  at::assert_no_partial_overlap(self, mask);
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .allow_cpu_scalars(true)
                  .add_output(self)
                  .add_const_input(mask)
                  .add_const_input(value)
                  .add_const_input(self)
                  .build();
  TORCH_CHECK(launch_pointwise(iter, PointwiseOp::Where, {}, self.scalar_type()), "masked_fill_: dtype ",
              self.scalar_type(), " has no mlu kernel");
  return self;
}

at::Tensor& masked_fill_scalar_mlu(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  if (self.is_complex() && has_move_kernel(self)) {  // Note [Complex elements moved as bits]: plane by plane
    TORCH_CHECK(mask.dtype() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                mask.dtype());
    const c10::complex<double> v = value.toComplexDouble();
    at::Tensor re = at::real(self), im = at::imag(self);
    masked_fill_scalar_mlu(re, mask, v.real());
    masked_fill_scalar_mlu(im, mask, v.imag());
    return self;
  }
  if (!has_kernel(self)) {
    return cpu_fallback<ATEN_OP2(masked_fill_, Scalar)>(self, mask, value);
  }
  at::Tensor wrapped = at::scalar_tensor(value, at::TensorOptions().dtype(self.scalar_type()));
  return masked_fill_impl(self, mask, wrapped);
}

at::Tensor& masked_fill_tensor_mlu(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (self.is_complex() && has_move_kernel(self) && value.device() == self.device()) {
    TORCH_CHECK(mask.dtype() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                mask.dtype());
    const at::Tensor v = value.to(self.scalar_type());
    at::Tensor re = at::real(self), im = at::imag(self);
    masked_fill_impl(re, mask, at::real(v));
    masked_fill_impl(im, mask, at::imag(v));
    return self;
  }
  if (self.is_complex() && value.is_cpu()) return masked_fill_scalar_mlu(self, mask, value.item());
  if (!has_kernel(self) || !has_kernel(value)) {
    return cpu_fallback<ATEN_OP2(masked_fill_, Tensor)>(self, mask, value);
  }
  if (value.is_cpu()) return masked_fill_scalar_mlu(self, mask, value.item());
  return masked_fill_impl(self, mask, value);
}

// cat: PyTorch's meta (shapes, dtype promotion, devices), then one on-device
// copy per input into its slice of the result.
void cat_impl(const at::ITensorListRef& tensors, int64_t dim, const at::Tensor& result) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;  // legacy empty tensors are skipped
    const int64_t size = t.size(dim);
    if (size > 0) copy_on_device(result.narrow(dim, offset, size), t);
    offset += size;
  }
}

at::Tensor cat_mlu(const at::ITensorListRef& tensors, int64_t dim) {
  c10::OptionalDeviceGuard guard(tensors.front().device());
  MLUFunctional<at::meta::structured_cat> meta;
  const auto pre = meta.meta(tensors, dim);
  cat_impl(tensors, pre.dim, meta.output());
  return std::move(meta.output());
}

at::Tensor& cat_out_mlu(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(out.device());
  MLUOut<at::meta::structured_cat> meta(out);
  const auto pre = meta.meta(tensors, dim);
  cat_impl(tensors, pre.dim, meta.maybe_get_output(0));
  meta.finish();
  return out;
}

// embedding's backward: index_add of the gradient rows (padding_idx rows
// dropped); scale_grad_by_freq falls back to the CPU.
at::Tensor embedding_dense_backward_mlu(const at::Tensor& grad, const at::Tensor& indices, c10::SymInt num_weights,
                                        c10::SymInt padding_idx) {
  const int64_t n = num_weights.expect_int();
  const int64_t pad = padding_idx.expect_int();
  const int64_t embedding_dim = grad.size(-1);
  at::Tensor flat_indices = indices.reshape({-1});
  at::Tensor flat_grad = grad.reshape({-1, embedding_dim});
  if (pad >= 0) {
    // Rows of the padding index get no gradient: zero them before adding.
    flat_grad = flat_grad.masked_fill(flat_indices.eq(pad).unsqueeze(1), 0);
  }
  at::Tensor grad_weight = at::zeros({n, embedding_dim}, grad.options());
  return index_scatter_impl("embedding_backward", k::ScatterOp::Add, grad_weight, 0, flat_indices, flat_grad, 1,
                            grad_weight, index_add_rounds_each_update(grad_weight));
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/IndexOps.inc"
