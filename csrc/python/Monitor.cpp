// torch_mlu._C bindings of the device monitor (Note [Monitor registry] in
// mlu_runtime/monitor.h), read by torch.mlu.utilization, device_memory_used and
// list_gpu_processes (torch_mlu/mlu/monitor.py).
#include "csrc/python/Bindings.h"

#include <mlu_runtime/device.h>
#include <mlu_runtime/monitor.h>

#include "csrc/core/MLUException.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_monitor(py::module& m) {
  // device (a visible ordinal) -> what every process reports about its physical device.
  m.def("_mlu_monitor_device", [](int device) {
    return MLU_BINDING({
      mlu::mluDeviceProp prop{};
      MLU_CHECK(mlu::mluGetDeviceProperties(&prop, device));
      std::vector<mlu::mluMonitorDevice> devices;
      MLU_CHECK(mlu::mluMonitorSnapshot(&devices));
      TORCH_INTERNAL_ASSERT(prop.physicalId < int(devices.size()), "the monitor misses physical device ",
                            prop.physicalId);
      const mlu::mluMonitorDevice& d = devices[prop.physicalId];
      py::list processes;
      for (const mlu::mluMonitorProcess& p : d.processes) {
        py::dict process;
        process["pid"] = p.pid;
        process["command"] = p.command;
        process["memory_used"] = p.memory_used;
        process["utilization"] = p.utilization;
        process["queues"] = p.queues;
        process["busy_queues"] = p.busy_queues;
        processes.append(process);
      }
      py::dict result;
      result["physical_id"] = d.physical_id;
      result["name"] = d.name;
      result["memory_total"] = d.capacity;
      result["memory_used"] = d.memory_used;
      result["utilization"] = d.utilization;
      result["queues"] = d.queues;
      result["busy_queues"] = d.busy_queues;
      result["processes"] = processes;
      return result;
    });
  });
  m.def("_mlu_monitor_directory", [] { return mlu::mluMonitorDirectory(); });
}

}  // namespace torch_mlu
