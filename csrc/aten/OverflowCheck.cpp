#include "csrc/aten/OverflowCheck.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <mlu_kernels/reduce.h>
#include <mlu_runtime/memory.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUGuard.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

std::mutex g_mutex;  // guards g_handle
std::optional<at::CallbackHandle> g_handle;
thread_local bool t_in_callback = false;  // the callbacks' own aten calls are not observed

// The flag words (Note [Overflow flag]), one per device, allocated and zeroed
// together on first use; device memory the host never dereferences.
uint32_t* flag_word(c10::DeviceIndex device) {
  static const std::vector<uint32_t*> words = [] {
    std::vector<uint32_t*> all(static_cast<size_t>(device_count()));
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      MLUGuard guard(d);
      void* word = nullptr;
      MLU_CHECK(mlu::mluMalloc(&word, sizeof(uint32_t)));
      uint32_t* on_device = device_ptr(static_cast<uint32_t*>(word));
      const MLUStream stream = getCurrentMLUStream(d);
      launch_kernel(stream, "overflow_flag_clear", [=] { std::atomic_ref<uint32_t>(*on_device).store(0); });
      stream.synchronize();  // zero before any stream of the device may set it
      all[static_cast<size_t>(d)] = static_cast<uint32_t*>(word);
    }
    return all;
  }();
  return words.at(static_cast<size_t>(device));
}

struct InCallback {
  InCallback() : previous_(t_in_callback) { t_in_callback = true; }
  ~InCallback() { t_in_callback = previous_; }
  InCallback(const InCallback&) = delete;
  InCallback& operator=(const InCallback&) = delete;

 private:
  bool previous_;
};

// Queues the scan of one result (Note [Overflow flag]).
void scan(const at::Tensor& result) {
  if (!result.defined() || result.device().type() != c10::DeviceType::PrivateUse1 || result.numel() == 0 ||
      !(result.is_floating_point() || result.is_complex())) {
    return;
  }
  const at::Tensor t = result.is_complex() ? at::view_as_real(result) : result;
  const std::optional<k::ScalarType> dtype = kernel_dtype(t.scalar_type());
  if (!dtype) return;  // float8: the reductions lack it
  k::Shape shape;
  k::Strides strides;
  if (t.is_non_overlapping_and_dense()) {  // every element once, in one span from the first
    shape.ndim = 1;
    shape.sizes[0] = t.numel();
    strides.v[0] = 1;
  } else {
    std::optional<Collapsed> layout = try_collapse_dims(t.sizes(), t.strides(), t.strides());
    if (!layout) return;  // more unmergeable dims than the kernels take
    // The reductions' inner mode walks the last dim: the fastest one goes there.
    std::vector<int> order(static_cast<size_t>(layout->shape.ndim));
    for (int d = 0; d < layout->shape.ndim; ++d) order[static_cast<size_t>(d)] = d;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return std::abs(layout->first.v[a]) > std::abs(layout->first.v[b]); });
    shape.ndim = layout->shape.ndim;
    for (int j = 0; j < shape.ndim; ++j) {
      shape.sizes[j] = layout->shape.sizes[order[static_cast<size_t>(j)]];
      strides.v[j] = layout->first.v[order[static_cast<size_t>(j)]];
    }
  }
  const k::Operand in{const_cast<void*>(device_ptr<const void>(t)), *dtype, strides};
  const c10::DeviceIndex device = t.device().index();
  uint32_t* flag = device_ptr(flag_word(device));
  auto kernel = [=] {
    double amax = 0;  // NaN if any element is NaN, inf if any is infinite
    k::reduce(k::ReduceOp::AbsMax, shape, k::Operand{&amax, k::ScalarType::Float64, k::Strides{}}, in);
    if (!std::isfinite(amax)) std::atomic_ref<uint32_t>(*flag).store(1, std::memory_order_relaxed);
  };
  c10::DeviceGuard guard(t.device());
  if (t.numel() <= kSmallKernelElements) {
    launch_small_kernel(device, "overflow_check", kernel);
  } else {
    launch_kernel(device, "overflow_check", kernel);
  }
}

void scan_value(const c10::IValue& value) {
  if (value.isTensor()) {
    scan(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorList().vec()) scan(t);
  }
}

