#include "csrc/core/MLUException.h"

#include <string>

#include <c10/util/Exception.h>

namespace torch_mlu {

void throw_mlu_error(mlu::mluError_t status, const char* expression, const char* file, int line) {
  std::string detail = mlu::mluGetLastErrorDetail();
  c10::SourceLocation where{expression, file, static_cast<uint32_t>(line)};
  if (status == mlu::mluErrorMemoryAllocation) {
    throw c10::OutOfMemoryError(where, "MLU out of memory. " + detail +
        ". Free tensors you no longer need, use a smaller batch, or raise the simulated device "
        "capacity with TORCH_MLU_DEVICE_MEMORY (e.g. TORCH_MLU_DEVICE_MEMORY=16G).");
  }
  if (status == mlu::mluErrorLaunchFailure) {
    throw c10::AcceleratorError(where, static_cast<int32_t>(status),
        std::string("MLU error: a device task failed: ") + detail +
        "\nDevice errors are reported asynchronously, at the next synchronizing call, so the "
        "Python stack may point past the failing op; set MLU_LAUNCH_BLOCKING=1 to report them at the op.");
  }
  if (status == mlu::mluErrorForkedChild) {
    // CUDA's text, which torch.utils.data and users match on.
    throw c10::Error(where, "Cannot re-initialize MLU in forked subprocess. To use MLU with multiprocessing, you "
                            "must use the 'spawn' start method");
  }
  throw c10::Error(where, std::string("MLU error: ") + mlu::mluGetErrorString(status) +
                              (detail.empty() ? std::string() : " (" + detail + ")"));
}

}  // namespace torch_mlu
