// Random ops on mlu, drawing from the device's Philox generator (never the
// CPU's). Each op takes (seed, offset) from its generator under the
// generator's lock and launches one kernel with them; see MLUGeneratorImpl.h
// for why the results depend on nothing but the seed and the op count.
#include <cmath>

#include <limits>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/random.h>
#include <mlu_kernels/sampling.h>

#include "csrc/aten/Copy.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLUGeneratorImpl.h"

namespace torch_mlu {
namespace {

using mlu::kernels::ScalarType;
using mlu::kernels::Shape;
using mlu::kernels::Strides;

using Draw = PhiloxDraw;

Draw next_draw(const std::optional<at::Generator>& generator, const at::Tensor& self) {
  return next_philox_draw(generator, self.device().index());
}

void check_float(const at::Tensor& self, const char* op) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), op, " expects a floating-point tensor, got ", self.scalar_type());
}

// Launches `kernel(dst, dtype, shape, strides, seed, offset, params...)` over `self`.
template <class Kernel, class... Params>
at::Tensor& launch_random(at::Tensor& self, const std::optional<at::Generator>& generator, const char* name,
                          Kernel kernel, Params... params) {
  at::assert_no_internal_overlap(self);  // as the CPU's TensorIterator: one draw per element, not per address
  if (self.numel() == 0) return self;
  ScalarType dtype = require_kernel_dtype(self.scalar_type(), name);
  Draw draw = next_draw(generator, self);
  const Collapsed layout = kernel_layout(self);  // Note [Collapsed dims]
  const Shape shape = layout.shape;
  const Strides strides = layout.first;
  void* out = device_ptr(self);
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), name, [=] {
    const Draw d = draw.resolved();  // Note [Graph-safe random numbers]
    kernel(out, dtype, shape, strides, d.seed, d.offset, params...);
  });
  return self;
}

at::Tensor& uniform_mlu_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  if (self.is_complex()) {
    // As the CPU: real and imaginary parts each uniform on [from, to).
    at::Tensor parts = at::view_as_real(self);
    uniform_mlu_(parts, from, to, generator);
    return self;
  }
  check_float(self, "uniform_");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return launch_random(self, generator, "uniform_", &mlu::kernels::uniform, from, to);
}

at::Tensor& normal_mlu_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {
    // As the CPU: real and imaginary parts each N(mean, std / sqrt(2)).
    at::Tensor parts = at::view_as_real(self);
    normal_mlu_(parts, mean, std / std::sqrt(2.0), generator);
    return self;
  }
  check_float(self, "normal_");
  return launch_random(self, generator, "normal_", &mlu::kernels::normal, mean, std);
}

// normal(mean, std) with tensor arguments: normal draws on the output's shape,
// then scaled and shifted by ops that use no randomness.
at::Tensor normal_tensor_float_mlu(const at::Tensor& mean, double std, std::optional<at::Generator> generator) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  at::Tensor out = at::empty_like(mean, at::MemoryFormat::Contiguous);
  normal_mlu_(out, 0.0, std, generator);
  return out.add_(mean);
}

at::Tensor normal_float_tensor_mlu(double mean, const at::Tensor& std, std::optional<at::Generator> generator) {
  at::Tensor out = at::empty_like(std, at::MemoryFormat::Contiguous);
  normal_mlu_(out, 0.0, 1.0, generator);
  return out.mul_(std).add_(mean);
}

at::Tensor normal_tensor_tensor_mlu(const at::Tensor& mean, const at::Tensor& std,
                                    std::optional<at::Generator> generator) {
  std::vector<int64_t> shape = at::infer_size(mean.sizes(), std.sizes());
  at::Tensor out = at::empty(shape, mean.options().dtype(at::result_type(mean, std)));
  normal_mlu_(out, 0.0, 1.0, generator);
  return out.mul_(std).add_(mean);
}

at::Tensor& bernoulli_scalar_mlu_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return launch_random(self, generator, "bernoulli_", &mlu::kernels::bernoulli_scalar, p);
}

