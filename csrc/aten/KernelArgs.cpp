#include "csrc/aten/KernelArgs.h"

#include <vector>

#include <c10/util/Exception.h>

namespace torch_mlu {

std::optional<mlu::kernels::ScalarType> kernel_dtype(at::ScalarType type) {
  using K = mlu::kernels::ScalarType;
  switch (type) {
    case at::kBool:
      return K::Bool;
    case at::kByte:
      return K::UInt8;
    case at::kChar:
      return K::Int8;
    case at::kShort:
      return K::Int16;
    case at::kInt:
      return K::Int32;
    case at::kLong:
      return K::Int64;
    case at::kHalf:
      return K::Float16;
    case at::kBFloat16:
      return K::BFloat16;
    case at::kFloat:
      return K::Float32;
    case at::kDouble:
      return K::Float64;
    case at::kComplexFloat:
      return K::ComplexFloat;
    case at::kComplexDouble:
      return K::ComplexDouble;
    default:
      return std::nullopt;
  }
}

std::optional<mlu::kernels::ScalarType> storage_dtype(at::ScalarType type) {
  using K = mlu::kernels::ScalarType;
  switch (type) {
    case at::kFloat8_e4m3fn:
      return K::Float8_e4m3fn;
    case at::kFloat8_e5m2:
      return K::Float8_e5m2;
    case at::kFloat8_e4m3fnuz:
      return K::Float8_e4m3fnuz;
    case at::kFloat8_e5m2fnuz:
      return K::Float8_e5m2fnuz;
    default:
      return kernel_dtype(type);
  }
}

mlu::kernels::ScalarType require_storage_dtype(at::ScalarType type, const char* op) {
  std::optional<mlu::kernels::ScalarType> kernel = storage_dtype(type);
  TORCH_CHECK_NOT_IMPLEMENTED(kernel.has_value(), op, ": dtype ", type,
                              " is not supported on mlu. Supported: bool, uint8, int8, int16, int32, int64, "
                              "float16, bfloat16, float32, float64, complex64, complex128, float8_e4m3fn, "
                              "float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz.");
  return *kernel;
}

std::optional<mlu::kernels::ScalarType> bits_dtype(at::ScalarType type) {
  using K = mlu::kernels::ScalarType;
  switch (type) {
    case at::kUInt16:
      return K::Int16;
    case at::kUInt32:
      return K::Int32;
    case at::kUInt64:
      return K::Int64;
    default:
      return storage_dtype(type);
  }
}

mlu::kernels::ScalarType require_bits_dtype(at::ScalarType type, const char* op) {
  std::optional<mlu::kernels::ScalarType> kernel = bits_dtype(type);
  TORCH_CHECK_NOT_IMPLEMENTED(kernel.has_value(), op, ": dtype ", type,
                              " is not supported on mlu. Supported: bool, uint8, int8, int16, int32, int64, "
                              "float16, bfloat16, float32, float64, complex64, complex128, float8_e4m3fn, "
                              "float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz (uint16, uint32 and uint64: "
                              "filled and copied without conversion only).");
  return *kernel;
}

mlu::kernels::ScalarType require_kernel_dtype(at::ScalarType type, const char* op) {
  std::optional<mlu::kernels::ScalarType> kernel = kernel_dtype(type);
  TORCH_CHECK_NOT_IMPLEMENTED(kernel.has_value(), op, ": dtype ", type,
                              " is not supported on mlu. Supported: bool, uint8, int8, int16, int32, int64, "
                              "float16, bfloat16, float32, float64, complex64, complex128 (float8 types: "
                              "copies and conversions only; other ops run on the CPU).");
  return *kernel;
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
  mlu::kernels::Strides strides{};
  for (int64_t i = 0; i < t.dim() && i < mlu::kernels::kMaxDims; ++i) strides.v[i] = t.stride(i);
  return strides;
}

mlu::kernels::Operand kernel_operand(const at::Tensor& t, const char* op) {
  return kernel_operand(t, kernel_strides(t), op);
}

mlu::kernels::Operand kernel_operand(const at::Tensor& t, const mlu::kernels::Strides& strides, const char* op) {
  return {const_cast<void*>(device_ptr<const void>(t)), require_kernel_dtype(t.scalar_type(), op), strides};
}

Collapsed collapse_dims(at::IntArrayRef sizes, at::IntArrayRef first, at::IntArrayRef second) {
  std::optional<Collapsed> collapsed = try_collapse_dims(sizes, first, second);
  TORCH_CHECK(collapsed.has_value(), "mlu kernels support up to ", mlu::kernels::kMaxDims,
              " dimensions that cannot be merged, got more (of ", sizes.size(),
              "); move the tensor to the CPU for "
              "this op");
  return *collapsed;
}

std::optional<Collapsed> try_collapse_dims(at::IntArrayRef sizes, at::IntArrayRef first, at::IntArrayRef second) {
  std::vector<int64_t> merged_sizes, a, b;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t size = sizes[d];
    if (size == 1) continue;
    if (!merged_sizes.empty() && a.back() == first[d] * size && b.back() == second[d] * size) {
      merged_sizes.back() *= size;
      a.back() = first[d];
      b.back() = second[d];
    } else {
      merged_sizes.push_back(size);
      a.push_back(first[d]);
      b.push_back(second[d]);
    }
  }
  if (merged_sizes.size() > static_cast<size_t>(mlu::kernels::kMaxDims)) return std::nullopt;
  Collapsed collapsed;
  collapsed.shape.ndim = static_cast<int>(merged_sizes.size());
  for (size_t i = 0; i < merged_sizes.size(); ++i) {
    collapsed.shape.sizes[i] = merged_sizes[i];
    collapsed.first.v[i] = a[i];
    collapsed.second.v[i] = b[i];
  }
  return collapsed;
}

Collapsed kernel_layout(const at::Tensor& t) { return kernel_layout(t, t); }

Collapsed kernel_layout(const at::Tensor& first, const at::Tensor& second) {
  TORCH_INTERNAL_ASSERT(first.sizes() == second.sizes(), "kernel_layout: the tensors differ in shape");
  if (first.dim() > mlu::kernels::kMaxDims) return collapse_dims(first.sizes(), first.strides(), second.strides());
  return {kernel_shape(first), kernel_strides(first), kernel_strides(second)};
}

}  // namespace torch_mlu
