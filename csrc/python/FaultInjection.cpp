// torch_mlu._C bindings of Note [Fault injection] (mlu_runtime/fault.h), used by
// torch_mlu/mlu/fault_injection.py.
#include "csrc/python/Bindings.h"

#include <mlu_runtime/fault.h>

#include "csrc/core/FaultCorruption.h"
#include "csrc/core/MLUException.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_fault_injection(py::module& m) {
  sync_fault_corruption();  // TORCH_MLU_FAULT_INJECT's corrupt: rules, from the import on
  m.def("_mlu_faultInjectSet", [](const std::string& spec) {
    MLU_BINDING({
      mlu::mluError_t status = mlu::mluFaultInjectSet(spec.c_str());
      TORCH_CHECK_VALUE(status == mlu::mluSuccess, mlu::mluGetLastErrorDetail());
      sync_fault_corruption();  // Note [Corrupting an op's results]
    });
  });
  m.def("_mlu_faultInjectSpec", [] { return mlu::mluFaultInjectSpec(); });
  m.def("_mlu_faultInjectCount", [] { return mlu::mluFaultInjectCount(); });
}

}  // namespace torch_mlu