at::Tensor& bernoulli_tensor_mlu_(at::Tensor& self, const at::Tensor& p_, std::optional<at::Generator> generator) {
  TORCH_CHECK(at::isFloatingType(p_.scalar_type()), "bernoulli_: p must be a floating-point tensor, got ",
              p_.scalar_type());
  at::Tensor p = p_.to(self.device()).expand_as(self);
  at::assert_no_internal_overlap(self);
  if (self.numel() == 0) return self;
  ScalarType dtype = require_kernel_dtype(self.scalar_type(), "bernoulli_");
  ScalarType p_dtype = require_kernel_dtype(p.scalar_type(), "bernoulli_");
  Draw draw = next_draw(generator, self);
  Shape shape = kernel_shape(self);
  Strides strides = kernel_strides(self), p_strides = kernel_strides(p);
  void* out = device_ptr(self);
  const void* probabilities = device_ptr<const void>(p);
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "bernoulli_", [=] {
    const Draw d = draw.resolved();
    mlu::kernels::bernoulli_tensor(out, dtype, shape, strides, d.seed, d.offset, probabilities, p_dtype, p_strides);
  });
  return self;
}

at::Tensor bernoulli_mlu(const at::Tensor& self, std::optional<at::Generator> generator) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);  // as the CPU's
  bernoulli_tensor_mlu_(out, self, generator);
  return out;
}

// The largest integer that `type` represents exactly (PyTorch's random_ bound).
uint64_t default_random_range(at::ScalarType type) {
  switch (type) {
    case at::kBool:
      return 2;
    case at::kHalf:
      return (uint64_t{1} << 11) + 1;
    case at::kBFloat16:
      return (uint64_t{1} << 8) + 1;
    case at::kFloat:
      return (uint64_t{1} << 24) + 1;
    case at::kDouble:
      return (uint64_t{1} << 53) + 1;
    case at::kByte:
      return 256;
    case at::kChar:
      return 128;
    case at::kShort:
      return 1 << 15;
    case at::kInt:
      return uint64_t{1} << 31;
    case at::kLong:
      return uint64_t{1} << 63;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "random_ is not supported for dtype ", type, " on mlu");
  }
}

at::Tensor& random_from_to(at::Tensor& self, int64_t from, uint64_t range, std::optional<at::Generator> generator) {
  return launch_random(self, generator, "random_", &mlu::kernels::random_from_to, from, range);
}

at::Tensor& random_mlu_(at::Tensor& self, std::optional<at::Generator> generator) {
  return random_from_to(self, 0, default_random_range(self.scalar_type()), generator);
}

at::Tensor& random_from_mlu_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                             std::optional<at::Generator> generator) {
  if (to.has_value()) {
    TORCH_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    return random_from_to(self, from, static_cast<uint64_t>(*to) - static_cast<uint64_t>(from), generator);
  }
  uint64_t top = default_random_range(self.scalar_type());  // values in [from, top - 1]
  TORCH_CHECK(from >= 0 && static_cast<uint64_t>(from) < top, "random_ expects 'from' to be in [0, ", top - 1,
              "] for dtype ", self.scalar_type(), ", but got from=", from);
  return random_from_to(self, from, top - static_cast<uint64_t>(from), generator);
}

at::Tensor& random_to_mlu_(at::Tensor& self, int64_t to, std::optional<at::Generator> generator) {
  TORCH_CHECK(0 < to, "random_ expects 'from' to be less than 'to', but got from=0 >= to=", to);
  return random_from_to(self, 0, static_cast<uint64_t>(to), generator);
}

at::Tensor& exponential_mlu_(at::Tensor& self, double lambda, std::optional<at::Generator> generator) {
  check_float(self, "exponential_");
  TORCH_CHECK(lambda > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambda);
  return launch_random(self, generator, "exponential_", &mlu::kernels::exponential, lambda);
}

at::Tensor& geometric_mlu_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  return launch_random(self, generator, "geometric_", &mlu::kernels::geometric, p);
}

at::Tensor& log_normal_mlu_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  check_float(self, "log_normal_");
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  return launch_random(self, generator, "log_normal_", &mlu::kernels::log_normal, mean, std);
}

at::Tensor& cauchy_mlu_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> generator) {
  check_float(self, "cauchy_");
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  return launch_random(self, generator, "cauchy_", &mlu::kernels::cauchy, median, sigma);
}

