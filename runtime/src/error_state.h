// Internal: how runtime calls report failures.
// fail() stores the explanation in the calling thread's detail slot and returns
// the code, so a call site reads `return fail(mluErrorInvalidValue, "...")`.
#pragma once

#include <string>

#include "mlu_runtime/status.h"

namespace mlu::detail {

mluError_t fail(mluError_t code, std::string detail);

}  // namespace mlu::detail
