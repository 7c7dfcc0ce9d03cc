// Shape ops on mlu: flip, roll, tril/triu, the range factories (arange,
// linspace, eye), unfold's gradient.
#include <ATen/ops/tril_ops.h>

#include <ATen/ops/triu_ops.h>
#include <cmath>

#include <ATen/Dispatch.h>
#include <ATen/Version.h>
#include <ATen/WrapDimUtils.h>
#include <c10/util/accumulate.h>
#include <ATen/native/UnfoldBackward.h>
#include <ATen/ops/unfold_backward_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/arange_ops.h>
#include <ATen/ops/linspace_ops.h>
#include <mlu_kernels/copy.h>
#include <mlu_kernels/sequence.h>
#include <mlu_kernels/triangle.h>
#include <mlu_kernels/unfold.h>

#include "csrc/aten/Copy.h"
#include "csrc/aten/Fallback.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

// flip: one strided copy from the input seen with negative strides on the
// flipped dims (the kernels accept negative strides; PyTorch views do not).
at::Tensor flip_mlu(const at::Tensor& self, at::IntArrayRef dims) {
  const int64_t ndim = self.dim();
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = at::maybe_wrap_dim(d, ndim);
    TORCH_CHECK(!flipped[static_cast<size_t>(w)], "dims has duplicates, original flip dims size=", dims.size());
    flipped[static_cast<size_t>(w)] = true;
  }
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);  // CPU's flip keeps the layout too
  if (self.numel() == 0) return out;
  c10::OptionalDeviceGuard guard(self.device());
  const k::ScalarType type = require_storage_dtype(self.scalar_type(), "flip");
  std::vector<int64_t> src_strides = self.strides().vec();
  const char* base = static_cast<const char*>(device_ptr<const void>(self));
  for (int64_t d = 0; d < ndim; ++d) {
    if (!flipped[static_cast<size_t>(d)]) continue;
    base += (self.size(d) - 1) * self.stride(d) * static_cast<int64_t>(self.element_size());
    src_strides[static_cast<size_t>(d)] = -src_strides[static_cast<size_t>(d)];
  }
  // Note [Collapsed dims]: also merges runs of flipped (or of kept) dims.
  const Collapsed layout = collapse_dims(self.sizes(), out.strides(), src_strides);
  const k::Shape shape = layout.shape;
  const k::Strides dst = layout.first, src = layout.second;
  void* dst_ptr = device_ptr(out);
  launch_kernel(self.device().index(), "flip", [=] { k::copy(dst_ptr, type, dst, base, type, src, shape); });
  return out;
}

// roll: two on-device slice copies per rolled dim.
at::Tensor roll_mlu(const at::Tensor& self, c10::SymIntArrayRef shifts_sym, at::IntArrayRef dims) {
  const at::IntArrayRef shifts = C10_AS_INTARRAYREF_SLOW(shifts_sym);
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    return roll_mlu(self.flatten(), shifts_sym, {0}).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor current = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t dim = at::maybe_wrap_dim(dims[i], self.dim());
    const int64_t size = self.size(dim);
    at::Tensor out = at::empty(self.sizes(), self.options());
    if (size == 0 || self.numel() == 0) return out;
    const int64_t s = ((shifts[i] % size) + size) % size;
    if (s == 0) {
      copy_on_device(out, current);
    } else {
      copy_on_device(out.narrow(dim, s, size - s), current.narrow(dim, 0, size - s));
      copy_on_device(out.narrow(dim, 0, s), current.narrow(dim, size - s, s));
    }
    current = out;
  }
  return current;
}

// tril / triu on the last two dims (mlu_kernels/triangle.h). PyTorch's meta
// checks the rank and sizes the output. In place (tril_) works element by
// element; an out= sharing memory with self in any other way reads a copy.
void launch_triangle(bool lower, const at::Tensor& self_in, int64_t diagonal, const at::Tensor& out) {
  const bool other_alias = !out.is_same(self_in) && out.is_alias_of(self_in);
  const at::Tensor self = other_alias ? self_in.clone() : self_in;
  if (out.numel() == 0) return;
  TORCH_CHECK(self.dim() <= k::kMaxDims, lower ? "tril" : "triu", ": mlu supports at most ", k::kMaxDims, " dims");
  const char* name = lower ? "tril" : "triu";
  const k::Shape shape = kernel_shape(self);
  const k::Operand dst{device_ptr(out), require_kernel_dtype(out.scalar_type(), name), kernel_strides(out)};
  const k::Operand src{const_cast<void*>(device_ptr<const void>(self)), dst.dtype, kernel_strides(self)};
  launch_kernel(self.device().index(), name, [=] { k::triangle(shape, dst, src, diagonal, lower); });
}

