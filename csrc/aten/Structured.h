// Running PyTorch's structured kernels' meta functions for mlu.
//
// A structured op (native_functions.yaml `structured: True`) splits into a
// meta function, which checks the arguments, computes the output's shape,
// dtype and strides and (for TensorIterator ops) builds the iterator, and an
// impl. PyTorch generates, per backend, small classes that decide where the
// outputs live; these templates are those classes for mlu, for the three
// variants of an op:
//   MLUFunctional<Meta>  allocates fresh outputs on mlu;
//   MLUInplace<Meta>     writes into self (checked like PyTorch: same dtype,
//                        same shape);
//   MLUOut<Meta>         resizes the user's out= tensors (PyTorch's
//                        resize_output rules and warning), writing through a
//                        proxy when a MetaBase op asks for strides the out
//                        tensor does not have (call finish() to copy back).
// After meta(...) a TensorIterator-based object is a built iterator that the
// kernel launchers take (PointwiseLaunch.h).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <tuple>
#include <optional>
#include <type_traits>

#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "csrc/aten/TensorFactories.h"

namespace torch_mlu {

namespace detail {

inline at::Tensor create_out(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  if (options.device().type() == c10::DeviceType::PrivateUse1) return empty_for_kernel_output(sizes, strides, options);
  return strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
}

void check_inplace(const at::Tensor& self, at::IntArrayRef sizes, const at::TensorOptions& options);
void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                const at::TensorOptions& options);

}  // namespace detail

template <class Meta, int N = 1>
class MLUFunctional final : public Meta {
 public:
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return outputs_[i]; }
  at::Tensor& output(int i = 0) { return outputs_[i]; }

 private:
  void set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) {
    outputs_[i] = detail::create_out(sizes, strides, options);
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
      Meta::set_output_raw_strided(i, sizes, strides, options);
    }
  }
  std::array<at::Tensor, N> outputs_;
};

template <class Meta, int N = 1>
class MLUInplace final : public Meta {
 public:
  template <class... T>
  explicit MLUInplace(T&... selves) : outputs_{std::ref(selves)...} {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return outputs_[i].get(); }

 private:
  void set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) {
    detail::check_inplace(outputs_[i].get(), sizes, options);
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
      Meta::set_output_raw_strided(i, sizes, strides, options);
    }
  }
  std::array<std::reference_wrapper<const at::Tensor>, N> outputs_;
};

template <class Meta, int N = 1>
class MLUOut final : public Meta {
 public:
  template <class... T>
  explicit MLUOut(const T&... outs) : outputs_{std::cref(outs)...} {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    const at::Tensor& out = outputs_[i].get();
    detail::resize_out(out, sizes, strides, options);
    if (!strides.empty() && out.strides() != strides) proxies_[i] = at::empty_strided(sizes, strides, options);
    finish_set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    detail::resize_out(outputs_[i].get(), sizes, strides, options);
    finish_set(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override {
    return proxies_[i].has_value() ? *proxies_[i] : outputs_[i].get();
  }
  // Copies proxy outputs into the user's tensors (MetaBase ops only).
  void finish() {
    for (int i = 0; i < N; ++i) {
      if (proxies_[i].has_value()) outputs_[i].get().copy_(*proxies_[i]);
    }
  }

 private:
  void finish_set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) {
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
      Meta::set_output_raw_strided(i, sizes, strides, options);
    }
  }
  std::array<std::reference_wrapper<const at::Tensor>, N> outputs_;
  std::array<std::optional<at::Tensor>, N> proxies_;
};

// The functional, in-place and out= forms of a structured op whose impl is
// launch(output tensors...): meta(args...) sizes (in-place: checks) the
// outputs, launch fills them (out=: through proxies when the meta asked for
// other strides). tools/gen_mlu_ops.py writes its wrappers with these.
template <class Meta, int N, class Launch, class... Args>
auto run_functional(Launch launch, const Args&... args) {
  MLUFunctional<Meta, N> meta;
  meta.meta(args...);
  if constexpr (N == 1) {
    launch(meta.output(0));
    return std::move(meta.output(0));
  } else {
    launch(meta.output(0), meta.output(1));
    return std::make_tuple(std::move(meta.output(0)), std::move(meta.output(1)));
  }
}

template <class Meta, int N, class Launch, class... Args>
void run_inplace(Launch launch, const at::Tensor& self, const Args&... args) {
  static_assert(N == 1, "in-place forms write one output, self");
  MLUInplace<Meta, 1> meta(self);
  meta.meta(args...);
  launch(self);
}

template <class Meta, int N, class Launch, class Outs, class... Args>
void run_out(Launch launch, const Outs& outs, const Args&... args) {
  auto meta = std::apply([](const auto&... o) { return std::make_unique<MLUOut<Meta, N>>(o...); }, outs);
  meta->meta(args...);
  if constexpr (N == 1) {
    launch(meta->maybe_get_output(0));
  } else {
    launch(meta->maybe_get_output(0), meta->maybe_get_output(1));
  }
  meta->finish();
}

// The out= form of an op computed functionally: resizes out (PyTorch's
// resize_output rules and warning) and copies value into it. An out that is
// resized takes value's (dense) layout, as TensorIterator lays out the out=
// results it resizes on the CPU.
inline at::Tensor& copy_into(at::Tensor& out, const at::Tensor& value) {
  if (at::native::resize_output(out, value.sizes()) && value.is_non_overlapping_and_dense() &&
      out.strides() != value.strides()) {
    out.as_strided_(value.sizes(), value.strides(), out.storage_offset());
  }
  return out.copy_(value);
}

}  // namespace torch_mlu
