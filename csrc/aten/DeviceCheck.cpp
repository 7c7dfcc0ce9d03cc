// See Note [Device checks] in DeviceCheck.h.
#include "csrc/aten/DeviceCheck.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/op_registration/adaption.h>

namespace torch_mlu {
namespace {

constexpr const char* kCheckedOps[] = {
#include "csrc/aten/DeviceChecked.inc"
};

bool checked_on_cuda(std::string_view name) {
  return std::binary_search(std::begin(kCheckedOps), std::end(kCheckedOps), name,
                            [](std::string_view a, std::string_view b) { return a < b; });
}

bool tensor_like(const c10::Argument& argument) {
  const c10::TypePtr& type = argument.real_type();
  if (type->kind() == c10::TypeKind::TensorType) return true;
  if (auto optional = type->cast<c10::OptionalType>()) {
    return optional->getElementType()->kind() == c10::TypeKind::TensorType;
  }
  if (auto list = type->cast<c10::ListType>()) {
    const c10::TypePtr& element = list->getElementType();
    if (element->kind() == c10::TypeKind::TensorType) return true;
    auto optional = element->cast<c10::OptionalType>();
    return optional && optional->getElementType()->kind() == c10::TypeKind::TensorType;
  }
  return false;
}

// The name PyTorch's codegen gives a backend's wrapper (wrapper_CUDA__gather,
// wrapper_CUDA_out_gather_out), for mlu.
std::string method_name(const c10::FunctionSchema& schema) {
  std::string base = schema.name().substr(std::strlen("aten::"));
  const auto& arguments = schema.arguments();
  if (std::any_of(arguments.begin(), arguments.end(), [](const c10::Argument& a) { return a.is_out(); })) {
    base += "_out";
  }
  return "wrapper_PrivateUse1_" + schema.overload_name() + "_" + base;
}

std::unique_ptr<DeviceCheckPlan> make_plan(const c10::FunctionSchema& schema) {
  auto plan = std::make_unique<DeviceCheckPlan>();
  plan->method = method_name(schema);
  const auto& arguments = schema.arguments();
  TORCH_INTERNAL_ASSERT(arguments.size() <= 64, schema.name(), ": too many arguments for a device check plan");
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::Argument& argument = arguments[i];
    plan->names.push_back(argument.name());
    if (!tensor_like(argument)) continue;
    if (argument.is_out()) {
      plan->out_mask |= uint64_t{1} << i;
    } else if (!argument.kwarg_only()) {
      plan->positional_mask |= uint64_t{1} << i;
    } else {
      plan->keyword_mask |= uint64_t{1} << i;
    }
  }
  return plan;
}

}  // namespace

const DeviceCheckPlan* device_check_plan(const char* name) {
  if (!checked_on_cuda(name)) return nullptr;
  static std::mutex mu;
  static auto* plans = new std::map<std::string, std::unique_ptr<DeviceCheckPlan>, std::less<>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans->find(std::string_view(name));
  if (it != plans->end()) return it->second.get();
  const std::string_view full(name);
  const size_t dot = full.find('.');
  const c10::OperatorName op_name("aten::" + std::string(full.substr(0, dot)),
                                  dot == std::string_view::npos ? "" : std::string(full.substr(dot + 1)));
  auto handle = c10::Dispatcher::singleton().findSchema(op_name);
  TORCH_INTERNAL_ASSERT(handle.has_value(), "device check: no aten schema named ", name);
  std::unique_ptr<DeviceCheckPlan> plan = make_plan(handle->schema());
  if ((plan->out_mask | plan->positional_mask | plan->keyword_mask) == 0) plan.reset();
  return plans->emplace(std::string(name), std::move(plan)).first->second.get();
}

void DeviceCheckPlan::visit(std::optional<c10::Device>& common, const at::Tensor& t, size_t i) const {
  c10::impl::check_and_update_common_device(common, t, method.c_str(), names[i].c_str());
}

void DeviceCheckPlan::visit(std::optional<c10::Device>& common, const std::optional<at::Tensor>& t,
                            size_t i) const {
  if (t.has_value()) visit(common, *t, i);
}

void DeviceCheckPlan::visit_keyword(std::optional<c10::Device>& common, const at::Tensor& t, size_t i) const {
  if (t.defined() && !(t.dim() == 0 && t.is_cpu())) visit(common, t, i);
}

void DeviceCheckPlan::visit_keyword(std::optional<c10::Device>& common, const std::optional<at::Tensor>& t,
                                    size_t i) const {
  if (t.has_value()) visit_keyword(common, *t, i);
}

void DeviceCheckPlan::visit(std::optional<c10::Device>& common, at::TensorList tensors, size_t i) const {
  for (const at::Tensor& t : tensors) visit(common, t, i);
}

void DeviceCheckPlan::visit(std::optional<c10::Device>& common, const at::ITensorListRef& tensors,
                            size_t i) const {
  for (const at::Tensor& t : tensors) visit(common, t, i);
}

void DeviceCheckPlan::visit(std::optional<c10::Device>& common, const c10::List<std::optional<at::Tensor>>& tensors,
                            size_t i) const {
  for (const std::optional<at::Tensor>& t : tensors) visit(common, t, i);
}

void DeviceCheckPlan::check_boxed(const torch::jit::Stack& stack, size_t first_argument) const {
  std::optional<c10::Device> common;
  auto visit_value = [&](size_t i, bool keyword) {
    const c10::IValue& value = stack[first_argument + i];
    if (value.isTensor()) {
      if (keyword) {
        visit_keyword(common, value.toTensor(), i);
      } else {
        visit(common, value.toTensor(), i);
      }
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) visit(common, t, i);
    } else if (value.isOptionalTensorList()) {
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorVector()) visit(common, t, i);
    }
  };
  for (size_t i = 0; i < names.size(); ++i) {
    if ((out_mask >> i) & 1) visit_value(i, false);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if ((positional_mask >> i) & 1) visit_value(i, false);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if ((keyword_mask >> i) & 1) visit_value(i, true);
  }
}

void check_same_device(const char* op, std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors) {
  const at::Tensor& first = tensors.begin()->get();
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(!t.defined() || t.device() == first.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ", first.device(),
                " and ", t.device(), "! (when checking arguments for ", op, ")");
  }
}

}  // namespace torch_mlu
