// Registering aten kernels for mlu with PyTorch's device check in front.
//
// Note [Device checks]
// PyTorch's generated wrappers for CUDA kernels check, before the kernel runs,
// that every tensor operand of an op is on one device
// (c10::impl::check_and_update_common_device over the out= arguments first,
// then the positional ones), except for ops that native_functions.yaml marks
// `device_check: NoCheck`: TensorIterator ops (the iterator checks, allowing
// 0-dim CPU scalars), ops that take CPU tensors by design (index with CPU
// indices, copy_, the CTC losses) and foreach ops. Ops without a CUDA kernel
// (the copy primitives a backend implements, _has_compatible_shallow_copy_type)
// get no check either. Out-of-tree kernels get no generated wrapper, and a
// kernel that skipped the check would read a CPU tensor as device memory after
// Python freed it, or race another device's queue. So every aten kernel is
// registered through MLULibrary (the TORCH_MLU_ATEN_IMPL macro), which wraps
// exactly the ops CUDA checks in exactly that check, with CUDA's message and
// argument order. The list is generated from the yaml (DeviceChecked.inc,
// tools/gen_device_checks.py); the CPU fallback applies the same plan to the
// ops it runs (Fallback.cpp). One addition: the generated check skips
// keyword-only tensors (segment_reduce's lengths, searchsorted's sorter), which
// CUDA's kernels then check themselves; the plan checks them last, letting
// 0-dim CPU tensors through (a CPU `lr` of the fused optimizers).
//
// Invariant: every TORCH_LIBRARY_IMPL(aten, PrivateUse1, ...) in csrc/ goes
// through TORCH_MLU_ATEN_IMPL (tests/test_device_checks.py greps for it).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <c10/core/CompileTimeFunctionPointer.h>
#include <c10/util/TypeTraits.h>
#include <torch/library.h>

namespace torch_mlu {

// Which C++ arguments of an aten op are checked, in which order, and the
// names the error message uses. One per checked op, alive for the process.
struct DeviceCheckPlan {
  std::string method;             // like CUDA's "wrapper_CUDA__gather": "wrapper_PrivateUse1__gather"
  uint64_t out_mask = 0;          // bit i: argument i is an out= tensor (checked first)
  uint64_t positional_mask = 0;   // bit i: argument i is a positional tensor (checked next)
  uint64_t keyword_mask = 0;      // bit i: argument i is a keyword-only tensor (checked last; 0-dim CPU passes)
  std::vector<std::string> names; // argument names, by position

  template <class... Args>
  void check(const Args&... args) const {
    check_in_order(std::index_sequence_for<Args...>{}, args...);
  }

  // The same check over the op's arguments on a boxed stack.
  void check_boxed(const torch::jit::Stack& stack, size_t first_argument) const;

 private:
  template <size_t... I, class... Args>
  void check_in_order(std::index_sequence<I...>, const Args&... args) const {
    std::optional<c10::Device> common;
    ((((out_mask >> I) & 1) ? visit(common, args, I) : void()), ...);
    ((((positional_mask >> I) & 1) ? visit(common, args, I) : void()), ...);
    ((((keyword_mask >> I) & 1) ? visit_keyword(common, args, I) : void()), ...);
  }

  void visit(std::optional<c10::Device>& common, const at::Tensor& t, size_t i) const;
  void visit(std::optional<c10::Device>& common, const std::optional<at::Tensor>& t, size_t i) const;
  void visit(std::optional<c10::Device>& common, at::TensorList tensors, size_t i) const;
  void visit(std::optional<c10::Device>& common, const at::ITensorListRef& tensors, size_t i) const;
  void visit(std::optional<c10::Device>& common, const c10::List<std::optional<at::Tensor>>& tensors,
             size_t i) const;
  void visit_keyword(std::optional<c10::Device>& common, const at::Tensor& t, size_t i) const;
  void visit_keyword(std::optional<c10::Device>& common, const std::optional<at::Tensor>& t, size_t i) const;
  // Arguments that are not tensors are never in a mask; keyword-only lists are checked as positional ones.
  template <class T>
  void visit(std::optional<c10::Device>&, const T&, size_t) const {}
  template <class T>
  void visit_keyword(std::optional<c10::Device>& common, const T& arg, size_t i) const {
    visit(common, arg, i);
  }
};

// The plan for the aten op `name` ("gather", "scatter.src"), or nullptr when
// the op has no device check (Note [Device checks]).
const DeviceCheckPlan* device_check_plan(const char* name);

namespace detail {

template <class Func, class R, class... Args>
auto checked_kernel(const DeviceCheckPlan* plan, Func func, c10::guts::typelist::typelist<Args...>* /*signature*/) {
  return [plan, func](Args... args) -> R {
    plan->check(args...);
    return func(std::forward<Args>(args)...);
  };
}

template <class Func>
auto with_device_check(const DeviceCheckPlan* plan, Func func) {
  if constexpr (c10::is_compile_time_function_pointer<Func>::value) {
    using Traits = c10::guts::infer_function_traits_t<typename Func::FuncType>;
    return checked_kernel<typename Func::FuncType*, typename Traits::return_type>(
        plan, Func::func_ptr(), static_cast<typename Traits::parameter_types*>(nullptr));
  } else {
    using Traits = c10::guts::infer_function_traits_t<Func>;
    return checked_kernel<Func, typename Traits::return_type>(
        plan, std::move(func), static_cast<typename Traits::parameter_types*>(nullptr));
  }
}

}  // namespace detail

// For kernels that check their own operands (ops CUDA checks in the kernel,
// not in a generated wrapper): every defined tensor on the first one's device,
// with CUDA's (TensorIterator's) text naming `op`.
void check_same_device(const char* op, std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors);

// A torch::Library for the aten namespace whose impl() adds the device check.
class MLULibrary {
 public:
  explicit MLULibrary(torch::Library& library) : library_(library) {}

  template <class Func>
  MLULibrary& impl(const char* name, Func&& func) {
    using F = std::decay_t<Func>;
    const DeviceCheckPlan* plan = nullptr;
    if constexpr (!std::is_same_v<F, torch::CppFunction>) plan = device_check_plan(name);
    if constexpr (std::is_same_v<F, torch::CppFunction>) {
      library_.impl(name, std::forward<Func>(func));
    } else if (plan == nullptr) {
      library_.impl(name, std::forward<Func>(func));
    } else {
      library_.impl(name, detail::with_device_check(plan, F(std::forward<Func>(func))));
    }
    return *this;
  }

 private:
  torch::Library& library_;
};

}  // namespace torch_mlu

// TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) whose `m` is an MLULibrary.
#define TORCH_MLU_ATEN_IMPL(m) TORCH_MLU_ATEN_IMPL_UID(m, C10_UID)
#define TORCH_MLU_ATEN_IMPL_UID(m, uid) TORCH_MLU_ATEN_IMPL_UID2(m, uid)
#define TORCH_MLU_ATEN_IMPL_UID2(m, uid)                                              \
  static void C10_CONCATENATE(torch_mlu_aten_impl_, uid)(::torch_mlu::MLULibrary&); \
  TORCH_LIBRARY_IMPL(aten, PrivateUse1, C10_CONCATENATE(torch_mlu_aten_lib_, uid)) {   \
    ::torch_mlu::MLULibrary checked(C10_CONCATENATE(torch_mlu_aten_lib_, uid));        \
    C10_CONCATENATE(torch_mlu_aten_impl_, uid)(checked);                              \
  }                                                                                   \
  static void C10_CONCATENATE(torch_mlu_aten_impl_, uid)(::torch_mlu::MLULibrary & m)