template <class Meta>
at::Tensor& triangle_out_mlu(bool lower, const at::Tensor& self, int64_t diagonal, at::Tensor& result) {
  if (!kernel_dtype(self.scalar_type())) {
    return lower ? cpu_fallback<ATEN_OP2(tril, out)>(self, diagonal, result)
                 : cpu_fallback<ATEN_OP2(triu, out)>(self, diagonal, result);
  }
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> meta(result);
  meta.meta(self, diagonal);
  launch_triangle(lower, self, diagonal, meta.maybe_get_output(0));
  meta.finish();
  return result;
}

// ---- range factories ----

at::Tensor& arange_out_mlu(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out) {
  // float8 has no range kernels on either side: the CPU's own error.
  if (c10::isFloat8Type(out.scalar_type())) return cpu_fallback<ATEN_OP2(arange, start_out)>(start, end, step, out);
  TORCH_CHECK(has_kernel(out), "arange: dtype ", out.scalar_type(), " is not supported on mlu");
  const bool integral = c10::isIntegralType(out.scalar_type(), /*includeBool=*/true);
  const double xstart = start.toDouble(), xend = end.toDouble(), xstep = step.toDouble();
  double size_d;
  // As RangeFactories.cpp: int64 sizes in integer arithmetic, every other
  // dtype in double (so sizes agree across devices).
  if (integral) TORCH_CHECK_VALUE(step.toLong() != 0, "step must be nonzero");
  TORCH_CHECK_VALUE(xstep > 0 || xstep < 0, "step must be nonzero");
  if (out.scalar_type() == at::kLong) {
    const int64_t s = start.toLong(), e = end.toLong(), st = step.toLong();
    const int64_t sgn = (st > 0) - (st < 0);
    size_d = static_cast<double>((e - s + st - sgn) / st);
  } else {
    size_d = std::ceil((xend - xstart) / xstep);
  }
  TORCH_CHECK(std::isfinite(xstart) && std::isfinite(xend), "unsupported range: ", xstart, " -> ", xend);
  TORCH_CHECK(((xstep > 0) && (xend >= xstart)) || ((xstep < 0) && (xend <= xstart)),
              "upper bound and larger bound inconsistent with step sign");
  TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
              "invalid size, possible overflow?");
  const int64_t size = static_cast<int64_t>(size_d);
  if (out.numel() != size) {
    if (out.numel() > 0) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. The out tensor will be resized to a "
                 "tensor of shape (",
                 size, ",).");
    }
    out.resize_({size});
  }
  if (size == 0) return out;
  c10::OptionalDeviceGuard guard(out.device());
  // A non-contiguous out is filled through a contiguous temporary.
  at::Tensor target = out.is_contiguous() ? out : at::empty({size}, out.options());
  const k::ScalarType type = require_kernel_dtype(out.scalar_type(), "arange");
  void* data = device_ptr(target);
  if (integral) {
    const int64_t s = start.toLong(), st = step.toLong();
    launch_kernel(out.device().index(), "arange", [=] { k::arange_int(data, type, size, 1, s, st); });
  } else {
    launch_kernel(out.device().index(), "arange", [=] { k::arange(data, type, size, 1, xstart, xstep); });
  }
  if (!target.is_same(out)) copy_on_device(out, target);
  return out;
}

