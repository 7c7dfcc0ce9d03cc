// The three variants (functional, in-place, out=) of a structured
// TensorIterator op whose impl is one pointwise kernel:
//   return pointwise_functional<at::meta::structured_exp>(PointwiseOp::Exp, {},
//                                                         MLU_FALLBACK(exp, self), self);
// The meta function checks the arguments and builds the iterator exactly as
// on the CPU; when the kernel library has no kernel for the computation's
// dtype (complex), the op runs through the CPU fallback instead.
#pragma once

#include <string>
#include <string_view>

#include <c10/core/DeviceGuard.h>

#include "csrc/aten/Fallback.h"
#include "csrc/aten/PointwiseLaunch.h"
#include "csrc/aten/Structured.h"

namespace torch_mlu {

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

namespace torch_mlu {

// "add.Tensor" for at::_ops::add_Tensor: the name Library::impl takes.
template <class Op>
const char* schema_name() {
  static const std::string name = [] {
    std::string n = std::string(Op::name).substr(std::string_view("aten::").size());
    if (Op::overload_name[0] != '\0') n += std::string(".") + Op::overload_name;
    return n;
  }();
  return name.c_str();
}

}  // namespace torch_mlu

// Registration of a structured pointwise op whose meta is
// at::meta::structured_<META> and takes (self, ARGS...): the functional,
// in-place and out= ops are at::_ops names (add_Tensor, add__Tensor,
// add_out), which give both the schema to register and the op to fall back
// to. OP and PARAMS are expressions over the arguments (e.g.
// (make_params({alpha}))); ARGS_DECL is the parenthesised parameter list
// after self, ARGS the parenthesised argument names.
// MLU_COMMA_IF (a, b) expands to ", a, b"; MLU_COMMA_IF () to nothing.
#define MLU_COMMA_IF(...) __VA_OPT__(, ) __VA_ARGS__

#define MLU_IMPL_FUNCTIONAL(m, META, fn, OP, PARAMS, ARGS_DECL, ARGS)                                         \
  m.impl(::torch_mlu::schema_name<ATEN_OP(fn)>(), [](const at::Tensor& self MLU_COMMA_IF ARGS_DECL) {         \
    return ::torch_mlu::pointwise_functional<at::meta::structured_##META>(                                    \
        OP, PARAMS, [&] { return ::torch_mlu::cpu_fallback<ATEN_OP(fn)>(self MLU_COMMA_IF ARGS); },           \
        self MLU_COMMA_IF ARGS);                                                                              \
  })
#define MLU_IMPL_INPLACE(m, META, ip, OP, PARAMS, ARGS_DECL, ARGS)                                            \
  m.impl(::torch_mlu::schema_name<ATEN_OP(ip)>(), [](at::Tensor& self MLU_COMMA_IF ARGS_DECL) -> at::Tensor& { \
    return ::torch_mlu::pointwise_inplace<at::meta::structured_##META>(                                       \
        OP, PARAMS,                                                                                           \
        [&]() -> at::Tensor& { return ::torch_mlu::cpu_fallback<ATEN_OP(ip)>(self MLU_COMMA_IF ARGS); },      \
        self MLU_COMMA_IF ARGS);                                                                              \
  })
#define MLU_IMPL_OUT(m, META, out, OP, PARAMS, ARGS_DECL, ARGS)                                               \
  m.impl(::torch_mlu::schema_name<ATEN_OP(out)>(),                                                            \
         [](const at::Tensor& self MLU_COMMA_IF ARGS_DECL, at::Tensor& result) -> at::Tensor& {               \
           return ::torch_mlu::pointwise_out<at::meta::structured_##META>(                                    \
               OP, PARAMS,                                                                                    \
               [&]() -> at::Tensor& {                                                                         \
                 return ::torch_mlu::cpu_fallback<ATEN_OP(out)>(self MLU_COMMA_IF ARGS, result);              \
               },                                                                                             \
               result, self MLU_COMMA_IF ARGS);                                                               \
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
#define MLU_REGISTER_UNARY(m, name, OP) MLU_REGISTER_POINTWISE(m, name, name, name##_, name##_out, OP, {}, (), ())

// A binary op (self, Tensor other) with the usual schema names.
#define MLU_REGISTER_BINARY(m, META, fn, ip, out, OP) \
  MLU_REGISTER_POINTWISE(m, META, fn, ip, out, OP, {}, (const at::Tensor& other), (other))
