// Compiled empty in builds without oneDNN (MLU_KERNELS_WITH_DNNL=0).
#if MLU_KERNELS_WITH_DNNL
#include "dnnl_support.h"

#include <omp.h>

namespace mlu::kernels::detail {

const dnnl::engine& dnnl_engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

void dnnl_one_thread() { omp_set_num_threads(1); }

}  // namespace mlu::kernels::detail

#endif
