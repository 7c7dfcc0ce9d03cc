// See Note [CPU fallback] in Fallback.h.
#include "csrc/aten/Fallback.h"

#include <ATen/record_function.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <vector>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/from_blob.h>
#include <mlu_runtime/device.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"
#include "csrc/graphs/MLUGraph.h"

namespace torch_mlu {
namespace {

struct FallbackLog {
  std::mutex mu;
  std::map<std::string, int64_t> counts;
};

FallbackLog& log() {
  static FallbackLog instance;
  return instance;
}

// Ops that legitimately take CPU index tensors next to device tensors.
bool accepts_cpu_tensors(const std::string& name) {
  static const std::unordered_set<std::string> ops = {"aten::index", "aten::index_put_", "aten::_index_put_impl_",
                                                      "aten::index_put"};
  return ops.count(name) > 0;
}

std::string op_name(const c10::OperatorHandle& op) {
  const c10::OperatorName& name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// Ops with a device check get exactly the one a native kernel gets (Note
// [Device checks]); the exempt ones (TensorIterator ops among them) may mix
// mlu tensors with 0-dim CPU scalars, and CPU indices where CUDA takes them.
void check_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t num_arguments) {
  const c10::OperatorName& name = op.schema().operator_name();
  if (name.name.rfind("aten::", 0) == 0) {
    const std::string short_name = op_name(op).substr(std::strlen("aten::"));
    if (const DeviceCheckPlan* plan = device_check_plan(short_name.c_str())) {
      plan->check_boxed(stack, stack.size() - num_arguments);
      return;
    }
  }
  std::optional<c10::Device> mlu_device;
  std::optional<c10::Device> cpu_device;
  auto visit = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (t.device().type() == c10::DeviceType::PrivateUse1) {
      TORCH_CHECK(!mlu_device || *mlu_device == t.device(), "Expected all tensors to be on the same device, but found "
                  "at least two devices, ", *mlu_device, " and ", t.device(), "! (in ", op_name(op), ")");
      mlu_device = t.device();
    } else if (t.is_cpu() && t.dim() > 0) {
      cpu_device = t.device();
    }
  };
  for (size_t i = stack.size() - num_arguments; i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) {
      visit(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) visit(t);
    } else if (value.isOptionalTensorList()) {
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorVector()) {
        if (t) visit(*t);
      }
    }
  }
  TORCH_CHECK(!(mlu_device && cpu_device) || accepts_cpu_tensors(op.schema().name()),
              "Expected all tensors to be on the same device, but found at least two devices, ", *mlu_device,
              " and cpu! (in ", op_name(op), ")");
}

void count_and_warn(const c10::OperatorHandle& op) {
  std::string name = op_name(op);
  bool first = false;
  {
    FallbackLog& l = log();
    std::lock_guard<std::mutex> lock(l.mu);
    first = l.counts[name]++ == 0;
  }
  if (first) {
    TORCH_WARN("torch_mlu: ", name, " has no mlu kernel yet and runs on the CPU, in queue order (inputs are "
               "read in place, written tensors copied back; results are unchanged). Shown once per op; "
               "torch_mlu.fallback_report() lists every op that fell back.");
  }
}

// TORCH_MLU_FALLBACK=0 turns the fallback off: a missing kernel is an error.
bool fallback_allowed() {
  static const bool allowed = [] {
    const char* value = std::getenv("TORCH_MLU_FALLBACK");
    return value == nullptr || std::string(value) != "0";
  }();
  return allowed;
}

// Note [Zero-copy fallback]
// The software MLU's memory is host-addressable (mluDeviceProp::directHostAccess),
// so the inputs a fallback op only reads need no device-to-host copy: they are
// handed to the CPU kernel as CPU tensors aliasing device memory, once the
// current streams of their devices have drained (queue order is kept exactly
// as by the copying path, whose device-to-host copy waits the same way).
// Arguments the op writes (in-place, out=) still go through copies, because a
// CPU kernel may resize them, except written tensors whose elements share
// memory (an expanded self): a copy would give each element its own memory
// and change what the CPU kernel computes, and they cannot be resized; they
// are written in place, and the copy back finds its source is its destination
// (Copy.cpp, is_view_of_device_memory). at::native::cpu_fallback moves tensors
// to the CPU through aten::_to_cpu, which dispatches here for mlu tensors; the
// set of tensors handed over in place is passed in a thread-local.
thread_local const std::unordered_set<const c10::TensorImpl*>* t_in_place_tensors = nullptr;

bool direct_host_access(c10::DeviceIndex device) {
  mlu::mluDeviceProp prop{};
  return mlu::mluGetDeviceProperties(&prop, device) == mlu::mluSuccess && prop.directHostAccess != 0;
}

