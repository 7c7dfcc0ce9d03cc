#include "mlu_kernels/dtype.h"

#include <iterator>

namespace mlu::kernels {

namespace {

// Indexed by the enumerator's value; the order must follow the enum.
constexpr size_t kElementSizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

constexpr const char* kNames[] = {
    "Bool",     "UInt8",   "Int8",    "Int16",        "Int32",        "Int64",
    "Float16",  "BFloat16", "Float32", "Float64", "ComplexFloat", "ComplexDouble",
};

static_assert(std::size(kElementSizes) == std::size(kNames));
static_assert(std::size(kNames) == static_cast<size_t>(ScalarType::ComplexDouble) + 1);

}  // namespace

size_t element_size(ScalarType type) {
  return kElementSizes[static_cast<int>(type)];
}

const char* scalar_type_name(ScalarType type) {
  return kNames[static_cast<int>(type)];
}

}  // namespace mlu::kernels
