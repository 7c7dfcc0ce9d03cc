// See Note [Copy paths] in Copy.h.
#include "csrc/aten/Copy.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/copy.h>
#include <mlu_runtime/memcpy.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUHostAllocator.h"
#include "csrc/core/MLUTrace.h"

#include "csrc/graphs/MLUGraph.h"

namespace torch_mlu {
namespace {

bool is_mlu(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

// True when a and b can cross as one byte copy: same dtype, same dense layout.
bool same_dense_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense() &&
         a.strides() == b.strides();
}

size_t nbytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

at::Tensor contiguous_like(const at::Tensor& shape_of, at::ScalarType dtype, c10::Device device) {
  return at::empty(shape_of.sizes(), shape_of.options().dtype(dtype).device(device));
}

// Byte copy of a dense block between `host` and device memory on the current
// stream of `device`; waits unless the host side is pinned and non_blocking is
// set, in which case the pinned block is kept from reuse until the copy ran.
void copy_bytes(void* dst, const void* src, size_t bytes, mlu::mluMemcpyKind kind, c10::DeviceIndex device,
                bool non_blocking, const at::Tensor& host) {
  if (bytes == 0) return;
  const bool pinned = isPinnedPtr(host.const_data_ptr());
  if (!pinned || !non_blocking) {
    refuse_in_capture(device, pinned ? "a blocking copy between mlu and the CPU (aten::copy_ with non_blocking=False)"
                                     : "a copy between mlu and pageable CPU memory (aten::copy_; a pinned CPU tensor "
                                       "copied with non_blocking=True can be captured)");
  }
  MLUStream stream = getCurrentMLUStream(device);
  MLU_CHECK(mlu::mluMemcpyAsync(dst, src, bytes, kind, stream.queue()));
  if (!pinned) {  // pageable: the copy, and so all the stream's earlier work, already finished
    trace::stream_synchronization(stream.queue());
    return;
  }
  if (non_blocking) {
    record_host_use(host.storage().mutable_data(), host.storage().data_ptr().get_context(), stream);
  } else {
    stream.synchronize();
  }
}

void copy_host_to_device(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceIndex device = dst.device().index();
  c10::DeviceGuard guard(dst.device());
  at::Tensor host = src.resolve_conj().resolve_neg();
  if (!same_dense_layout(dst, host)) host = host.to(dst.scalar_type()).contiguous();
  if (same_dense_layout(dst, host)) {
    copy_bytes(dst.data_ptr(), host.const_data_ptr(), nbytes(dst), mlu::mluMemcpyHostToDevice, device, non_blocking,
               host);
    return;
  }
  at::Tensor staging = contiguous_like(dst, dst.scalar_type(), dst.device());
  copy_bytes(staging.data_ptr(), host.const_data_ptr(), nbytes(staging), mlu::mluMemcpyHostToDevice, device,
             /*non_blocking=*/false, host);
  copy_on_device(dst, staging);
}

void copy_device_to_host(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceIndex device = src.device().index();
  c10::DeviceGuard guard(src.device());
  at::Tensor device_side = src;
  if (!(src.scalar_type() == dst.scalar_type() && src.is_non_overlapping_and_dense())) {
    device_side = contiguous_like(src, dst.scalar_type(), src.device());
    copy_on_device(device_side, src);
  }
  if (same_dense_layout(dst, device_side)) {
    copy_bytes(dst.data_ptr(), device_side.const_data_ptr(), nbytes(dst), mlu::mluMemcpyDeviceToHost, device,
               non_blocking, dst);
    return;
  }
  at::Tensor staging = at::empty_strided(device_side.sizes(), device_side.strides(), dst.options());
  copy_bytes(staging.data_ptr(), device_side.const_data_ptr(), nbytes(staging), mlu::mluMemcpyDeviceToHost, device,
             /*non_blocking=*/false, staging);
  dst.copy_(staging);
}

void copy_between_devices(const at::Tensor& dst, const at::Tensor& src) {
  at::Tensor source = src;
  if (!(src.scalar_type() == dst.scalar_type() && src.is_non_overlapping_and_dense())) {
    c10::DeviceGuard guard(src.device());
    source = contiguous_like(src, dst.scalar_type(), src.device());
    copy_on_device(source, src);
  }
  at::Tensor target =
      same_dense_layout(dst, source) ? dst : at::empty_strided(source.sizes(), source.strides(), dst.options());
  MLUStream src_stream = getCurrentMLUStream(src.device().index());
  MLUStream dst_stream = getCurrentMLUStream(dst.device().index());
  stream_wait_stream(dst_stream, src_stream);
  MLU_CHECK(mlu::mluMemcpyPeerAsync(target.data_ptr(), dst.device().index(), source.const_data_ptr(),
                                    src.device().index(), nbytes(target), dst_stream.queue()));
  stream_wait_stream(src_stream, dst_stream);
  if (!target.is_same(dst)) {
    c10::DeviceGuard guard(dst.device());
    copy_on_device(dst, target);
  }
}

// Whether the host tensor src is dst's own memory seen from the CPU (the CPU
// fallback hands written tensors whose elements share memory to the CPU
// kernel in place, Note [Zero-copy fallback]): its copy back is already done.
bool is_view_of_device_memory(const at::Tensor& src, const at::Tensor& dst) {
  return src.const_data_ptr() == dst.const_data_ptr() && src.sizes() == dst.sizes() && src.strides() == dst.strides() &&
         src.scalar_type() == dst.scalar_type();
}

at::Tensor copy_from_mlu(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(is_mlu(self) || self.is_cpu(), "copy_: cannot copy from ", self.device(), " to ", dst.device());
  TORCH_CHECK(is_mlu(dst) || dst.is_cpu(), "copy_: cannot copy from ", self.device(), " to ", dst.device());
  TORCH_CHECK(!dst.is_conj() && !dst.is_neg(), "copy_: a conjugate or negative view is not a valid mlu copy target");
  if (dst.numel() == 0) return dst;
  if (self.is_conj() || self.is_neg()) {
    // Note [Conjugate and negative views in copies]: the values are copied
    // as stored, then the view's bit is applied to dst (which has none).
    // _copy_from falls through the Conjugate/Negative keys (registered below):
    // their fallback would materialise the source with clone(), which copies
    // through _copy_from again, forever.
    const bool conj = self.is_conj(), neg = self.is_neg();
    at::Tensor stored = conj ? self.conj() : self;  // conj() of a conjugate view clears the bit
    stored = neg ? stored._neg_view() : stored;
    copy_from_mlu(stored, dst, non_blocking);
    if (conj) at::view_as_real(dst).select(-1, 1).neg_();
    if (neg) dst.neg_();
    return dst;
  }
  at::Tensor src = self.sizes() == dst.sizes() ? self : self.expand_as(dst);
  if (is_mlu(src) && is_mlu(dst)) {
    if (src.device() == dst.device()) {
      c10::DeviceGuard guard(dst.device());
      copy_on_device(dst, src);
    } else {
      copy_between_devices(dst, src);
    }
  } else if (is_mlu(dst)) {
    if (is_view_of_device_memory(src, dst)) return dst;
    copy_host_to_device(dst, src, non_blocking);
  } else {
    copy_device_to_host(dst, src, non_blocking);
  }
  return dst;
}

// The CPU fallback's copy back of an out= argument the CPU kernel resized:
// dst takes the CPU result's sizes and, where its elements do not share
// memory, its strides (the CPU's kernels choose them: complex.out follows its
// inputs' layout, linalg's results are column-major, lstsq's solution a view
// of a taller matrix).
at::Tensor copy_from_and_resize_mlu(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    if (self.numel() > 0 && at::has_internal_overlap(self) == at::MemOverlap::No) {
      int64_t extent = 1;  // elements from the first to the last one addressed
      for (int64_t d = 0; d < self.dim(); ++d) extent += (self.size(d) - 1) * self.stride(d);
      dst.resize_({extent});
      dst.as_strided_(self.sizes(), self.strides(), dst.storage_offset());
    } else {
      dst.resize_(self.sizes());
    }
  }
  return copy_from_mlu(self, dst, /*non_blocking=*/false);
}

at::Scalar local_scalar_dense_mlu(const at::Tensor& self) {
  refuse_in_capture(self.device().index(),
                    "reading a tensor's value on the host (aten::_local_scalar_dense: .item(), int(), bool(), ...)");
  at::Tensor host = at::empty({}, self.options().device(c10::DeviceType::CPU));
  copy_device_to_host(host, self.view(c10::IntArrayRef{}), /*non_blocking=*/false);
  return at::_local_scalar_dense(host);
}

// ComplexHalf has no kernel type: a copy to or from it moves its (real,
// imaginary) Float16 pairs, viewed through view_as_real, with the real
// kernels' conversions. A real source gives a zero imaginary part; a real
// destination takes the real part (copy_ has warned that the imaginary part
// is dropped).
void copy_complex_half(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.is_complex() && src.is_complex()) {
    copy_on_device(at::view_as_real(dst), at::view_as_real(src));
  } else if (dst.is_complex()) {
    const at::Tensor pairs = at::view_as_real(dst);
    copy_on_device(pairs.select(-1, 0), src);
    pairs.select(-1, 1).zero_();
  } else {
    copy_on_device(dst, at::view_as_real(src).select(-1, 0));
  }
}

}  // namespace

