// torch.fft on mlu: the three transform primitives (_fft_c2c, _fft_r2c,
// _fft_c2r) and the conjugate-symmetry fill, on the batched DFTI plans of
// mlu_kernels/fft.h.
//
// Note [FFT layouts as the CPU's]
// Each op mirrors PyTorch's CPU implementation (mkl/SpectralOps.cpp,
// _exec_fft) step for step: the batch dims are moved first in stride order
// and merged into one, the transformed dims are sorted by stride (an r2c
// keeps its last dim last), the output is allocated contiguous in that
// (batch, signal) order and handed back through as_strided. So values,
// output strides and the plan's layout are the CPU's; the only difference is
// that the committed plan comes from the device's plan cache
// (csrc/aten/FftPlanCache.h) instead of being committed on every call, and
// that the transforms run as a device task with the batch split over the
// compute cores. Everything in torch.fft above these primitives (fft, rfftn,
// hfft, stft, istft, their norms and padding) is PyTorch's generic code.
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/native/SpectralOpsUtils.h>
#include <ATen/ops/_fft_c2c_native.h>
#include <ATen/ops/empty.h>
#include <c10/util/accumulate.h>
#include <mlu_kernels/fft.h>
#include <mlu_kernels/parallel.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/FftPlanCache.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using at::IntArrayRef;
using at::native::fft_norm_mode;

k::ScalarType real_type(at::ScalarType value_type) {
  TORCH_CHECK(value_type == at::kFloat || value_type == at::kDouble,
              "MKL FFT doesn't support tensors of type: ", value_type);
  TORCH_CHECK(k::fft_available(),
              "fft on mlu: this process has no FFT library (torch_mlu calls the oneMKL PyTorch's CPU build carries; "
              "this PyTorch has none)");
  return value_type == at::kFloat ? k::ScalarType::Float32 : k::ScalarType::Float64;
}

// One batched transform of `input` (batch, signal...) into `out`, laid out
// by the caller, as a device task.
void run_plan(T input, T out, IntArrayRef signal_size, int64_t normalization, bool forward) {
  k::FftSpec spec;
  spec.real_type = real_type(c10::toRealValueType(input.scalar_type()));
  spec.kind = input.is_complex() ? (out.is_complex() ? k::FftKind::C2C : k::FftKind::C2R) : k::FftKind::R2C;
  spec.forward = forward;
  spec.signal_ndim = static_cast<int>(signal_size.size()) - 1;
  TORCH_INTERNAL_ASSERT(spec.signal_ndim >= 1 && spec.signal_ndim <= k::kMaxFftDims);
  spec.batch = signal_size[0];
  spec.in_distance = input.stride(0);
  spec.out_distance = out.stride(0);
  for (int d = 0; d < spec.signal_ndim; ++d) {
    spec.sizes[d] = signal_size[d + 1];
    spec.in_strides[d] = input.stride(d + 1);
    spec.out_strides[d] = out.stride(d + 1);
  }
  const auto norm = static_cast<fft_norm_mode>(normalization);
  if (norm != fft_norm_mode::none) {
    const auto n = static_cast<double>(c10::multiply_integers(signal_size.slice(1)));
    spec.scale = norm == fft_norm_mode::by_root_n ? 1.0 / std::sqrt(n) : 1.0 / n;
  }
  const c10::DeviceIndex device = input.device().index();
  auto plan = fft_plan(device, spec, k::num_threads());
  if (out.numel() == 0) return;
  const void* in_data = device_ptr<const void>(input);
  void* out_data = device_ptr(out);
  launch_kernel(device, "fft", [plan = std::move(plan), in_data, out_data](mlu::TaskContext& context) {
    const std::string error = plan->execute(in_data, out_data);
    if (!error.empty()) context.fail("MKL FFT error: " + error);
  });
}

