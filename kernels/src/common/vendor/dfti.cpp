#include "dfti.h"

#include "mkl.h"

namespace mlu::kernels::vendor {
namespace {

template <class F>
bool bind(F& slot, const char* name) {
  slot = reinterpret_cast<F>(find_symbol(name));
  return slot != nullptr;
}

}  // namespace

const Dfti* dfti() {
  static const Dfti* table = [] () -> const Dfti* {
    static Dfti t;
    // blas(): the thread guard (SerialVendorCall) must work too.
    const bool found = blas() != nullptr && bind(t.create_s_1d, "DftiCreateDescriptor_s_1d") &&
                       bind(t.create_d_1d, "DftiCreateDescriptor_d_1d") &&
                       bind(t.create_s_md, "DftiCreateDescriptor_s_md") &&
                       bind(t.create_d_md, "DftiCreateDescriptor_d_md") && bind(t.set_value, "DftiSetValue") &&
                       bind(t.commit, "DftiCommitDescriptor") && bind(t.compute_forward, "DftiComputeForward") &&
                       bind(t.compute_backward, "DftiComputeBackward") &&
                       bind(t.free_descriptor, "DftiFreeDescriptor") && bind(t.error_message, "DftiErrorMessage");
    return found ? &t : nullptr;
  }();
  return table;
}

}  // namespace mlu::kernels::vendor
