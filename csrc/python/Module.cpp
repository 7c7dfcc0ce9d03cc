// torch_mlu._C: the Python bindings. Thin: each function forwards to the glue.
#include <Python.h>

#include <ATen/Context.h>
#include <mlu_runtime/device.h>
#include <mlu_runtime/queue.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/FftPlanCache.h"
#include "csrc/aten/KernelConfig.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUGeneratorImpl.h"
#include "csrc/core/MLUHooks.h"
#include "csrc/core/MLUStream.h"
#include "csrc/core/MLUTestHooks.h"
#include "csrc/inductor/CompiledKernelLaunch.h"
#include "csrc/python/Bindings.h"

namespace py = pybind11;

namespace torch_mlu {
namespace {

void lazy_init() {
  torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
  at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
}

py::dict device_properties(c10::DeviceIndex device) {
  check_device_index(device);
  mlu::mluDeviceProp prop{};
  MLU_CHECK(mlu::mluGetDeviceProperties(&prop, device));
  py::dict d;
  d["name"] = std::string(prop.name);
  d["total_memory"] = prop.totalGlobalMem;
  d["major"] = prop.major;
  d["minor"] = prop.minor;
  d["multi_processor_count"] = prop.multiProcessorCount;
  d["cluster_count"] = prop.clusterCount;
  d["core_num_per_cluster"] = prop.coresPerCluster;
  d["is_integrated"] = prop.isIntegrated != 0;
  d["physical_id"] = prop.physicalId;
  return d;
}

py::dict fallback_report() {
  py::dict d;
  for (const auto& [name, count] : fallback_counts()) d[py::str(name)] = count;
  return d;
}

py::dict kernel_config_dict() {
  const KernelConfig config = kernel_config();
  py::dict d;
  d["detected_isa"] = config.detected_isa;
  d["active_isa"] = config.active_isa;
  d["amx_usable"] = config.amx_usable;
  d["threads"] = config.threads;
  d["gemm_library"] = config.gemm_library;
  d["mkl_linked"] = config.mkl_linked;
  d["conv_library"] = config.conv_library;
  d["dnnl_linked"] = config.dnnl_linked;
  return d;
}

}  // namespace
}  // namespace torch_mlu

