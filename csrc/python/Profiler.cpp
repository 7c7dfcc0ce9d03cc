// torch_mlu._C bindings of the profiler's device side: cnpx ranges and marks
// (Note [Activity tracing] in mlu_runtime/tracer.h).
#include <mlu_runtime/tracer.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUStream.h"
#include "csrc/python/Bindings.h"

namespace torch_mlu {

void bind_profiler(pybind11::module& m) {
  m.def("_cnpx_range_push", [](const std::string& name) { return mlu::mluTracerRangePush(name.c_str()); });
  m.def("_cnpx_range_pop", [] { return mlu::mluTracerRangePop(); });
  m.def("_cnpx_mark", [](const std::string& name) {
    MLU_BINDING(MLU_CHECK(mlu::mluTracerMark(getCurrentMLUStream().queue(), name.c_str())););
  });
  m.def("_mlu_tracer_enabled", [] { return mlu::mluTracerEnabled(); });
}

}  // namespace torch_mlu
