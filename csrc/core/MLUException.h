// MLU_CHECK: the one place where a runtime status becomes a C++ exception.
//
// Out of memory becomes c10::OutOfMemoryError (torch.OutOfMemoryError in
// Python, message "MLU out of memory. ..."); a failed device task becomes
// c10::AcceleratorError (torch.AcceleratorError) naming the task; use in a
// forked child is CUDA's "Cannot re-initialize MLU in forked subprocess"
// RuntimeError; everything else is a c10::Error (RuntimeError). Messages carry the runtime's detail.
#pragma once

#include <mlu_runtime/status.h>

#include <c10/macros/Macros.h>

namespace torch_mlu {

[[noreturn]] void throw_mlu_error(mlu::mluError_t status, const char* expression, const char* file, int line);

}  // namespace torch_mlu

#define MLU_CHECK(EXPR)                                                   \
  do {                                                                     \
    const ::mlu::mluError_t __mlu_status = (EXPR);                         \
    if (C10_UNLIKELY(__mlu_status != ::mlu::mluSuccess)) {                 \
      ::torch_mlu::throw_mlu_error(__mlu_status, #EXPR, __FILE__, __LINE__); \
    }                                                                      \
  } while (0)