// The tensors a result-less in-place op writes (the _foreach_ and _fused_
// optimizer ops return nothing): taken at its start, scanned at its end.
struct WrittenArguments : at::ObserverContext {
  std::vector<c10::IValue> values;
};

bool returns_nothing_it_writes(const char* name) {
  const bool batched = std::strncmp(name, "aten::_foreach_", 15) == 0 || std::strncmp(name, "aten::_fused_", 13) == 0;
  return batched && name[std::strlen(name) - 1] == '_';
}

// Ops whose results are not values they computed: views (their results alias
// an input they do not write) and uninitialised memory (which may hold stale
// NaN). Decided once per op from its schema, in a per-thread cache.
bool computes_its_results(const at::RecordFunction& fn) {
  static const std::unordered_set<std::string> kUninitialised = {
      "aten::empty",          "aten::empty_like", "aten::empty_strided",
      "aten::empty_permuted", "aten::new_empty",  "aten::new_empty_strided",
      "aten::resize_",        "aten::resize_as_", "aten::set_"};
  thread_local std::unordered_map<c10::OperatorName, bool> known;
  std::optional<c10::OperatorName> name = fn.operator_name();
  if (!name) return true;
  auto it = known.find(*name);
  if (it != known.end()) return it->second;
  bool computes = !kUninitialised.contains(name->name);
  if (const std::optional<c10::FunctionSchema> schema = fn.operator_schema()) {
    for (const c10::Argument& result : schema->returns()) {
      if (result.alias_info() != nullptr && !result.alias_info()->isWrite()) computes = false;
    }
  }
  known.emplace(std::move(*name), computes);
  return computes;
}

// Under a Python dispatch mode only the inner record of an op computes.
bool observed() { return !t_in_callback && !c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python); }

std::unique_ptr<at::ObserverContext> at_start(const at::RecordFunction& fn) {
  if (!observed() || !returns_nothing_it_writes(fn.name())) return nullptr;
  const std::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return nullptr;
  auto written = std::make_unique<WrittenArguments>();
  const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  for (size_t i = 0; i < schema->arguments().size() && i < inputs.size(); ++i) {
    const c10::AliasInfo* alias = schema->arguments()[i].alias_info();
    if (alias != nullptr && alias->isWrite()) written->values.push_back(inputs[i]);
  }
  return written;
}

void at_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (!observed() || !computes_its_results(fn)) return;
  InCallback inside;
  for (const c10::IValue& value : fn.outputs()) scan_value(value);
  if (context != nullptr) {
    for (const c10::IValue& value : static_cast<WrittenArguments*>(context)->values) scan_value(value);
  }
}

}  // namespace

bool set_overflow_check(bool enabled) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const bool was = g_handle.has_value();
  if (enabled && !was) {
    if (device_count() > 0) flag_word(0);  // allocates every device's flag, outside any capture
    g_handle = at::addGlobalCallback(at::RecordFunctionCallback(at_start, at_end)
                                         .needsInputs(true)
                                         .needsOutputs(true)
                                         .scopes({at::RecordScope::FUNCTION}));  // aten ops, backward's too
  } else if (!enabled && was) {
    at::removeCallback(*g_handle);
    g_handle.reset();
  }
  return was;
}

bool overflow_check_enabled() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_handle.has_value();
}

at::Tensor overflow_flag(c10::DeviceIndex device) {
  check_device_index(device);
  uint32_t* word = device_ptr(flag_word(device));
  at::Tensor out = at::empty({}, at::TensorOptions().dtype(at::kBool).device(c10::DeviceType::PrivateUse1, device));
  bool* set = device_ptr<bool>(out);
  launch_small_kernel(device, "overflow_flag_read",
                      [=] { *set = std::atomic_ref<uint32_t>(*word).load(std::memory_order_relaxed) != 0; });
  return out;
}

void clear_overflow_flag(c10::DeviceIndex device) {
  check_device_index(device);
  uint32_t* word = device_ptr(flag_word(device));
  launch_small_kernel(device, "overflow_flag_clear",
                      [=] { std::atomic_ref<uint32_t>(*word).store(0, std::memory_order_relaxed); });
}

}  // namespace torch_mlu
