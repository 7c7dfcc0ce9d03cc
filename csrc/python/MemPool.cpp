// torch_mlu._C bindings of memory pools and pluggable allocators, shaped like
// torch._C._MemPool and torch._C._cuda_customAllocator / _cuda_changeCurrentAllocator
// so torch_mlu/mlu/memory.py mirrors torch/cuda/memory.py.
#include "csrc/python/Bindings.h"

#include "csrc/core/MLUAllocatorConfig.h"
#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUPluggableAllocator.h"
#include "csrc/graphs/MLUGraph.h"

namespace py = pybind11;

namespace torch_mlu {
namespace {

// A user-created pool (torch.mlu.MemPool) on the device current at creation.
// It holds one use of the pool; when it goes, the pool's free memory does too
// (what tensors still hold returns to the device as they are freed).
class MemPool {
 public:
  MemPool(std::shared_ptr<MLUPluggableAllocator> allocator, bool is_user_created, bool use_on_oom, bool no_split)
      : device_(current_device()), allocator_(std::move(allocator)) {
    TORCH_CHECK(is_user_created, "MemPool: only user-created pools can be made from Python");
    id_ = MLUGraph::graph_pool_handle();  // {0, n}: never a graph's own {n, 0}
    MLUCachingAllocator::createOrIncrefPool(device_, id_, use_on_oom, no_split, allocator_);
  }

  ~MemPool() {
    try {
      MLUCachingAllocator::releasePool(device_, id_);
      MLUCachingAllocator::emptyCache(id_);
    } catch (const std::exception&) {
      // At exit the allocator may be gone already; the process returns the memory.
    }
  }

  c10::MempoolId_t id() const { return id_; }
  std::shared_ptr<MLUPluggableAllocator> allocator() const { return allocator_; }
  int use_count() const { return MLUCachingAllocator::getPoolUseCount(device_, id_); }

 private:
  c10::DeviceIndex device_;
  c10::MempoolId_t id_;
  std::shared_ptr<MLUPluggableAllocator> allocator_;
};

}  // namespace

void bind_mem_pool(py::module& m) {
  py::class_<c10::DeviceAllocator, std::shared_ptr<c10::DeviceAllocator>>(m, "_mlu_MLUAllocator");
  py::class_<MLUPluggableAllocator, c10::DeviceAllocator, std::shared_ptr<MLUPluggableAllocator>>(
      m, "_mlu_MLUPluggableAllocator");
  m.def("_mlu_customAllocator", [](uint64_t alloc_fn, uint64_t free_fn) {
    return MLU_BINDING(
        TORCH_CHECK(alloc_fn != 0 && free_fn != 0, "MLUPluggableAllocator: alloc and free functions must not be NULL");
        return std::make_shared<MLUPluggableAllocator>(reinterpret_cast<MLUPluggableAllocator::AllocFn>(alloc_fn),
                                                       reinterpret_cast<MLUPluggableAllocator::FreeFn>(free_fn)););
  });
  m.def("_mlu_changeCurrentAllocator", [](std::shared_ptr<c10::DeviceAllocator> allocator) {
    MLU_BINDING(
        auto pluggable = std::dynamic_pointer_cast<MLUPluggableAllocator>(allocator);
        TORCH_CHECK(pluggable != nullptr || allocator.get() == MLUCachingAllocator::get(),
                    "change_current_allocator expects an MLUPluggableAllocator");
        if (pluggable != nullptr) changeCurrentAllocator(std::move(pluggable)););
  });
  m.def("_mlu_getAllocator", [] {
    // Not owning: the current allocator lives as long as the process.
    return std::shared_ptr<c10::DeviceAllocator>(getMLUDeviceAllocator(), [](c10::DeviceAllocator*) {});
  });
  m.def("_mlu_getAllocatorBackend", [] { return std::string("native"); });
  m.def("_mlu_setAllocatorSettings", [](const std::string& settings) {
    MLU_BINDING(MLUAllocatorConfig::set(settings););
  });

  py::class_<MemPool, std::shared_ptr<MemPool>>(m, "_MLUMemPool")
      .def(py::init([](std::shared_ptr<MLUPluggableAllocator> allocator, bool is_user_created, bool use_on_oom,
                       bool no_split) {
             return MLU_BINDING(return std::make_shared<MemPool>(std::move(allocator), is_user_created, use_on_oom,
                                                                 no_split););
           }),
           py::arg("allocator") = nullptr, py::arg("is_user_created") = true, py::arg("use_on_oom") = false,
           py::arg("no_split") = false)
      .def_property_readonly("id", &MemPool::id)
      .def_property_readonly("allocator", &MemPool::allocator)
      .def("use_count", [](const MemPool& self) { return MLU_BINDING(return self.use_count();); });
  m.def("_mlu_beginAllocateCurrentThreadToPool", [](int device, c10::MempoolId_t id) {
    MLU_BINDING(MLUCachingAllocator::beginAllocateCurrentThreadToPool(static_cast<c10::DeviceIndex>(device), id););
  });
  m.def("_mlu_endAllocateToPool", [](int device, c10::MempoolId_t id) {
    MLU_BINDING(MLUCachingAllocator::endAllocateToPool(static_cast<c10::DeviceIndex>(device), id););
  });
  m.def("_mlu_releasePool", [](int device, c10::MempoolId_t id) {
    MLU_BINDING(MLUCachingAllocator::releasePool(static_cast<c10::DeviceIndex>(device), id););
  });
}

}  // namespace torch_mlu
