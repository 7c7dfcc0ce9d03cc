// torch_mlu._C bindings of the memory API (torch.mlu.memory_* and friends),
// shaped like torch._C._cuda_* so torch_mlu/mlu/memory.py mirrors torch/cuda/memory.py.
#include <ATen/core/CachingHostAllocator.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUHostAllocator.h"
#include "csrc/python/Bindings.h"

namespace py = pybind11;

namespace torch_mlu {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;

py::dict stat_dict(const Stat& stat) {
  py::dict d;
  d["current"] = stat.current;
  d["peak"] = stat.peak;
  d["allocated"] = stat.allocated;
  d["freed"] = stat.freed;
  return d;
}

py::dict stat_array_dict(const StatArray& stats) {
  static const char* const names[] = {"all", "small_pool", "large_pool"};
  py::dict d;
  for (size_t i = 0; i < stats.size(); ++i) d[names[i]] = stat_dict(stats[i]);
  return d;
}

py::dict memory_stats(c10::DeviceIndex device) {
  c10::CachingDeviceAllocator::DeviceStats s = MLUCachingAllocator::getDeviceStats(device);
  py::dict d;
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["max_split_size"] = s.max_split_size;
  d["num_sync_all_streams"] = s.num_sync_all_streams;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  d["allocation"] = stat_array_dict(s.allocation);
  d["segment"] = stat_array_dict(s.segment);
  d["active"] = stat_array_dict(s.active);
  d["inactive_split"] = stat_array_dict(s.inactive_split);
  d["allocated_bytes"] = stat_array_dict(s.allocated_bytes);
  d["reserved_bytes"] = stat_array_dict(s.reserved_bytes);
  d["active_bytes"] = stat_array_dict(s.active_bytes);
  d["inactive_split_bytes"] = stat_array_dict(s.inactive_split_bytes);
  d["requested_bytes"] = stat_array_dict(s.requested_bytes);
  d["oversize_allocations"] = stat_dict(s.oversize_allocations);
  d["oversize_segments"] = stat_dict(s.oversize_segments);
  return d;
}

py::dict host_memory_stats() {
  at::HostStats s = getMLUHostAllocator()->get_stats();
  auto duration = [](const c10::CachingAllocator::DurationStat& t) {
    py::dict d;
    d["total"] = t.total;
    d["max"] = t.max;
    d["min"] = t.min;
    d["count"] = t.count;
    d["avg"] = t.count == 0 ? 0 : t.total / t.count;
    return d;
  };
  py::dict d;
  d["num_host_alloc"] = s.num_host_alloc;
  d["num_host_free"] = s.num_host_free;
  d["allocations"] = stat_dict(s.allocations);
  d["allocated_bytes"] = stat_dict(s.allocated_bytes);
  d["active_requests"] = stat_dict(s.active_requests);
  d["active_bytes"] = stat_dict(s.active_bytes);
  d["host_alloc_time"] = duration(s.host_alloc_time);
  d["host_free_time"] = duration(s.host_free_time);
  return d;
}

c10::DeviceIndex checked(int device) {
  check_device_index(static_cast<c10::DeviceIndex>(device));
  return static_cast<c10::DeviceIndex>(device);
}

}  // namespace

void bind_memory(py::module& m) {
  m.def("_mlu_memoryStats", [](int device) { return MLU_BINDING(return memory_stats(checked(device));); });
  m.def("_mlu_resetAccumulatedMemoryStats",
        [](int device) { MLU_BINDING(MLUCachingAllocator::resetAccumulatedStats(checked(device));); });
  m.def("_mlu_resetPeakMemoryStats", [](int device) { MLU_BINDING(MLUCachingAllocator::resetPeakStats(checked(device));); });
  m.def("_mlu_emptyCache", [] {
    MLU_BINDING(py::gil_scoped_release no_gil; MLUCachingAllocator::emptyCache(););
  });
  m.def("_mlu_memGetInfo", [](int device) {
    return MLU_BINDING(return getMLUDeviceAllocator()->getMemoryInfo(checked(device)););
  });
  m.def("_mlu_setMemoryFraction", [](double fraction, int device) {
    MLU_BINDING(MLUCachingAllocator::setMemoryFraction(fraction, checked(device)););
  });
  m.def("_mlu_getMemoryFraction",
        [](int device) { return MLU_BINDING(return MLUCachingAllocator::getMemoryFraction(checked(device));); });
  m.def("_mlu_cachingAllocator_raw_alloc", [](size_t size, int64_t stream_id) {
    return MLU_BINDING(
        c10::DeviceIndex device = current_device();
        MLUStream stream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), stream_id));
        return reinterpret_cast<uintptr_t>(MLUCachingAllocator::raw_alloc(size, stream)););
  });
  m.def("_mlu_cachingAllocator_raw_delete",
        [](uintptr_t ptr) { MLU_BINDING(MLUCachingAllocator::raw_delete(reinterpret_cast<void*>(ptr));); });
  m.def("_mlu_hostMemoryStats", [] { return MLU_BINDING(return host_memory_stats();); });
  m.def("_mlu_resetAccumulatedHostMemoryStats", [] { MLU_BINDING(getMLUHostAllocator()->reset_accumulated_stats();); });
  m.def("_mlu_resetPeakHostMemoryStats", [] { MLU_BINDING(getMLUHostAllocator()->reset_peak_stats();); });
  m.def("_mlu_hostEmptyCache", [] { MLU_BINDING(py::gil_scoped_release no_gil; getMLUHostAllocator()->empty_cache();); });
}

}  // namespace torch_mlu
