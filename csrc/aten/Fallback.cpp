// See Note [CPU fallback] in Fallback.h.
#include "csrc/aten/Fallback.h"

#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

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

void check_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t num_arguments) {
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
    TORCH_WARN("torch_mlu: ", name, " has no mlu kernel yet and runs on the CPU (its tensors are copied to the "
               "host and back; results are unchanged). Shown once per op; torch_mlu.fallback_report() lists "
               "every op that fell back.");
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

}  // namespace

void mlu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  TORCH_CHECK_NOT_IMPLEMENTED(fallback_allowed(), "The operator '", op_name(op), "' has no mlu kernel, and "
                              "TORCH_MLU_FALLBACK=0 forbids running it on the CPU. Unset TORCH_MLU_FALLBACK (or set "
                              "it to 1) to let it fall back, or move this computation to the CPU yourself.");
  check_devices(op, *stack, op.schema().arguments().size());
  count_and_warn(op);
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
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

}  // namespace torch_mlu
