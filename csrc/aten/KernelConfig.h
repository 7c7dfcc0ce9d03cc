// How the kernel library runs in this process: its compute threads (sized
// from the devices' core count when libtorch_mlu loads) and the instruction
// set it picked. Read by torch_mlu.utils.collect_env for bug reports.
#pragma once

#include <string>

namespace torch_mlu {

struct KernelConfig {
  std::string detected_isa;  // the best ISA this CPU supports
  std::string active_isa;    // what the kernels use (MLU_KERNELS_ISA may cap it)
  bool amx_usable;           // BFloat16 GEMMs may use AMX tiles
  int threads;               // compute threads per kernel call
};

KernelConfig kernel_config();

}  // namespace torch_mlu