// _exec_fft of the CPU's mkl/SpectralOps.cpp (Note [FFT layouts as the CPU's]).
at::Tensor& exec_fft(at::Tensor& out, T self, IntArrayRef out_sizes, IntArrayRef dim, int64_t normalization,
                     bool forward) {
  const auto ndim = self.dim();
  const int64_t signal_ndim = static_cast<int64_t>(dim.size());
  const auto batch_dims = ndim - signal_ndim;

  at::DimVector dim_permute(ndim);
  std::iota(dim_permute.begin(), dim_permute.end(), int64_t{0});
  c10::SmallVector<bool, at::kDimVectorStaticSize> is_transformed_dim(ndim);
  for (const auto& d : dim) is_transformed_dim[d] = true;
  auto batch_end =
      std::partition(dim_permute.begin(), dim_permute.end(), [&](int64_t d) { return !is_transformed_dim[d]; });
  const auto self_strides = self.strides();
  std::sort(dim_permute.begin(), batch_end, [&](int64_t a, int64_t b) { return self_strides[a] > self_strides[b]; });
  std::copy(dim.cbegin(), dim.cend(), batch_end);
  auto input = self.permute(dim_permute);

  at::DimVector batched_sizes(signal_ndim + 1);
  batched_sizes[0] = -1;
  std::copy(input.sizes().cbegin() + batch_dims, input.sizes().cend(), batched_sizes.begin() + 1);
  input = input.reshape(batched_sizes);

  const auto batch_size = input.sizes()[0];
  at::DimVector signal_size(signal_ndim + 1);
  signal_size[0] = batch_size;
  for (int64_t i = 0; i < signal_ndim; ++i) {
    const auto in_size = input.sizes()[i + 1];
    const auto out_size = out_sizes[dim[i]];
    signal_size[i + 1] = std::max(in_size, out_size);
    TORCH_INTERNAL_ASSERT(in_size == signal_size[i + 1] || in_size == (signal_size[i + 1] / 2) + 1);
    TORCH_INTERNAL_ASSERT(out_size == signal_size[i + 1] || out_size == (signal_size[i + 1] / 2) + 1);
  }

  batched_sizes[0] = batch_size;
  at::DimVector batched_out_sizes(batched_sizes.begin(), batched_sizes.end());
  for (size_t i = 0; i < dim.size(); ++i) batched_out_sizes[i + 1] = out_sizes[dim[i]];
  out.resize_(batched_out_sizes, at::MemoryFormat::Contiguous);
  // DFTI refuses zero strides ("Inconsistent configuration parameters");
  // the CPU clones such an input here, and so do we.
  if (at::has_internal_overlap(input) == at::MemOverlap::Yes) input = input.clone();

  run_plan(input, out, signal_size, normalization, forward);

  at::DimVector out_strides(ndim);
  int64_t batch_numel = 1;
  for (int64_t i = batch_dims - 1; i >= 0; --i) {
    out_strides[dim_permute[i]] = batch_numel * out.strides()[0];
    batch_numel *= out_sizes[dim_permute[i]];
  }
  for (int64_t i = batch_dims; i < ndim; ++i) out_strides[dim_permute[i]] = out.strides()[1 + (i - batch_dims)];
  out.as_strided_(out_sizes, out_strides, out.storage_offset());
  return out;
}

