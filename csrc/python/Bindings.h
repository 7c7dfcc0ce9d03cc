// Shared helpers of the torch_mlu._C binding files.
#pragma once

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

// Runs BODY, turning C++ exceptions (c10::Error and friends) into the matching
// Python exceptions and forwarding C++ warnings to Python.
#define MLU_BINDING(BODY) \
  [&]() { HANDLE_TH_ERRORS BODY END_HANDLE_TH_ERRORS_PYBIND }()

namespace torch_mlu {

void bind_accuracy(pybind11::module& m);
void bind_fault_injection(pybind11::module& m);
void bind_memory(pybind11::module& m);
void bind_mem_pool(pybind11::module& m);
void bind_monitor(pybind11::module& m);
void bind_distributed(pybind11::module& m);
void bind_graphs(pybind11::module& m);
void bind_profiler(pybind11::module& m);
void bind_storage_sharing(pybind11::module& m);

}  // namespace torch_mlu
