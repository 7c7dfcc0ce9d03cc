#include "csrc/inductor/CompiledKernelLaunch.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <memory>

#include <mlu_kernels/parallel.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {

namespace {

// Payloads up to this size (about 45 pointer arguments) travel inside the
// task itself, so the common launch allocates nothing (queue.h).
constexpr size_t kInlinePayloadBytes = 384;

struct InlineCall {
  void (*run)(const void*);
  alignas(std::max_align_t) std::array<unsigned char, kInlinePayloadBytes> payload;
  void operator()() const { run(payload.data()); }
};

struct HeapCall {
  void (*run)(const void*);
  std::unique_ptr<unsigned char[]> payload;
  void operator()() const { run(payload.get()); }
};

void write_error(const char* message, char* error, size_t error_size) {
  if (error_size == 0) return;
  const size_t n = std::min(std::strlen(message), error_size - 1);
  std::memcpy(error, message, n);
  error[n] = '\0';
}

int launch(const char* name, void (*run)(const void*), const void* payload, size_t bytes, char* error,
           size_t error_size) {
  try {
    const c10::DeviceIndex device = current_device();
    if (bytes <= kInlinePayloadBytes) {
      InlineCall call{run, {}};
      std::memcpy(call.payload.data(), payload, bytes);
      launch_kernel(device, name, call);
    } else {
      HeapCall call{run, std::make_unique<unsigned char[]>(bytes)};
      std::memcpy(call.payload.get(), payload, bytes);
      launch_kernel(device, name, std::move(call));
    }
    return 0;
  } catch (const c10::Error& e) {
    write_error(e.what_without_backtrace(), error, error_size);
  } catch (const std::exception& e) {
    write_error(e.what(), error, error_size);
  } catch (...) {
    write_error("unknown error while launching a compiled mlu kernel", error, error_size);
  }
  return 1;
}

void parallel(void (*body)(void*), void* data, unsigned num_threads) {
  mlu::kernels::parallel_team(static_cast<int>(num_threads), [&] { body(data); });
}

void barrier() { mlu::kernels::team_barrier(); }
int single_start() { return mlu::kernels::team_single() ? 1 : 0; }
int thread_num() { return mlu::kernels::team_member(); }
int num_threads() { return mlu::kernels::team_size(); }
int max_threads() { return mlu::kernels::num_threads(); }
void* device_pointer(const void* ptr) { return const_cast<void*>(device_ptr(ptr)); }

}  // namespace

const TorchMluCompiledKernelApi& compiled_kernel_api() {
  static const TorchMluCompiledKernelApi api{
      TORCH_MLU_COMPILED_KERNEL_ABI_VERSION,
      sizeof(TorchMluCompiledKernelApi),
      launch,
      parallel,
      barrier,
      single_start,
      thread_num,
      num_threads,
      max_threads,
      device_pointer,
  };
  return api;
}

}  // namespace torch_mlu