void collect_mlu_tensors(const c10::IValue& value, std::unordered_set<const c10::TensorImpl*>& out) {
  auto add = [&](const at::Tensor& t) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) out.insert(t.unsafeGetTensorImpl());
  };
  if (value.isTensor()) {
    add(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorList()) add(t);
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor>& t : value.toOptionalTensorList()) {
      if (t.has_value()) add(*t);
    }
  }
}

std::vector<at::Tensor> to_cpu_mlu(at::TensorList tensors) {
  std::vector<at::Tensor> result;
  result.reserve(tensors.size());
  std::unordered_set<c10::DeviceIndex> drained;
  for (const at::Tensor& t : tensors) {
    const bool alias = t.defined() && t.layout() == c10::kStrided && t_in_place_tensors != nullptr && t.numel() > 0 &&
                       t_in_place_tensors->count(t.unsafeGetTensorImpl()) > 0 && direct_host_access(t.device().index());
    if (!alias) {
      result.push_back(t.defined() ? t.cpu() : t);
      continue;
    }
    if (drained.insert(t.device().index()).second) getCurrentMLUStream(t.device().index()).synchronize();
    result.push_back(at::from_blob(const_cast<void*>(t.const_data_ptr()), t.sizes(), t.strides(), [](void*) {},
                                   t.options().device(c10::kCPU)));
  }
  return result;
}

// Runs `op` on the CPU: redispatched to `cpu_key`, CPU for dense kernels and
// SparseCPU / SparseCsrCPU for sparse ones (Note [Sparse CPU fallback]).
void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DispatchKey cpu_key) {
  TORCH_CHECK_NOT_IMPLEMENTED(fallback_allowed(), "The operator '", op_name(op), "' has no mlu kernel, and "
                              "TORCH_MLU_FALLBACK=0 forbids running it on the CPU. Unset TORCH_MLU_FALLBACK (or set "
                              "it to 1) to let it fall back, or move this computation to the CPU yourself.");
  check_devices(op, *stack, op.schema().arguments().size());
  refuse_in_capture(current_device(), "'" + op_name(op) + "', which has no mlu kernel and would run on the CPU "
                                      "fallback (a host round trip)");
  count_and_warn(op);
  // A profiler shows the CPU work under this range (the name is built only while one records).
  RECORD_USER_SCOPE("mlu_cpu_fallback: " + op_name(op));
  // The arguments the schema never writes are read in place (Note [Zero-copy fallback]), and so are written
  // ones whose elements share memory.
  // A tensor passed both as an input and as a written argument (addmm_ calls
  // addmm.out(self, ..., out=self)) is copied like every written one.
  std::unordered_set<const c10::TensorImpl*> in_place, written;
  const auto& arguments = op.schema().arguments();
  const size_t first = stack->size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto* alias = arguments[i].alias_info();
    collect_mlu_tensors((*stack)[first + i], alias == nullptr || !alias->isWrite() ? in_place : written);
  }
  for (const c10::TensorImpl* impl : written) {
    if (impl->layout() == c10::kStrided && at::has_internal_overlap(const_cast<c10::TensorImpl*>(impl)) == at::MemOverlap::Yes) {
      in_place.insert(impl);  // handed over in place, see Note [Zero-copy fallback]
    } else {
      in_place.erase(impl);
    }
  }
  const auto* previous = t_in_place_tensors;
  t_in_place_tensors = &in_place;
  try {
    at::native::cpu_fallback(op, stack, /*error_on_views=*/true, cpu_key);
  } catch (...) {
    t_in_place_tensors = previous;
    throw;
  }
  t_in_place_tensors = previous;
}

// Note [Sparse CPU fallback]
// PyTorch registers no kernels for the sparse PrivateUse1 keys. Sparse ops
// without an mlu kernel (sparse/SparseOps.cpp, sparse/SparseGenericOps.cpp)
// take this fallback, exactly like dense ones: sparse arguments travel to the
// CPU as copies of their indices and values (through _to_copy), the SparseCPU
// (SparseCsrCPU) kernel runs, and results come back through .to("mlu");
// written sparse arguments are copied back by _copy_from_and_resize, which
// sparse/SparseOps.cpp registers for the sparse keys.
}  // namespace

void mlu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_on_cpu(op, stack, c10::DispatchKey::CPU);
}

void mlu_sparse_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_on_cpu(op, stack, c10::DispatchKey::SparseCPU);
}

void mlu_sparse_csr_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_on_cpu(op, stack, c10::DispatchKey::SparseCsrCPU);
}

std::map<std::string, int64_t> fallback_counts() {
  FallbackLog& l = log();
  std::lock_guard<std::mutex> lock(l.mu);
  return l.counts;
}

void reset_fallback_counts() {
  FallbackLog& l = log();
  std::lock_guard<std::mutex> lock(l.mu);
  l.counts.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&mlu_cpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&mlu_sparse_cpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&mlu_sparse_csr_cpu_fallback>());
}

TORCH_MLU_ATEN_IMPL(m) {
  m.impl("_to_cpu", TORCH_FN(to_cpu_mlu));
}

}  // namespace torch_mlu
