#include "csrc/aten/KernelConfig.h"

#include <mlu_kernels/isa.h>
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

KernelConfig kernel_config() {
  namespace k = mlu::kernels;
  return {k::isa_name(k::detected_isa()), k::isa_name(k::active_isa()), k::amx_usable(), k::num_threads()};
}

}  // namespace torch_mlu
