// The three variants (functional, in-place, out=) of a structured
// TensorIterator op whose impl is one pointwise kernel:
//   return pointwise_functional<at::meta::structured_exp>(PointwiseOp::Exp, {},
//                                                         MLU_FALLBACK(exp, self), self);
// The meta function checks the arguments and builds the iterator exactly as
// on the CPU; when the kernel library has no kernel for the computation's
// dtype (complex), the op runs through the CPU fallback instead.
#pragma once

#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/PointwiseLaunch.h"
#include "csrc/aten/Structured.h"

namespace torch_mlu {

// Runs the aten op `schema` ("aten::add.Tensor"; its C++ signature is Sig)
// through the CPU fallback, for inputs the native kernel does not handle.
template <class Sig, class... Args>
decltype(auto) cpu_fallback(const char* schema, Args&&... args) {
  const std::string_view full(schema);
  const size_t dot = full.find('.');
  const std::string name(full.substr(0, dot));
  const std::string overload(dot == std::string_view::npos ? "" : full.substr(dot + 1));
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str()).typed<Sig>();
  return c10::impl::BoxedKernelWrapper<Sig>::call(c10::BoxedKernel::makeFromFunction<&mlu_cpu_fallback>(), op,
                                                  c10::DispatchKeySet(), std::forward<Args>(args)...);
}

template <class Meta, class Fallback, class... Args>
at::Tensor pointwise_functional(PointwiseOp op, const OpParams& params, Fallback&& fallback,
                                const at::Tensor& self, const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> iter;
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return std::move(iter.output());
}

template <class Meta, class Fallback, class... Args>
at::Tensor& pointwise_inplace(PointwiseOp op, const OpParams& params, Fallback&& fallback, at::Tensor& self,
                              const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUInplace<Meta> iter(self);
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return self;
}

// `out` comes last, as in the out= overloads' C++ signatures.
template <class Meta, class Fallback, class... Args>
at::Tensor& pointwise_out(PointwiseOp op, const OpParams& params, Fallback&& fallback, at::Tensor& out,
                          const at::Tensor& self, const Args&... rest) {
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> iter(out);
  iter.meta(self, rest...);
  if (!launch_pointwise(iter, op, params)) return fallback();
  return out;
}

}  // namespace torch_mlu

// Registration of a structured pointwise op whose meta is
// at::meta::structured_<META> and takes (self, ARGS...): the functional,
// in-place and out= schemas are strings ("add.Tensor", "add_.Tensor",
// "add.out"). OP and PARAMS are expressions over the arguments (e.g.
// (make_params({alpha}))); ARGS_DECL is the parenthesised parameter list
// after self, ARGS the parenthesised argument names.
#define MLU_POINTWISE_SCHEMA(schema) "aten::" schema
// MLU_COMMA_IF (a, b) expands to ", a, b"; MLU_COMMA_IF () to nothing.
#define MLU_COMMA_IF(...) __VA_OPT__(, ) __VA_ARGS__

#define MLU_IMPL_FUNCTIONAL(m, META, fn, OP, PARAMS, ARGS_DECL, ARGS)                          \
  m.impl(fn, [](const at::Tensor& self MLU_COMMA_IF ARGS_DECL) {                              \
    return ::torch_mlu::pointwise_functional<at::meta::structured_##META>(                     \
        OP, PARAMS,                                                                            \
        [&] {                                                                                  \
          return ::torch_mlu::cpu_fallback<at::Tensor(const at::Tensor& MLU_COMMA_IF ARGS_DECL)>( \
              MLU_POINTWISE_SCHEMA(fn), self MLU_COMMA_IF ARGS);                               \
        },                                                                                     \
        self MLU_COMMA_IF ARGS);                                                               \
  })
#define MLU_IMPL_INPLACE(m, META, ip, OP, PARAMS, ARGS_DECL, ARGS)                             \
  m.impl(ip, [](at::Tensor& self MLU_COMMA_IF ARGS_DECL) -> at::Tensor& {                     \
    return ::torch_mlu::pointwise_inplace<at::meta::structured_##META>(                        \
        OP, PARAMS,                                                                            \
        [&]() -> at::Tensor& {                                                                 \
          return ::torch_mlu::cpu_fallback<at::Tensor&(at::Tensor& MLU_COMMA_IF ARGS_DECL)>(   \
              MLU_POINTWISE_SCHEMA(ip), self MLU_COMMA_IF ARGS);                               \
        },                                                                                     \
        self MLU_COMMA_IF ARGS);                                                               \
  })
#define MLU_IMPL_OUT(m, META, out, OP, PARAMS, ARGS_DECL, ARGS)                                \
  m.impl(out, [](const at::Tensor& self MLU_COMMA_IF ARGS_DECL, at::Tensor& result) -> at::Tensor& { \
    return ::torch_mlu::pointwise_out<at::meta::structured_##META>(                            \
        OP, PARAMS,                                                                            \
        [&]() -> at::Tensor& {                                                                 \
          return ::torch_mlu::cpu_fallback<at::Tensor&(const at::Tensor& MLU_COMMA_IF ARGS_DECL, \
                                                       at::Tensor&)>(MLU_POINTWISE_SCHEMA(out), \
                                                                     self MLU_COMMA_IF ARGS, result); \
        },                                                                                     \
        result, self MLU_COMMA_IF ARGS);                                                       \
  })

#define MLU_REGISTER_POINTWISE(m, META, fn, ip, out, OP, PARAMS, ARGS_DECL, ARGS) \
  MLU_IMPL_FUNCTIONAL(m, META, fn, OP, PARAMS, ARGS_DECL, ARGS);                  \
  MLU_IMPL_INPLACE(m, META, ip, OP, PARAMS, ARGS_DECL, ARGS);                     \
  MLU_IMPL_OUT(m, META, out, OP, PARAMS, ARGS_DECL, ARGS)

// Ops without an in-place variant.
#define MLU_REGISTER_POINTWISE_NO_INPLACE(m, META, fn, out, OP, PARAMS, ARGS_DECL, ARGS) \
  MLU_IMPL_FUNCTIONAL(m, META, fn, OP, PARAMS, ARGS_DECL, ARGS);                         \
  MLU_IMPL_OUT(m, META, out, OP, PARAMS, ARGS_DECL, ARGS)

// A unary op without arguments: name, name_, name.out.
#define MLU_REGISTER_UNARY(m, name, OP) \
  MLU_REGISTER_POINTWISE(m, name, #name, #name "_", #name ".out", OP, {}, (), ())

// A binary op (self, Tensor other) with the usual schema names.
#define MLU_REGISTER_BINARY(m, META, fn, ip, out, OP) \
  MLU_REGISTER_POINTWISE(m, META, fn, ip, out, OP, {}, (const at::Tensor& other), (other))
