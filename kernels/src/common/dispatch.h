// Maps a runtime ScalarType (or element size) to a C++ type and calls a generic
// lambda with std::type_identity<T>, so kernels are written once as templates:
//   dispatch(type, [&](auto tag) { using T = typename decltype(tag)::type; ... });
// Internal to the library. Preconditions: a valid enumerator / a size that
// element_size can return.
//
// Note [Storage-only types]
// The Float8 types are moved and converted but never computed in: `dispatch`
// (what arithmetic kernels instantiate) stops the process on them, naming the
// kernel's broken precondition, rather than instantiate every kernel on them;
// `dispatch_convertible` adds them, for the copy and the pointwise engine's
// loads and stores (convert.h). Callers gate arithmetic on the dtypes they
// map (csrc: kernel_dtype() has no Float8; storage_dtype() adds them).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/float8.h"
#include "mlu_kernels/half.h"

namespace mlu::kernels::detail {

// Stops the process: `type` reached a kernel that does not take it.
[[noreturn]] void storage_only_type(ScalarType type);

template <class F>
void dispatch(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::Bool: f(std::type_identity<bool>{}); break;
    case ScalarType::UInt8: f(std::type_identity<uint8_t>{}); break;
    case ScalarType::Int8: f(std::type_identity<int8_t>{}); break;
    case ScalarType::Int16: f(std::type_identity<int16_t>{}); break;
    case ScalarType::Int32: f(std::type_identity<int32_t>{}); break;
    case ScalarType::Int64: f(std::type_identity<int64_t>{}); break;
    case ScalarType::Float16: f(std::type_identity<Half>{}); break;
    case ScalarType::BFloat16: f(std::type_identity<BFloat16>{}); break;
    case ScalarType::Float32: f(std::type_identity<float>{}); break;
    case ScalarType::Float64: f(std::type_identity<double>{}); break;
    case ScalarType::ComplexFloat: f(std::type_identity<std::complex<float>>{}); break;
    case ScalarType::ComplexDouble: f(std::type_identity<std::complex<double>>{}); break;
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fnuz:
    case ScalarType::Float8_e5m2fnuz:
      storage_only_type(type);
  }
}

// dispatch and the storage-only types (Note [Storage-only types]).
template <class F>
void dispatch_convertible(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::Float8_e4m3fn:
      f(std::type_identity<Float8_e4m3fn>{});
      break;
    case ScalarType::Float8_e5m2:
      f(std::type_identity<Float8_e5m2>{});
      break;
    case ScalarType::Float8_e4m3fnuz:
      f(std::type_identity<Float8_e4m3fnuz>{});
      break;
    case ScalarType::Float8_e5m2fnuz:
      f(std::type_identity<Float8_e5m2fnuz>{});
      break;
    default:
      dispatch(type, f);
      break;
  }
}

// An opaque 16-byte element (ComplexDouble moved as bits).
struct Bits128 {
  uint64_t lo, hi;
};

// The unsigned storage type of T's size (1, 2, 4 or 8 bytes): T's elements
// moved as bits (e.g. copied into patch matrices), no value semantics.
template <class T>
using bits_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// For kernels that only move bits (fill, same-type copy): picks an unsigned
// storage type of the element's size, so no value semantics can alter the bits.
template <class F>
void dispatch_bits(size_t element_size, F&& f) {
  switch (element_size) {
    case 1: f(std::type_identity<uint8_t>{}); break;
    case 2: f(std::type_identity<uint16_t>{}); break;
    case 4: f(std::type_identity<uint32_t>{}); break;
    case 8: f(std::type_identity<uint64_t>{}); break;
    case 16: f(std::type_identity<Bits128>{}); break;
  }
}

// Like dispatch, for kernels defined on the real floating types only (Half,
// BFloat16, float, double): f is not instantiated for the others, and
// nothing runs for them (the callers' preconditions exclude them).
template <class F>
void dispatch_floating(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::Float16: f(std::type_identity<Half>{}); break;
    case ScalarType::BFloat16: f(std::type_identity<BFloat16>{}); break;
    case ScalarType::Float32: f(std::type_identity<float>{}); break;
    case ScalarType::Float64: f(std::type_identity<double>{}); break;
    default: break;
  }
}

// Like dispatch_floating, adding the integer types but Bool (the types with
// an integer GEMM: gemm_integer.h): for kernels that compute in the element
// type and wrap on overflow, as the CPU's integer kernels do.
template <class F>
void dispatch_real(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::UInt8: f(std::type_identity<uint8_t>{}); break;
    case ScalarType::Int8: f(std::type_identity<int8_t>{}); break;
    case ScalarType::Int16: f(std::type_identity<int16_t>{}); break;
    case ScalarType::Int32: f(std::type_identity<int32_t>{}); break;
    case ScalarType::Int64: f(std::type_identity<int64_t>{}); break;
    default: dispatch_floating(type, f); break;
  }
}

}  // namespace mlu::kernels::detail