// The transformed dims in input-stride order; `exclude_last` keeps the last
// one last (a one-sided dim cannot move).
at::DimVector sort_dims(T self, IntArrayRef dim, bool exclude_last = false) {
  at::DimVector sorted(dim.begin(), dim.end());
  const auto strides = self.strides();
  std::sort(sorted.begin(), sorted.end() - exclude_last, [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  return sorted;
}

at::Tensor fft_c2c(T self, IntArrayRef dim, int64_t normalization, bool forward) {
  TORCH_CHECK(self.is_complex());
  c10::DeviceGuard guard(self.device());
  const auto sorted = sort_dims(self, dim);
  auto out = at::empty(self.sizes(), self.options());
  return exec_fft(out, self, self.sizes(), sorted, normalization, forward);
}

// Multi-dimensional c2r is a c2c over the leading dims, then a 1-D c2r, as
// on the CPU (whose note: numpy disagrees on inputs that are not Hermitian).
at::Tensor fft_c2r(T self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  TORCH_CHECK(self.is_complex());
  c10::DeviceGuard guard(self.device());
  at::Tensor input = self;
  if (dim.size() > 1) {
    input = fft_c2c(self, dim.slice(0, dim.size() - 1), normalization, /*forward=*/false);
    dim = dim.slice(dim.size() - 1);
  }
  at::DimVector out_sizes(input.sizes().begin(), input.sizes().end());
  out_sizes[dim.back()] = last_dim_size;
  auto out = at::empty(out_sizes, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return exec_fft(out, input, out_sizes, dim, normalization, /*forward=*/false);
}

at::Tensor fft_r2c(T self, IntArrayRef dim, int64_t normalization, bool onesided) {
  TORCH_CHECK(self.is_floating_point());
  c10::DeviceGuard guard(self.device());
  at::DimVector out_sizes(self.sizes().begin(), self.sizes().end());
  const auto last_dim = dim.back();
  if (onesided) out_sizes[last_dim] = self.sizes()[last_dim] / 2 + 1;
  const auto sorted = sort_dims(self, dim, /*exclude_last=*/true);
  auto out = at::empty(out_sizes, self.options().dtype(c10::toComplexType(self.scalar_type())));
  exec_fft(out, self, out_sizes, sorted, normalization, /*forward=*/true);
  if (!onesided) at::native::_fft_fill_with_conjugate_symmetry_(out, dim);
  return out;
}

// The out= forms compute, then copy into `out`, as the CPU's do.
at::Tensor& fft_r2c_out(T self, IntArrayRef dim, int64_t normalization, bool onesided, at::Tensor& out) {
  c10::DeviceGuard guard(self.device());
  auto result = fft_r2c(self, dim, normalization, /*onesided=*/true);
  if (onesided) {
    at::native::resize_output(out, result.sizes());
    return out.copy_(result);
  }
  at::native::resize_output(out, self.sizes());
  const auto last_dim = dim.back();
  out.slice(last_dim, 0, result.sizes()[last_dim]).copy_(result);
  at::native::_fft_fill_with_conjugate_symmetry_(out, dim);
  return out;
}

at::Tensor& fft_c2r_out(T self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size, at::Tensor& out) {
  c10::DeviceGuard guard(self.device());
  auto result = fft_c2r(self, dim, normalization, last_dim_size);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

at::Tensor& fft_c2c_out(T self, IntArrayRef dim, int64_t normalization, bool forward, at::Tensor& out) {
  c10::DeviceGuard guard(self.device());
  auto result = fft_c2c(self, dim, normalization, forward);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace

// fft_fill_with_conjugate_symmetry_stub (SpectralOpsUtils.h): byte strides
// and raw pointers into an mlu tensor, filled by a device task.
void fft_fill_with_conjugate_symmetry_mlu(at::ScalarType dtype, IntArrayRef mirror_dims, IntArrayRef half_sizes,
                                          IntArrayRef in_strides, const void* in_data, IntArrayRef out_strides,
                                          void* out_data) {
  const auto type = dtype == at::kComplexFloat ? k::ScalarType::ComplexFloat : k::ScalarType::ComplexDouble;
  TORCH_INTERNAL_ASSERT(dtype == at::kComplexFloat || dtype == at::kComplexDouble);
  const auto ndim = static_cast<int>(half_sizes.size());
  std::vector<uint8_t> mirrored(ndim, 0);
  for (const auto d : mirror_dims) mirrored[d] = 1;
  std::vector<int64_t> sizes(half_sizes.begin(), half_sizes.end());
  std::vector<int64_t> in_s(in_strides.begin(), in_strides.end()), out_s(out_strides.begin(), out_strides.end());
  in_data = device_ptr(in_data);  // Note [Device pointers]
  out_data = device_ptr(out_data);
  launch_kernel(
      current_device(), "fft_fill_with_conjugate_symmetry",
      [=, mirrored = std::move(mirrored), sizes = std::move(sizes), in_s = std::move(in_s), out_s = std::move(out_s)] {
        k::fft_fill_conjugate_symmetry(type, ndim, sizes.data(), mirrored.data(), in_s.data(), in_data, out_s.data(),
                                       out_data);
      });
}

}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(fft_fill_with_conjugate_symmetry_stub, &torch_mlu::fft_fill_with_conjugate_symmetry_mlu)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/SpectralOps.inc"