at::Tensor& linspace_out_mlu(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (c10::isFloat8Type(out.scalar_type())) return cpu_fallback<ATEN_OP2(linspace, out)>(start, end, steps, out);
  const bool complex = out.is_complex();
  if (complex && !has_move_kernel(out)) return cpu_fallback<ATEN_OP2(linspace, out)>(start, end, steps, out);
  TORCH_CHECK(complex || has_kernel(out), "linspace: dtype ", out.scalar_type(), " is not supported on mlu");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (at::isFloatingType(out.scalar_type()) || complex) {  // the CPU converts both ends first, with its overflow error
    AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "linspace", [&] {
      (void)start.to<scalar_t>();
      (void)end.to<scalar_t>();
    });
  }
  c10::OptionalDeviceGuard guard(out.device());
  at::Tensor target = out.is_contiguous() ? out : at::empty({steps}, out.options());
  const k::ScalarType type = require_kernel_dtype(out.scalar_type(), "linspace");
  void* data = device_ptr(target);
  const double s = complex ? 0.0 : start.toDouble(), e = complex ? 0.0 : end.toDouble();
  if (c10::isIntegralType(out.scalar_type(), /*includeBool=*/true)) {
    // PyTorch computes integer linspace in the integer type's arithmetic via
    // a float step; matching it exactly is left to the CPU.
    at::Tensor host = at::empty({steps}, out.options().device(c10::kCPU));
    at::linspace_out(host, start, end, steps);
    target.copy_(host);
  } else {
    // The CPU's range kernels come in a build per ATen CPU capability: the
    // AVX2 / AVX512 ones fuse start + step * i (Note [linspace as the CPU
    // rounds] in kernels/src/sequence/sequence.cpp).
    static const bool fused = at::get_cpu_capability() != "DEFAULT";
    if (complex) {
      // c10::complex divides the difference and scales the step by a real
      // (steps - 1, i) component by component, so each plane is the real
      // linspace of its parts, interleaved (stride 2).
      const c10::complex<double> cs = start.toComplexDouble(), ce = end.toComplexDouble();
      const bool single = out.scalar_type() == at::kComplexFloat;
      const k::ScalarType plane = single ? k::ScalarType::Float32 : k::ScalarType::Float64;
      char* re = static_cast<char*>(data);
      char* im = re + (single ? sizeof(float) : sizeof(double));
      launch_kernel(out.device().index(), "linspace", [=] {
        k::linspace(re, plane, steps, 2, cs.real(), ce.real(), fused);
        k::linspace(im, plane, steps, 2, cs.imag(), ce.imag(), fused);
      });
    } else {
      launch_kernel(out.device().index(), "linspace", [=] { k::linspace(data, type, steps, 1, s, e, fused); });
    }
  }
  if (!target.is_same(out)) copy_on_device(out, target);
  return out;
}

at::Tensor& eye_out_mlu(c10::SymInt n_sym, c10::SymInt m_sym, at::Tensor& out) {
  const int64_t n = n_sym.expect_int(), m = m_sym.expect_int();
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  out.zero_();
  if (n > 0 && m > 0) out.diagonal().fill_(1);
  return out;
}

}  // namespace

// unfold_backward_stub (UnfoldBackward.h) for overlapping windows: PyTorch's
// generic unfold_backward hands over a zeroed, contiguous grad_in; grad is
// made contiguous (outer, windows, inner, size) for the kernel.
void unfold_backward_mlu(at::Tensor& grad_in, const at::Tensor& grad, int64_t dim, int64_t size, int64_t step) {
  TORCH_INTERNAL_ASSERT(grad_in.is_contiguous());
  const auto type = require_kernel_dtype(grad.scalar_type(), "unfold_backward");
  TORCH_CHECK_NOT_IMPLEMENTED(grad.scalar_type() != at::kBool && !c10::isIntegralType(grad.scalar_type(), false),
                              "\"unfold_backward\" not implemented for '", grad.scalar_type(), "' on mlu");
  if (grad_in.numel() == 0) return;
  // Overlapping windows need a dim of at least two elements: grad_in has dims.
  dim = at::maybe_wrap_dim(dim, grad_in.dim());
  const at::Tensor g = grad.contiguous();
  const int64_t outer = c10::multiply_integers(grad_in.sizes().slice(0, dim));
  const int64_t inner = c10::multiply_integers(grad_in.sizes().slice(dim + 1));
  const int64_t length = grad_in.size(dim), windows = grad.size(dim);
  void* out = device_ptr(grad_in);
  const void* in = device_ptr<const void>(g);
  launch_kernel(grad_in.device().index(), "unfold_backward",
                [=] { k::unfold_backward(type, out, in, outer, length, inner, windows, size, step); });
}

}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(unfold_backward_stub, &torch_mlu::unfold_backward_mlu)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ShapeOps.inc"