void copy_on_device(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.scalar_type() == at::kComplexHalf || src.scalar_type() == at::kComplexHalf) {
    copy_complex_half(dst, src);
    return;
  }
  at::assert_no_internal_overlap(dst);
  if (dst.is_alias_of(src) && at::get_overlap_status(dst, src) != at::MemOverlapStatus::No) {
    if (dst.is_same(src)) return;
    at::Tensor detached = contiguous_like(src, src.scalar_type(), src.device());
    copy_on_device(detached, src);
    copy_on_device(dst, detached);
    return;
  }
  const bool same_dtype = dst.scalar_type() == src.scalar_type();
  mlu::kernels::ScalarType dst_type =
      same_dtype ? require_bits_dtype(dst.scalar_type(), "copy_") : require_storage_dtype(dst.scalar_type(), "copy_");
  mlu::kernels::ScalarType src_type = same_dtype ? dst_type : require_storage_dtype(src.scalar_type(), "copy_");
  const std::optional<Collapsed> collapsed = dst.dim() > mlu::kernels::kMaxDims
                                                 ? try_collapse_dims(dst.sizes(), dst.strides(), src.strides())
                                                 : std::optional<Collapsed>(kernel_layout(dst, src));
  if (!collapsed) {
    // Too many unmergeable dims (Note [Collapsed dims]): one copy per slice of the outermost dim.
    for (int64_t i = 0; i < dst.size(0); ++i) copy_on_device(dst.select(0, i), src.select(0, i));
    return;
  }
  const Collapsed& layout = *collapsed;
  const mlu::kernels::Shape shape = layout.shape;
  const mlu::kernels::Strides dst_strides = layout.first, src_strides = layout.second;
  void* out = device_ptr(dst);
  const void* in = device_ptr<const void>(src);
  launch_kernel(dst.device().index(), "copy_",
                [=] { mlu::kernels::copy(out, dst_type, dst_strides, in, src_type, src_strides, shape); });
}

// See Note [Conjugate and negative views in copies].
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/Copy.inc"
