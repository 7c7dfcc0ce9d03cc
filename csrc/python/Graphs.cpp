// torch_mlu._C: graph capture (torch.mlu.MLUGraph and friends, torch_mlu/mlu/graphs.py).
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

#include "csrc/core/MLUStream.h"
#include "csrc/graphs/MLUGraph.h"
#include "csrc/python/Bindings.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_graphs(py::module& m) {
  py::class_<MLUGraph>(m, "_MLUGraph")
      .def(py::init([](bool keep_graph) { return MLU_BINDING(return std::make_unique<MLUGraph>(keep_graph);); }),
           py::arg("keep_graph") = false)
      .def(
          "capture_begin",
          [](MLUGraph& self, std::optional<c10::MempoolId_t> pool, const std::string& capture_error_mode) {
            MLU_BINDING(CaptureErrorMode mode = parse_capture_error_mode(capture_error_mode);
                        py::gil_scoped_release no_gil; self.capture_begin(pool.value_or(c10::MempoolId_t{0, 0}), mode););
          },
          py::arg("pool") = std::nullopt, py::arg("capture_error_mode") = "global")
      .def("capture_end", [](MLUGraph& self) { MLU_BINDING(py::gil_scoped_release no_gil; self.capture_end();); })
      .def("instantiate", [](MLUGraph& self) { MLU_BINDING(self.instantiate();); })
      .def("replay", [](MLUGraph& self) { MLU_BINDING(py::gil_scoped_release no_gil; self.replay();); })
      .def("reset", [](MLUGraph& self) { MLU_BINDING(py::gil_scoped_release no_gil; self.reset();); })
      .def("pool", [](const MLUGraph& self) { return MLU_BINDING(return self.pool();); })
      .def("enable_debug_mode", [](MLUGraph& self) { MLU_BINDING(self.enable_debug_mode();); })
      .def("debug_dump", [](const MLUGraph& self, const std::string& path) { MLU_BINDING(self.debug_dump(path);); },
           py::arg("debug_path"))
      .def("_num_tasks", [](const MLUGraph& self) { return MLU_BINDING(return self.num_tasks();); });
  m.def("_graph_pool_handle", [] { return MLU_BINDING(return MLUGraph::graph_pool_handle();); });
  m.def("_is_current_stream_capturing", [] { return MLU_BINDING(return getCurrentMLUStream().capture_id() != 0;); });
  // Any later access to the data of `t`'s storage raises `message` (the storage keeps its memory): an output of
  // a replayed graph that a later replay overwrote (torch_mlu/_inductor/graphs.py; torch.cuda's
  // _set_storage_access_error_msg, which the CPU wheel lacks).
  m.def("_mlu_set_storage_access_error_msg", [](const at::Tensor& t, std::string message) {
    MLU_BINDING(t.storage().unsafeGetStorageImpl()->release_data_and_set_meta_custom_data_ptr_error_msg_(
                    std::move(message)););
  });
}

}  // namespace torch_mlu
