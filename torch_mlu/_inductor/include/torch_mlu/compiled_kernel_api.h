// The C ABI between torch_mlu and the C++ kernels Inductor compiles for mlu.
//
// A compiled kernel module (torch_mlu/_inductor/codecache.py builds them) is a
// Python extension holding one Inductor C++ kernel. It fetches this table from
// the capsule `torch_mlu._C._compiled_kernel_api` when it is imported and uses
// it for two things, as a real accelerator's kernel would use its driver:
// - launch: the module's Python entry point does not run the kernel; it
//   enqueues it on the current stream of the current device, in order with the
//   eager ops around it (Note [Compiled kernels are stream tasks] in
//   csrc/inductor/CompiledKernelLaunch.h);
// - the OpenMP fork-join entry points GCC emits for the kernel's `#pragma omp`
//   regions, which the module binds to these functions instead of libgomp
//   (compiled_kernel_module.h), so a kernel's parallel loops run on the
//   device's compute cores (Note [Teams] in kernels' parallel.h).
// The table only grows: a new member goes at the end with a new version, and a
// module checks `abi_version` and `struct_size` before it uses a member.
#pragma once

#include <stddef.h>
#include <stdint.h>

#define TORCH_MLU_COMPILED_KERNEL_ABI_VERSION 2

extern "C" {

struct TorchMluCompiledKernelApi {
  uint32_t abi_version;
  uint32_t struct_size;
  // Enqueues run(copy of payload) on the current stream of the current device;
  // `payload` (bytes long, trivially copyable) is copied before this returns.
  // `name` (a string with static storage) names the task in device-side error
  // reports. Returns 0, or nonzero with a message in error[error_size].
  int (*launch)(const char* name, void (*run)(const void* payload), const void* payload, size_t bytes,
                char* error, size_t error_size);
  // GOMP_parallel: body(data) on a team of up to num_threads (0: all) of the
  // device's compute threads, the calling device thread among them.
  void (*parallel)(void (*body)(void* data), void* data, unsigned num_threads);
  void (*barrier)(void);
  int (*single_start)(void);  // nonzero in exactly one member per encounter
  int (*thread_num)(void);
  int (*num_threads)(void);
  int (*max_threads)(void);
  // Version 2: the address the kernel dereferences for a device pointer
  // (torch_mlu::device_ptr, Note [Device pointers] in csrc/core/MLULaunch.h).
  void* (*device_pointer)(const void* ptr);
};

}  // extern "C"
