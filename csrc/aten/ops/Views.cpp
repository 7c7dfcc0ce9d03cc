// View and metadata ops on mlu. They never touch device memory, so they run
// on the host at once (no queue task). Ops whose only kernels are per-backend
// are registered here, because a view cannot go through the CPU fallback
// (the fallback would return a copy, not a view).
#include <ATen/Context.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUStorage.h"

namespace torch_mlu {
namespace {

// Grows `storage` (never shrinks it) to hold `bytes`.
void ensure_storage_bytes(const c10::Storage& storage, size_t bytes) {
  if (bytes > storage.nbytes()) resize_storage_bytes(storage, bytes);
}

const at::Tensor& resize_mlu_(const at::Tensor& self, c10::IntArrayRef size,
                              std::optional<c10::MemoryFormat> memory_format) {
  at::TensorImpl* impl = self.unsafeGetTensorImpl();
  at::native::resize_impl_cpu_(impl, size, std::nullopt, /*resize_storage=*/false);
  size_t bytes = at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(), impl->storage_offset());
  const int64_t old_bytes = static_cast<int64_t>(impl->unsafe_storage().nbytes());
  if (self.numel() > 0) ensure_storage_bytes(impl->unsafe_storage(), bytes);
  // The bytes a resize added, as ATen's CPU and CUDA resize_ fill them (see fill_if_deterministic in
  // csrc/aten/TensorFactories.cpp).
  if (C10_UNLIKELY(at::globalContext().deterministicAlgorithms() &&
                   at::globalContext().deterministicFillUninitializedMemory())) {
    at::native::fill_resize_deterministic_(self, old_bytes);
  }
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format Preserve");
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage_mlu_(at::Tensor& self, c10::Storage source, int64_t storage_offset, c10::IntArrayRef size,
                             c10::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected an mlu storage, got a storage on ", source.device());
  c10::OptionalIntArrayRef strides = stride.data() != nullptr ? c10::OptionalIntArrayRef(stride) : std::nullopt;
  size_t bytes = strides ? at::detail::computeStorageNbytes(size, *strides, self.dtype().itemsize(), storage_offset)
                         : at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(), storage_offset);
  if (c10::multiply_integers(size) > 0) ensure_storage_bytes(source, bytes);
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

at::Tensor& set_empty_mlu_(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, getMLUDeviceAllocator(), /*resizable=*/true);
  return set_storage_mlu_(self, std::move(storage), 0, {0}, {});
}

// Note [Shallow copies between cpu and mlu]: nn.Module.to() / _apply keep a parameter's identity (`param.data =
// moved`, so tied weights stay tied and optimizers' references stay valid) only when this answers true.
// TensorImpl's own check lists the in-tree dense backends (CPU, CUDA, XPU, ...) but not PrivateUse1, so the
// backend says it: two dense (strided) tensors of the CPU or mlu are interchangeable, as CPU and CUDA are.
bool has_compatible_shallow_copy_type_mlu(const at::Tensor& self, const at::Tensor& from) {
  auto dense_cpu_or_mlu = [](const at::Tensor& t) {
    c10::DispatchKeySet keys = t.key_set();
    return t.layout() == c10::kStrided && keys.has(c10::DispatchKey::Dense) &&
           keys.has_any(c10::DispatchKeySet({c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit}));
  };
  if (dense_cpu_or_mlu(self) && dense_cpu_or_mlu(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/Views.inc"
