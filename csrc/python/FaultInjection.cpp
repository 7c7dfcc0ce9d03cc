// torch_mlu._C bindings of Note [Fault injection] (mlu_runtime/fault.h), used by
// torch_mlu/mlu/fault_injection.py.
#include "csrc/python/Bindings.h"

#include <mlu_runtime/fault.h>

#include "csrc/core/MLUException.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_fault_injection(py::module& m) {
  m.def("_mlu_faultInjectSet", [](const std::string& spec) {
    MLU_BINDING({
      mlu::mluError_t status = mlu::mluFaultInjectSet(spec.c_str());
      TORCH_CHECK_VALUE(status == mlu::mluSuccess, mlu::mluGetLastErrorDetail());
    });
  });
  m.def("_mlu_faultInjectSpec", [] { return mlu::mluFaultInjectSpec(); });
  m.def("_mlu_faultInjectCount", [] { return mlu::mluFaultInjectCount(); });
}

}  // namespace torch_mlu
