// ScalarType: the element types the kernels understand, and their sizes.
// The set and spelling mirror PyTorch's dtypes, but the numbering is this
// library's own: callers map c10::ScalarType onto it. Every function taking a
// ScalarType requires one of the listed enumerators (no range check is made).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlu::kernels {

enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  ComplexFloat,
  ComplexDouble,
  // Storage only (float8.h): copied, converted and filled, no arithmetic.
  Float8_e4m3fn,
  Float8_e5m2,
  Float8_e4m3fnuz,
  Float8_e5m2fnuz,
};

// Bytes per element: 1 (Bool, UInt8, Int8, the Float8 types), 2, 4, 8, or 16 (ComplexDouble).
size_t element_size(ScalarType type);

// Whether `type` is one of the storage-only Float8 types.
constexpr bool is_float8(ScalarType type) { return type >= ScalarType::Float8_e4m3fn; }

// The enumerator's name, e.g. "Float32". The string is static.
const char* scalar_type_name(ScalarType type);

}  // namespace mlu::kernels