PYBIND11_MODULE(_C, m) {
  using namespace torch_mlu;
  m.doc() = "torch_mlu native bindings";
  m.def("_mlu_init", [] { MLU_BINDING(lazy_init();); });
  // torch.backends.mlu.cnfft_plan_cache (torch._cufft_* for mlu).
  m.def("_cnfft_get_plan_cache_size",
        [](int device) { return MLU_BINDING(return fft_plan_cache_size(static_cast<c10::DeviceIndex>(device));); });
  m.def("_cnfft_get_plan_cache_max_size", [](int device) {
    return MLU_BINDING(return fft_plan_cache_max_size(static_cast<c10::DeviceIndex>(device)););
  });
  m.def("_cnfft_set_plan_cache_max_size", [](int device, int64_t max_size) {
    MLU_BINDING(set_fft_plan_cache_max_size(static_cast<c10::DeviceIndex>(device), max_size););
  });
  m.def("_cnfft_clear_plan_cache",
        [](int device) { MLU_BINDING(clear_fft_plan_cache(static_cast<c10::DeviceIndex>(device));); });
  m.def("_mlu_is_initialized", [] { return is_initialized(); });
  m.def("_mlu_isInBadFork", [] { return torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_mlu_getDeviceCount", [] { return static_cast<int>(device_count()); });
  // What keeps the runtime from offering devices (an invalid TORCH_MLU_* value), or "".
  m.def("_mlu_configError", [] {
    int count = 0;
    return mlu::mluGetDeviceCount(&count) == mlu::mluSuccess ? std::string() : std::string(mlu::mluGetLastErrorDetail());
  });
  m.def("_mlu_getDevice", [] { return MLU_BINDING(return static_cast<int>(current_device());); });
  m.def("_mlu_setDevice", [](int device) { MLU_BINDING(set_device(static_cast<c10::DeviceIndex>(device));); });
  m.def("_mlu_exchangeDevice", [](int device) {
    return MLU_BINDING(
        if (device < 0) return -1;
        return static_cast<int>(exchange_device(static_cast<c10::DeviceIndex>(device))););
  });
  m.def("_mlu_synchronize", [](int device) {
    MLU_BINDING(py::gil_scoped_release no_gil; device_synchronize(static_cast<c10::DeviceIndex>(device)););
  });
  // Note [Device threads at exit] (mlu_runtime/queue.h); torch_mlu's atexit handler.
  m.def("_mlu_drainAtExit", [](int stall_ms) {
    py::gil_scoped_release no_gil;  // a task may need the GIL to finish
    mlu::mluDrainAtExit(stall_ms);
  });
  m.def("_mlu_getDeviceProperties",
        [](int device) { return MLU_BINDING(return device_properties(static_cast<c10::DeviceIndex>(device));); });
  m.def("_mlu_sleep", [](int64_t cycles) { MLU_BINDING(sleep_on_current_stream(cycles);); });
  m.def("_mlu_launch_failing_task", [](const std::string& name, const std::string& message) {
    MLU_BINDING(launch_failing_task(name, message););
  });
  m.def("_time_cached_alloc_free_ns", [](size_t bytes, int iterations, int rounds) {
    return MLU_BINDING(py::gil_scoped_release no_gil; return time_cached_alloc_free_ns(bytes, iterations, rounds););
  });
  m.def("_mlu_create_foreign_queue", [](int device) {
    return MLU_BINDING(return reinterpret_cast<uintptr_t>(create_foreign_queue(static_cast<c10::DeviceIndex>(device))););
  });
  m.def("_mlu_destroy_foreign_queue",
        [](uintptr_t queue) { MLU_BINDING(destroy_foreign_queue(reinterpret_cast<void*>(queue));); });
  py::class_<StreamGate>(m, "_StreamGate")
      .def(py::init([](double timeout_s, bool hold_pool) {
             return MLU_BINDING(return new StreamGate(timeout_s, hold_pool););
           }),
           py::arg("timeout_s") = 30.0, py::arg("hold_pool") = false)
      .def("open", &StreamGate::open);
  m.def("_mlu_streamPriority", [](int64_t stream_id, int device) {
    return MLU_BINDING(
        return MLUStream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), stream_id))
            .priority(););
  });
  m.def("_mlu_streamQueue", [](int64_t stream_id, int device) {
    return MLU_BINDING(
        MLUStream stream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), stream_id));
        return reinterpret_cast<uintptr_t>(stream.queue()););
  });
  // A runtime queue handle -> (device, stream id), or None when it is no stream's (the sanitizer's reports).
  m.def("_mlu_describeQueue", [](uintptr_t handle) -> py::object {
    return MLU_BINDING({
      auto queue = reinterpret_cast<mlu::mluQueue_t>(handle);
      int device = -1;
      if (queue == nullptr || mlu::mluQueueCheckHandle(queue) != mlu::mluSuccess ||
          mlu::mluQueueGetDevice(queue, &device) != mlu::mluSuccess) {
        return py::object(py::none());
      }
      std::optional<c10::StreamId> id = stream_id_of_queue(static_cast<c10::DeviceIndex>(device), queue);
      return id ? py::object(py::make_tuple(device, *id)) : py::object(py::none());
    });
  });
  m.def("_mlu_streamLaunchCount", [](int64_t stream_id, int device) {
    return MLU_BINDING(
        MLUStream stream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), stream_id));
        uint64_t count = 0; MLU_CHECK(mlu::mluQueueGetLaunchCount(stream.queue(), &count)); return count;);
  });
  m.def("_mlu_streamFromExternal", [](uintptr_t queue, int device) {
    return MLU_BINDING(
        return getStreamFromExternal(reinterpret_cast<mlu::mluQueue_t>(queue), static_cast<c10::DeviceIndex>(device))
            .id(););
  });
  m.def("_mlu_streamPriorityRange", [] {
    int least = 0, greatest = 0;
    mlu::mluDeviceGetQueuePriorityRange(&least, &greatest);
    return py::make_tuple(least, greatest);
  });
  m.def("_mlu_getDefaultGenerator", [](int device) {
    return MLU_BINDING(
        const at::Generator& generator = getDefaultMLUGenerator(static_cast<c10::DeviceIndex>(device));
        return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(generator)););
  });
  bind_memory(m);
  bind_mem_pool(m);
  bind_distributed(m);
  bind_graphs(m);
  bind_storage_sharing(m);
  bind_monitor(m);
  bind_fault_injection(m);
  bind_accuracy(m);
  bind_profiler(m);
  // Imported by every compiled kernel module (compiled_kernel_module.h).
  m.attr("_compiled_kernel_api") = py::capsule(const_cast<TorchMluCompiledKernelApi*>(&compiled_kernel_api()),
                                               "torch_mlu._C._compiled_kernel_api");
  m.def("_fallback_report", &fallback_report);
  m.def("_reset_fallback_report", &reset_fallback_counts);
  m.def("_kernel_config", &kernel_config_dict);
  m.def("_set_gemm_library", [](const std::string& name) { MLU_BINDING(set_gemm_library(name);); });
  m.def("_set_conv_library", [](const std::string& name) { MLU_BINDING(set_conv_library(name);); });
}
