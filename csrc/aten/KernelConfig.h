// How the kernel library runs in this process: its compute threads (sized
// from the devices' core count when libtorch_mlu loads) and the instruction
// set, GEMM library and convolution library it picked. Read by
// torch_mlu.utils.collect_env for bug reports; set_gemm_library and
// set_conv_library let benchmarks compare the libraries side by side.
#pragma once

#include <string>

namespace torch_mlu {

struct KernelConfig {
  std::string detected_isa;  // the best ISA this CPU supports
  std::string active_isa;    // what the kernels use (MLU_KERNELS_ISA may cap it)
  bool amx_usable;           // BFloat16 GEMMs may use AMX tiles
  int threads;               // compute threads per kernel call
  std::string gemm_library;  // "own", "mkl" or "dnnl" (mlu_kernels/gemm.h GemmLibrary)
  bool mkl_linked;           // whether this build can call oneMKL
  std::string conv_library;  // "dnnl" or "own" (Note [oneDNN convolutions] in kernels/src/conv/conv_dnnl.h)
  bool dnnl_linked;          // whether this build can call oneDNN
};

KernelConfig kernel_config();

// Picks the library floating-point products run on: "own", "mkl" or "dnnl"
// (an error for a library this build lacks). Not while products run.
void set_gemm_library(const std::string& name);
// Likewise for float32/bfloat16 convolutions: "own" or "dnnl".
void set_conv_library(const std::string& name);

}  // namespace torch_mlu
