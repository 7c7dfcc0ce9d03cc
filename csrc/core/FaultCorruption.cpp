#include "csrc/core/FaultCorruption.h"

#include <mutex>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <mlu_runtime/fault.h>

namespace torch_mlu {
namespace {

constexpr double kScale = 1.0 + 1.0 / 64;

std::mutex g_mutex;
std::optional<at::CallbackHandle> g_handle;
thread_local bool t_perturbing = false;

void add_targets(const c10::IValue& value, std::vector<at::Tensor>& targets) {
  auto add = [&](const at::Tensor& t) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 && t.is_floating_point() && t.numel()) {
      targets.push_back(t);
    }
  };
  if (value.isTensor()) {
    add(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorList().vec()) add(t);
  }
}

void perturb(const at::RecordFunction& fn, at::ObserverContext* /*unused*/) {
  // Under a Python dispatch mode (the accuracy check) an op is recorded twice: the call the mode intercepts,
  // and the mode's own call of it inside __torch_dispatch__ (the mode popped). Only the inner one computes.
  if (t_perturbing || c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python)) return;
  std::vector<at::Tensor> targets;
  for (const c10::IValue& value : fn.outputs()) add_targets(value, targets);
  if (targets.empty() || !mlu::mluFaultCorruptOp(fn.name())) return;
  t_perturbing = true;
  {
    c10::impl::ExcludeDispatchKeyGuard below_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    for (const at::Tensor& t : targets) t.mul_(kScale);
  }
  t_perturbing = false;
}

}  // namespace

void sync_fault_corruption() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const bool wanted = mlu::mluFaultCorruptRulesActive();
  if (wanted && !g_handle) {
    g_handle = at::addGlobalCallback(at::RecordFunctionCallback(nullptr, perturb)
                                         .needsOutputs(true)
                                         .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  } else if (!wanted && g_handle) {
    at::removeCallback(*g_handle);
    g_handle.reset();
  }
}

}  // namespace torch_mlu
