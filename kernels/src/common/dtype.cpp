#include "mlu_kernels/dtype.h"

#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "dispatch.h"

namespace mlu::kernels {

namespace {

// Indexed by the enumerator's value; the order must follow the enum.
constexpr size_t kElementSizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 1, 1, 1, 1};

constexpr const char* kNames[] = {
    "Bool",
    "UInt8",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Float16",
    "BFloat16",
    "Float32",
    "Float64",
    "ComplexFloat",
    "ComplexDouble",
    "Float8_e4m3fn",
    "Float8_e5m2",
    "Float8_e4m3fnuz",
    "Float8_e5m2fnuz",
};

static_assert(std::size(kElementSizes) == std::size(kNames));
static_assert(std::size(kNames) == static_cast<size_t>(ScalarType::Float8_e5m2fnuz) + 1);

}  // namespace

size_t element_size(ScalarType type) {
  return kElementSizes[static_cast<int>(type)];
}

const char* scalar_type_name(ScalarType type) {
  return kNames[static_cast<int>(type)];
}

namespace detail {

void storage_only_type(ScalarType type) {
  std::fprintf(stderr, "mlu_kernels: %s is a storage-only type; this kernel does not take it\n",
               scalar_type_name(type));
  std::abort();
}

}  // namespace detail

}  // namespace mlu::kernels
