// What the oneDNN callers (conv/conv_dnnl.cpp, gemm/gemm_dnnl.cpp) share:
// the CPU engine and the rule that oneDNN runs on the calling thread only
// (Note [oneDNN convolutions]). Only for files compiled with
// MLU_KERNELS_WITH_DNNL=1 (CMakeLists.txt).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace mlu::kernels::detail {

// Whether libdnnl could be opened (Note [oneDNN beside PyTorch's] in
// dnnl_loader.cpp); nothing below may be called otherwise.
bool dnnl_loaded();

const dnnl::engine& dnnl_engine();

// oneDNN on this thread uses one thread (its OpenMP runtime keeps the count
// per thread). Also before making primitive descriptors: they plan their
// threading when made.
void dnnl_one_thread();

}  // namespace mlu::kernels::detail
