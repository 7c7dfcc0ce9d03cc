#include "csrc/aten/KernelConfig.h"

#include <c10/util/Exception.h>
#include <mlu_kernels/conv.h>
#include <mlu_kernels/gemm.h>
#include <mlu_kernels/isa.h>
#include <mlu_kernels/parallel.h>
#include <mlu_runtime/device.h>

namespace torch_mlu {

namespace {

// The kernels' compute-thread pool is sized from the devices' core count
// (TORCH_MLU_DEVICE_CORES) when the library loads; no thread starts here, and
// the device configuration is not read yet: MLU_VISIBLE_DEVICES set after
// `import torch` (or mapped from CUDA_VISIBLE_DEVICES by gpu_migration) still
// counts, as CUDA_VISIBLE_DEVICES does until CUDA initialises.
const bool g_compute_threads_configured = [] {
  mlu::kernels::set_num_threads(mlu::mluConfiguredCoresPerDevice());
  return true;
}();

}  // namespace

KernelConfig kernel_config() {
  namespace k = mlu::kernels;
  return {k::isa_name(k::detected_isa()), k::isa_name(k::active_isa()), k::amx_usable(), k::num_threads(),
          k::gemm_library_name(k::gemm_library()), k::gemm_library_available(k::GemmLibrary::Mkl),
          k::conv_library_name(k::conv_library()), k::conv_library_available(k::ConvLibrary::Dnnl)};
}

void set_gemm_library(const std::string& name) {
  namespace k = mlu::kernels;
  TORCH_CHECK(name == "own" || name == "mkl" || name == "dnnl",
              "set_gemm_library: expected 'own', 'mkl' or 'dnnl', got '", name, "'");
  const k::GemmLibrary library = name == "mkl"    ? k::GemmLibrary::Mkl
                                 : name == "dnnl" ? k::GemmLibrary::Dnnl
                                                  : k::GemmLibrary::Own;
  TORCH_CHECK(k::gemm_library_available(library), "set_gemm_library: this build of torch_mlu was made without ",
              name == "mkl" ? "oneMKL (pip package mkl-include)" : "oneDNN (Debian package libdnnl-dev)");
  k::set_gemm_library(library);
}

void set_conv_library(const std::string& name) {
  namespace k = mlu::kernels;
  TORCH_CHECK(name == "own" || name == "dnnl", "set_conv_library: expected 'own' or 'dnnl', got '", name, "'");
  const k::ConvLibrary library = name == "dnnl" ? k::ConvLibrary::Dnnl : k::ConvLibrary::Own;
  TORCH_CHECK(k::conv_library_available(library),
              "set_conv_library: this build of torch_mlu was made without oneDNN (Debian package libdnnl-dev)");
  k::set_conv_library(library);
}

}  // namespace torch_mlu
