#include "csrc/aten/KernelArgs.h"

#include <c10/util/Exception.h>
#include <mlu_kernels/parallel.h>
#include <mlu_runtime/device.h>

namespace torch_mlu {

namespace {

// The kernels' compute-thread pool is sized from the devices' core count
// (TORCH_MLU_DEVICE_CORES) when the library loads; no thread starts here.
const bool g_compute_threads_configured = [] {
  mlu::mluDeviceProp prop{};
  if (mlu::mluGetDeviceProperties(&prop, 0) == mlu::mluSuccess) {
    mlu::kernels::set_num_threads(prop.multiProcessorCount);
  }
  return true;
}();

}  // namespace

std::optional<mlu::kernels::ScalarType> kernel_dtype(at::ScalarType type) {
  using K = mlu::kernels::ScalarType;
  switch (type) {
    case at::kBool: return K::Bool;
    case at::kByte: return K::UInt8;
    case at::kChar: return K::Int8;
    case at::kShort: return K::Int16;
    case at::kInt: return K::Int32;
    case at::kLong: return K::Int64;
    case at::kHalf: return K::Float16;
    case at::kBFloat16: return K::BFloat16;
    case at::kFloat: return K::Float32;
    case at::kDouble: return K::Float64;
    case at::kComplexFloat: return K::ComplexFloat;
    case at::kComplexDouble: return K::ComplexDouble;
    default: return std::nullopt;
  }
}

mlu::kernels::ScalarType require_kernel_dtype(at::ScalarType type, const char* op) {
  std::optional<mlu::kernels::ScalarType> kernel = kernel_dtype(type);
  TORCH_CHECK_NOT_IMPLEMENTED(kernel.has_value(), op, ": dtype ", type,
                              " is not supported on mlu. Supported: bool, uint8, int8, int16, int32, int64, "
                              "float16, bfloat16, float32, float64, complex64, complex128.");
  return *kernel;
}

at::Tensor flat_if_deep(const at::Tensor& t) {
  return t.dim() > mlu::kernels::kMaxDims && t.is_contiguous() ? t.view(-1) : t;
}

mlu::kernels::Shape kernel_shape(const at::Tensor& t) {
  TORCH_CHECK(t.dim() <= mlu::kernels::kMaxDims, "mlu kernels support up to ", mlu::kernels::kMaxDims,
              " dimensions, got a tensor with ", t.dim());
  mlu::kernels::Shape shape;
  shape.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < shape.ndim; ++i) shape.sizes[i] = t.size(i);
  return shape;
}

mlu::kernels::Strides kernel_strides(const at::Tensor& t) {
  mlu::kernels::Strides strides;
  for (int64_t i = 0; i < t.dim() && i < mlu::kernels::kMaxDims; ++i) strides.v[i] = t.stride(i);
  return strides;
}

}  // namespace torch_mlu