at::Tensor& randperm_out_mlu(int64_t n, std::optional<at::Generator> generator, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  TORCH_CHECK(out.scalar_type() != at::kBool && static_cast<uint64_t>(n) <= default_random_range(out.scalar_type()),
              "n is too large for result tensor type: '", out.scalar_type(), "'");
  out.resize_({n});
  if (n == 0) return out;
  c10::DeviceGuard guard(out.device());
  Draw draw = next_draw(generator, out);
  bool direct = out.scalar_type() == at::kLong && out.is_contiguous();
  at::Tensor permutation = direct ? out : at::empty({n}, out.options().dtype(at::kLong));
  int64_t* data = device_ptr<int64_t>(permutation);
  launch_kernel(out.device().index(), "randperm", [=] {
    const Draw d = draw.resolved();
    mlu::kernels::randperm(data, n, d.seed, d.offset);
  });
  if (!direct) copy_on_device(out, permutation);
  return out;
}

const char* multinomial_error(mlu::kernels::MultinomialStatus status) {
  switch (status) {
    case mlu::kernels::MultinomialStatus::NegativeOrNonFinite:
      return "probability tensor contains either `inf`, `nan` or element < 0";
    case mlu::kernels::MultinomialStatus::ZeroSum:
      return "invalid multinomial distribution (sum of probabilities <= 0)";
    case mlu::kernels::MultinomialStatus::NotEnoughCategories:
      return "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)";
    case mlu::kernels::MultinomialStatus::Ok:
      break;
  }
  return nullptr;
}

// Bad weights are found on the device, so they are reported like CUDA's
// device-side assert: at the next synchronizing call (see MLU_LAUNCH_BLOCKING).
at::Tensor multinomial_mlu(const at::Tensor& self, int64_t samples, bool replacement,
                           std::optional<at::Generator> generator) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(samples > 0, "cannot sample n_sample <= 0 samples");
  int64_t categories = self.size(-1);
  // As the CPU: float probabilities cannot address more categories exactly.
  TORCH_CHECK(categories <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
  TORCH_CHECK(replacement || samples <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  int64_t rows = self.dim() == 1 ? 1 : self.size(0);
  at::Tensor out = at::empty(self.dim() == 1 ? std::vector<int64_t>{samples} : std::vector<int64_t>{rows, samples},
                             self.options().dtype(at::kLong));
  if (rows == 0) return out;
  ScalarType dtype = require_kernel_dtype(self.scalar_type(), "multinomial");
  Draw draw = next_draw(generator, self);
  int64_t row_stride = self.dim() == 1 ? 0 : self.stride(0), col_stride = self.stride(-1);
  int64_t* result = device_ptr<int64_t>(out);
  const void* probs = device_ptr<const void>(self);
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "multinomial", [=](mlu::TaskContext& context) {
    const Draw d = draw.resolved();
    auto status = mlu::kernels::multinomial(result, probs, dtype, rows, categories, row_stride, col_stride, samples,
                                            replacement, d.seed, d.offset);
    if (const char* error = multinomial_error(status)) context.fail(error);
  });
  return out;
}

at::Tensor& multinomial_out_mlu(const at::Tensor& self, int64_t samples, bool replacement,
                                std::optional<at::Generator> generator, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "multinomial expects Long tensor out, got: ", out.scalar_type());
  at::Tensor result = multinomial_mlu(self, samples, replacement, generator);
  out.resize_(result.sizes());
  out.copy_(result);
  return out;
}

// The CPU's native_dropout, case by case (outputs, layouts and aliasing): an
// empty input is returned itself with an empty mask of its dtype; outside
// training, a clone and a mask of ones; in training, input * mask * scale
// with the mask laid out like the input.
std::tuple<at::Tensor, at::Tensor> native_dropout_mlu(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input)};
  if (!train.value_or(true)) return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  TORCH_CHECK(0 <= p && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  bernoulli_scalar_mlu_(mask, 1.0 - p, std::nullopt);
  const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
  return {at::mul(input, mask).mul_(scale), mask};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/Random.inc"
