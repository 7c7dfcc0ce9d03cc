// torch_mlu._C bindings of the accuracy tools' device parts: the overflow
// check (Note [Overflow flag] in csrc/aten/OverflowCheck.h), used by
// torch_mlu/accuracy/_overflow.py, and the dump's one-pass statistics
// (csrc/aten/TensorStatistics.h), used by torch_mlu/accuracy/_dump.py.
#include "csrc/python/Bindings.h"

#include "csrc/aten/OverflowCheck.h"
#include "csrc/aten/TensorStatistics.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_accuracy(py::module& m) {
  m.def("_mlu_setOverflowCheck", [](bool enabled) { return MLU_BINDING({ return set_overflow_check(enabled); }); });
  m.def("_mlu_overflowCheckEnabled", [] { return overflow_check_enabled(); });
  m.def("_mlu_overflowFlag", [](c10::DeviceIndex device) { return MLU_BINDING({ return overflow_flag(device); }); });
  m.def(
      "_mlu_tensorStatistics",
      [](const std::vector<at::Tensor>& tensors, const std::vector<at::Tensor>& minus) {
        return MLU_BINDING({ return tensor_statistics(tensors, minus); });
      },
      py::arg("tensors"), py::arg("minus") = std::vector<at::Tensor>{});
  m.def("_mlu_clearOverflowFlag", [](c10::DeviceIndex device) { MLU_BINDING({ clear_overflow_flag(device); }); });
}

}  // namespace torch_mlu
