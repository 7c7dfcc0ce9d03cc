// The device side of a C++ kernel module Inductor compiles for mlu: included
// by the module's source after Inductor's kernel (codecache.py appends it with
// the Python bindings). See compiled_kernel_api.h for the ABI it uses.
//
// Invariants: the module never calls the kernel on the Python thread; its
// entry point packs the parsed arguments (raw device pointers, scalars and
// the values host scalars point at, all trivially copyable) into a payload that the launch copies into the
// stream task. Every OpenMP entry point the kernel's regions need is defined
// here with hidden visibility, so the static linker binds the kernel's calls
// to them and none reaches the process's libgomp.
#pragma once

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "torch_mlu/compiled_kernel_api.h"

// Each module has its own copy of these (one translation unit per module).
namespace torch_mlu_kernel_module {
namespace {

const TorchMluCompiledKernelApi* api = nullptr;

// Called from the module's PyInit: false with a Python error set on failure.
bool load_api() {
  void* table = PyCapsule_Import("torch_mlu._C._compiled_kernel_api", 0);
  if (table == nullptr) return false;
  const auto* candidate = static_cast<const TorchMluCompiledKernelApi*>(table);
  if (candidate->abi_version < TORCH_MLU_COMPILED_KERNEL_ABI_VERSION ||
      candidate->struct_size < sizeof(TorchMluCompiledKernelApi)) {
    PyErr_SetString(PyExc_ImportError,
                    "this compiled mlu kernel needs a newer torch_mlu than the one imported; "
                    "clear the Inductor cache (TORCHINDUCTOR_CACHE_DIR) or upgrade torch_mlu");
    return false;
  }
  api = candidate;
  return true;
}

// One kernel argument in a payload: a raw pointer or a scalar, by value.
struct Slot {
  alignas(8) unsigned char bytes[8];
};

// Note [Host scalars are read at launch]
// A kernel may read a 0-dim CPU tensor (a host scalar: `x * lr` with lr on the
// CPU, a Python float Dynamo passes as a tensor). The kernel runs later, on
// the device thread, when the tensor may hold another value (an LR scheduler
// fill_s it) or be freed (Dynamo's temporary); eager mlu ops and CUDA's
// Inductor take the value at the call. So the parameters codegen lists in
// TORCH_MLU_HOST_SCALAR_PARAMS (", 1, 3": their positions) are copied by value
// into the payload when the kernel is launched, and the kernel is handed a
// pointer to that copy, which lives in the stream task as long as it runs.
#ifndef TORCH_MLU_HOST_SCALAR_PARAMS
#define TORCH_MLU_HOST_SCALAR_PARAMS
#endif
// A leading sentinel, so an empty list still forms an array.
constexpr size_t kHostScalarParams[] = {SIZE_MAX TORCH_MLU_HOST_SCALAR_PARAMS};
constexpr size_t kNumHostScalars = sizeof(kHostScalarParams) / sizeof(size_t) - 1;

// Where parameter `param`'s value is kept among the host scalars, or SIZE_MAX if it is not one.
constexpr size_t host_scalar_index(size_t param) {
  for (size_t k = 1; k <= kNumHostScalars; ++k) {
    if (kHostScalarParams[k] == param) return k - 1;
  }
  return SIZE_MAX;
}

constexpr bool host_scalars_within(size_t num_params) {
  for (size_t k = 1; k <= kNumHostScalars; ++k) {
    if (kHostScalarParams[k] >= num_params) return false;
  }
  return true;
}

// A host scalar's value (the largest is c10::complex<double>).
struct HostValue {
  alignas(16) unsigned char bytes[16];
};

template <class T>
Slot to_slot(T value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(Slot),
                "kernel arguments must be raw pointers or scalars");
  if constexpr (std::is_pointer_v<T>) value = static_cast<T>(api->device_pointer(value));
  Slot slot{};
  std::memcpy(slot.bytes, &value, sizeof(T));
  return slot;
}

template <class T>
T from_slot(const Slot& slot) {
  T value;
  std::memcpy(&value, slot.bytes, sizeof(T));
  return value;
}

template <class... Params>
struct Payload {
  void (*kernel)(Params...);
  Slot args[sizeof...(Params) > 0 ? sizeof...(Params) : 1];
  HostValue host_values[kNumHostScalars > 0 ? kNumHostScalars : 1];
};

template <size_t I, class Param, class P, class Arg>
void pack(P& payload, Arg arg) {
  constexpr size_t k = host_scalar_index(I);
  if constexpr (k != SIZE_MAX) {
    static_assert(std::is_pointer_v<Param>, "a host scalar is passed by pointer");
    using Element = std::remove_cv_t<std::remove_pointer_t<Param>>;
    static_assert(sizeof(Element) <= sizeof(HostValue), "a host scalar fits a HostValue");
    std::memcpy(payload.host_values[k].bytes, static_cast<const void*>(arg), sizeof(Element));
  } else {
    payload.args[I] = to_slot<Param>(arg);
  }
}

template <size_t I, class Param, class P>
Param unpack(const P& payload) {
  constexpr size_t k = host_scalar_index(I);
  if constexpr (k != SIZE_MAX) {
    return reinterpret_cast<Param>(const_cast<unsigned char*>(payload.host_values[k].bytes));
  } else {
    return from_slot<Param>(payload.args[I]);
  }
}

template <class... Params, class... Args, size_t... I>
void pack_all(Payload<Params...>& payload, std::index_sequence<I...>, Args... args) {
  (pack<I, Params>(payload, args), ...);
}

template <class... Params, size_t... I>
void call(const Payload<Params...>& p, std::index_sequence<I...>) {
  p.kernel(unpack<I, Params>(p)...);
}

// Enqueues kernel(args...) on the current mlu stream.
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), Args... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "one argument per kernel parameter");
  static_assert(host_scalars_within(sizeof...(Params)), "host scalar positions name kernel parameters");
  Payload<Params...> payload{kernel, {}, {}};
  pack_all(payload, std::index_sequence_for<Params...>{}, args...);
  auto run = [](const void* raw) {
    call(*static_cast<const Payload<Params...>*>(raw), std::index_sequence_for<Params...>{});
  };
  char error[1024] = {};
  if (api->launch(name, run, &payload, sizeof payload, error, sizeof error) != 0) {
    throw std::runtime_error(error);
  }
}

}  // namespace
}  // namespace torch_mlu_kernel_module

// OpenMP's runtime entry points (libgomp's ABI), on the device's cores.
extern "C" {
__attribute__((visibility("hidden"))) void GOMP_parallel(void (*body)(void*), void* data, unsigned num_threads,
                                                         unsigned /*flags*/) {
  torch_mlu_kernel_module::api->parallel(body, data, num_threads);
}
__attribute__((visibility("hidden"))) void GOMP_barrier() { torch_mlu_kernel_module::api->barrier(); }
__attribute__((visibility("hidden"))) bool GOMP_single_start() {
  return torch_mlu_kernel_module::api->single_start() != 0;
}
__attribute__((visibility("hidden"))) int omp_get_thread_num() noexcept {
  return torch_mlu_kernel_module::api->thread_num();
}
__attribute__((visibility("hidden"))) int omp_get_num_threads() noexcept {
  return torch_mlu_kernel_module::api->num_threads();
}
__attribute__((visibility("hidden"))) int omp_get_max_threads() noexcept {
  return torch_mlu_kernel_module::api->max_threads();
}
}  // extern "C"
