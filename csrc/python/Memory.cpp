// torch_mlu._C bindings of the memory API (torch.mlu.memory_* and friends),
// shaped like torch._C._cuda_* so torch_mlu/mlu/memory.py mirrors torch/cuda/memory.py.
#include <unordered_map>

#include <ATen/core/CachingHostAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include "csrc/python/Bindings.h"

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUHostAllocator.h"

// From torch/csrc/profiler/python/combined_traceback.h, which the wheel ships
// but cannot be included: it needs nlohmann/json.hpp, which the wheel lacks.
namespace torch {
TORCH_API std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

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

std::shared_ptr<c10::GatheredContext> gather_python_stack() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
}

std::shared_ptr<c10::GatheredContext> gather_full_stack() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true);
}

void record_memory_history(std::optional<std::string> enabled, std::optional<std::string> context,
                           const std::string& stacks, size_t max_entries, bool clear_history) {
  HistorySettings settings;
  if (enabled) {
    TORCH_CHECK(*enabled == "state" || *enabled == "all", "_record_memory_history: enabled must be None, 'state' "
                "or 'all', got '", *enabled, "'");
    settings.enabled = true;
    settings.record_trace = *enabled == "all";
  }
  if (context) {
    if (*context == "state") {
      settings.context = RecordContext::STATE;
    } else if (*context == "alloc") {
      settings.context = RecordContext::ALLOC;
    } else if (*context == "all") {
      settings.context = RecordContext::ALL;
    } else {
      TORCH_CHECK(false, "_record_memory_history: context must be None, 'state', 'alloc' or 'all', got '", *context, "'");
    }
  }
  TORCH_CHECK(stacks == "python" || stacks == "all", "_record_memory_history: stacks must be 'python' or 'all', got '",
              stacks, "'");
  if (settings.enabled && settings.context != RecordContext::NEVER) {
    torch::installCapturedTracebackPython();
    settings.gather = stacks == "all" ? &gather_full_stack : &gather_python_stack;
  }
  settings.max_entries = max_entries;
  MLUCachingAllocator::recordHistory(settings, clear_history);
}

const char* action_name(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC: return "alloc";
    case TraceEntry::FREE_REQUESTED: return "free_requested";
    case TraceEntry::FREE_COMPLETED: return "free_completed";
    case TraceEntry::SEGMENT_ALLOC: return "segment_alloc";
    case TraceEntry::SEGMENT_FREE: return "segment_free";
    case TraceEntry::SEGMENT_MAP: return "segment_map";
    case TraceEntry::SEGMENT_UNMAP: return "segment_unmap";
    case TraceEntry::SNAPSHOT: return "snapshot";
    case TraceEntry::OOM: return "oom";
  }
  return "unknown";
}

