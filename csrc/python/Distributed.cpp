// torch_mlu._C.ProcessGroupCNCL: the cncl backend as a torch.distributed
// Backend subclass, so torch's Python code (ProcessGroup._register_backend,
// the c10d ops) takes it as its own.
#include <chrono>

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "csrc/distributed/CNCLConfig.h"
#include "csrc/distributed/FlightRecorderCNCL.h"
#include "csrc/distributed/ProcessGroupCNCL.h"
#include "csrc/python/Bindings.h"

namespace torch_mlu {
namespace {

// The holder torch gives its Backend classes (torch/csrc/distributed/c10d/init.cpp):
// dropping the last reference releases the GIL first, because a backend's
// destructor waits for its transfers, whose completion may need the GIL.
template <typename T>
class IntrusivePtrNoGilDestructor {
 public:
  IntrusivePtrNoGilDestructor() = default;
  IntrusivePtrNoGilDestructor(const IntrusivePtrNoGilDestructor&) = default;
  IntrusivePtrNoGilDestructor(IntrusivePtrNoGilDestructor&&) noexcept = default;
  IntrusivePtrNoGilDestructor& operator=(const IntrusivePtrNoGilDestructor&) = default;
  IntrusivePtrNoGilDestructor& operator=(IntrusivePtrNoGilDestructor&&) noexcept = default;
  /* implicit */ IntrusivePtrNoGilDestructor(c10::intrusive_ptr<T> impl) : impl_(std::move(impl)) {}
  // pybind11 constructs holders from raw pointers (pybind/pybind11#2957).
  explicit IntrusivePtrNoGilDestructor(T* impl) : impl_(c10::intrusive_ptr<T>::unsafe_steal_from_new(impl)) {}
  ~IntrusivePtrNoGilDestructor() {
    if (impl_ && PyGILState_Check()) {
      pybind11::gil_scoped_release no_gil;
      impl_.reset();
    } else {
      impl_.reset();
    }
  }
  T& operator*() const noexcept { return *impl_; }
  T* operator->() const noexcept { return impl_.get(); }
  T* get() const noexcept { return impl_.get(); }
  void reset() noexcept { impl_.reset(); }
  operator bool() const noexcept { return impl_; }

 private:
  c10::intrusive_ptr<T> impl_;
};

}  // namespace
}  // namespace torch_mlu

PYBIND11_DECLARE_HOLDER_TYPE(T, torch_mlu::IntrusivePtrNoGilDestructor<T>, true)

namespace torch_mlu {

void bind_distributed(pybind11::module& m) {
  namespace py = pybind11;
  using distributed::ProcessGroupCNCL;
  py::object backend = py::module::import("torch._C._distributed_c10d").attr("Backend");
  py::class_<ProcessGroupCNCL, IntrusivePtrNoGilDestructor<ProcessGroupCNCL>>(m, "ProcessGroupCNCL", backend)
      .def(py::init([](c10d::Backend& gloo, c10d::Backend* agreement, int rank, int size,
                       std::chrono::milliseconds timeout, c10d::Store* store, std::vector<int64_t> global_ranks) {
             auto hold = [](c10d::Backend* b) {
               return b ? c10::intrusive_ptr<c10d::Backend>::reclaim_copy(b) : c10::intrusive_ptr<c10d::Backend>();
             };
             auto store_ptr =
                 store ? c10::intrusive_ptr<c10d::Store>::reclaim_copy(store) : c10::intrusive_ptr<c10d::Store>();
             return MLU_BINDING(
                 return IntrusivePtrNoGilDestructor<ProcessGroupCNCL>(c10::make_intrusive<ProcessGroupCNCL>(
                     hold(&gloo), hold(agreement), rank, size, timeout, store_ptr, std::move(global_ranks))););
           }),
           py::arg("gloo"), py::arg("agreement"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("store") = nullptr, py::arg("global_ranks") = std::vector<int64_t>{},
           "The cncl backend over `gloo`, a ProcessGroupGloo on this group's store; `agreement` (or None) is a "
           "second one for the agreement checks; `store` (or None), the group's store, carries the watchdog's "
           "progress keys and the shared-memory set-up; `global_ranks`, the group's ranks in the default group "
           "(empty: 0..size-1).")
      .def_property_readonly(
          "all_reduce_transport",
          [](const ProcessGroupCNCL& pg) { return pg.all_reduce_through_shared_memory() ? "shared memory" : "gloo"; },
          "How all_reduce moves data: 'shared memory' (every rank on this host; Note [cncl shared-memory "
          "all-reduce]) or 'gloo'.");
  m.def(
      "_cncl_dump_trace",
      [](bool include_collectives, bool include_stack_traces, bool only_active) {
        std::string trace;
        {
          py::gil_scoped_release no_gil;  // symbolizing the stacks takes the GIL itself
          trace = MLU_BINDING(return distributed::FlightRecorderCNCL::get().dump(include_collectives,
                                                                                 include_stack_traces, only_active););
        }
        return py::bytes(trace);
      },
      py::arg("include_collectives") = true, py::arg("include_stack_traces") = true, py::arg("only_active") = false,
      "The cncl flight recorder's pickled dump (Note [cncl flight recorder]).");
  m.def(
      "_cncl_write_trace",
      [](int64_t global_rank, bool include_stack_traces) {
        py::gil_scoped_release no_gil;
        return MLU_BINDING(
            return distributed::FlightRecorderCNCL::get().write_dump(global_rank, include_stack_traces););
      },
      py::arg("global_rank"), py::arg("include_stack_traces") = true,
      "Writes the cncl flight recorder's dump to <TORCH_CNCL_DEBUG_INFO_TEMP_FILE prefix><global_rank>; returns "
      "the path.");
  m.def("_cncl_config", [] {
    const auto& c = distributed::cncl_config();
    py::dict d;
    d["blocking_wait"] = c.blocking_wait;
    d["avoid_record_streams"] = c.avoid_record_streams;
    d["async_error_handling"] = c.async_error_handling;
    d["check_collectives"] = c.check_collectives;
    d["debug"] = c.debug;
    d["trace_buffer_size"] = c.trace_buffer_size;
    d["dump_on_timeout"] = c.dump_on_timeout;
    d["wait_timeout_dump_ms"] = c.wait_timeout_dump_ms;
    d["desync_debug"] = c.desync_debug;
    d["enable_monitoring"] = c.enable_monitoring;
    d["heartbeat_timeout_sec"] = c.heartbeat_timeout_sec;
    d["shm_disable"] = c.shm_disable;
    d["transfer_timeout_margin_s"] = distributed::kTransferTimeoutMargin.count();
    return d;
  });
}

}  // namespace torch_mlu