// The snapshot in torch.cuda.memory._snapshot()'s format; stack traces are
// symbolized in one batch, as CUDA's binding does.
py::dict memory_snapshot() {
  SnapshotInfo info = MLUCachingAllocator::snapshot();
  std::vector<torch::CapturedTraceback*> tracebacks;
  std::unordered_map<const c10::GatheredContext*, size_t> index;
  auto collect = [&](const std::shared_ptr<c10::GatheredContext>& context) {
    auto* tb = dynamic_cast<torch::CapturedTraceback*>(context.get());
    if (tb != nullptr && index.emplace(context.get(), tracebacks.size()).second) tracebacks.push_back(tb);
  };
  for (const SegmentInfo& segment : info.segments) {
    for (const BlockInfo& block : segment.blocks) collect(block.context);
  }
  for (const auto& trace : info.device_traces) {
    for (const TraceEntry& entry : trace) collect(entry.context);
  }
  std::vector<py::object> symbolized = torch::py_symbolize(tracebacks);
  auto frames = [&](const std::shared_ptr<c10::GatheredContext>& context) -> py::object {
    auto it = index.find(context.get());
    return it == index.end() ? py::list() : symbolized[it->second];
  };

  py::list segments;
  for (const SegmentInfo& segment : info.segments) {
    py::dict d;
    d["device"] = segment.device;
    d["address"] = segment.address;
    d["total_size"] = segment.total_size;
    d["allocated_size"] = segment.allocated_size;
    d["active_size"] = segment.active_size;
    d["requested_size"] = segment.requested_size;
    d["stream"] = segment.stream;
    d["segment_type"] = segment.is_small ? "small" : "large";
    d["segment_pool_id"] = py::make_tuple(segment.pool_id.first, segment.pool_id.second);
    d["is_expandable"] = segment.is_expandable;
    d["frames"] = py::list();
    py::list blocks;
    for (const BlockInfo& block : segment.blocks) {
      py::dict b;
      b["address"] = block.address;
      b["size"] = block.size;
      b["requested_size"] = block.requested_size;
      b["state"] = block.state;
      b["frames"] = frames(block.context);
      blocks.append(b);
    }
    d["blocks"] = blocks;
    segments.append(d);
  }
  py::list device_traces;
  for (const auto& trace : info.device_traces) {
    py::list entries;
    for (const TraceEntry& entry : trace) {
      py::dict e;
      e["action"] = action_name(entry.action);
      e[entry.action == TraceEntry::OOM ? "device_free" : "addr"] = entry.addr;
      e["size"] = entry.size;
      e["stream"] = entry.stream;
      e["time_us"] = entry.time_us;
      e["frames"] = frames(entry.context);
      entries.append(e);
    }
    device_traces.append(entries);
  }
  py::dict settings;
  size_t max_split = MLUCachingAllocator::maxSplitSize();
  settings["max_split_size"] = max_split == SIZE_MAX ? -1 : static_cast<int64_t>(max_split);
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  result["allocator_settings"] = settings;
  return result;
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
  m.def("_mlu_record_memory_history",
        [](std::optional<std::string> enabled, std::optional<std::string> context, const std::string& stacks,
           size_t max_entries, bool clear_history) {
          MLU_BINDING(record_memory_history(enabled, context, stacks, max_entries, clear_history););
        },
        py::arg("enabled"), py::arg("context"), py::arg("stacks"), py::arg("max_entries"), py::arg("clear_history"));
  m.def("_mlu_memorySnapshot", [] { return MLU_BINDING(return memory_snapshot();); });
  m.def("_mlu_attach_out_of_memory_observer", [](py::function observer) {
    // Never destroyed (the observer list lives to the end of the process), so no GIL is needed to drop it.
    auto callable = std::make_shared<py::function>(std::move(observer));
    MLUCachingAllocator::attachOutOfMemoryObserver([callable](int64_t device, size_t requested, size_t total,
                                                              size_t free) {
      py::gil_scoped_acquire gil;
      try {
        (*callable)(device, requested, total, free);
      } catch (py::error_already_set& e) {  // the out-of-memory error is what the caller must see
        e.restore();
        PyErr_WriteUnraisable(callable->ptr());
      }
    });
  });
  m.def("_mlu_setOutOfMemorySnapshotPath",
        [](const std::string& path) { MLU_BINDING(MLUCachingAllocator::setOutOfMemorySnapshotPath(path);); });
  m.def("_mlu_hostMemoryStats", [] { return MLU_BINDING(return host_memory_stats();); });
  m.def("_mlu_resetAccumulatedHostMemoryStats", [] { MLU_BINDING(getMLUHostAllocator()->reset_accumulated_stats();); });
  m.def("_mlu_resetPeakHostMemoryStats", [] { MLU_BINDING(getMLUHostAllocator()->reset_peak_stats();); });
  m.def("_mlu_hostEmptyCache", [] { MLU_BINDING(py::gil_scoped_release no_gil; getMLUHostAllocator()->empty_cache();); });
}

}  // namespace torch_mlu
