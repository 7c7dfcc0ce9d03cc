// torch._foreach_* on mlu: one queue task per call walks every tensor of the
// lists (the multi-tensor-apply of CUDA's ForeachKernels), instead of one
// launch per tensor. torch.optim's foreach=True steps, clip_grad_norm_ /
// clip_grad_value_ and GradScaler use these.
//
// Note [Foreach fast path]
// A call takes the one-task path when CUDA's would (ForeachUtils.h
// can_use_fast_route): every tensor on one mlu device, strided, dense, all of
// one dtype, corresponding tensors of equal sizes and strides, and the result
// in that same dtype (no integer-to-float promotion, a scalar that does not
// promote). Dense tensors with equal strides correspond element by element in
// memory order, so each tensor is one flat run of numel elements from its
// data pointer. Everything else (mixed dtypes or devices, non-dense views,
// bool lists, ops the kernel library lacks for the dtype, integer powers)
// takes PyTorch's per-tensor loop (`*_slow`), which calls the native mlu ops
// one tensor at a time and raises their errors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/_foreach_abs_native.h>
#include <ATen/ops/_foreach_acos_native.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_asin_native.h>
#include <ATen/ops/_foreach_atan_native.h>
#include <ATen/ops/_foreach_ceil_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_cos_native.h>
#include <ATen/ops/_foreach_cosh_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_erf_native.h>
#include <ATen/ops/_foreach_erfc_native.h>
#include <ATen/ops/_foreach_exp_native.h>
#include <ATen/ops/_foreach_expm1_native.h>
#include <ATen/ops/_foreach_floor_native.h>
#include <ATen/ops/_foreach_frac_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_lgamma_native.h>
#include <ATen/ops/_foreach_log10_native.h>
#include <ATen/ops/_foreach_log1p_native.h>
#include <ATen/ops/_foreach_log2_native.h>
#include <ATen/ops/_foreach_log_native.h>
#include <ATen/ops/_foreach_maximum_native.h>
#include <ATen/ops/_foreach_minimum_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_pow_native.h>
#include <ATen/ops/_foreach_reciprocal_native.h>
#include <ATen/ops/_foreach_round_native.h>
#include <ATen/ops/_foreach_rsqrt_native.h>
#include <ATen/ops/_foreach_sigmoid_native.h>
#include <ATen/ops/_foreach_sign_native.h>
#include <ATen/ops/_foreach_sin_native.h>
#include <ATen/ops/_foreach_sinh_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_tan_native.h>
#include <ATen/ops/_foreach_tanh_native.h>
#include <ATen/ops/_foreach_trunc_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/reduce.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/PointwiseLaunch.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using TL = at::TensorList;
using Scalars = at::ArrayRef<at::Scalar>;
using Tensors = std::vector<at::Tensor>;

// One tensor's share of a list op: flat runs of `numel` elements.
struct Item {
  int64_t numel;
  void* data[4];  // output, then the inputs; an input flagged in `host_scalar_mask` reads `scalar`
  alignas(8) unsigned char scalar[8];
  OpParams params;
};

struct ForeachTask {
  PointwiseOp op;
  k::ScalarType dtype;         // every list's dtype, also the compute type
  k::ScalarType scalar_dtype;  // a host scalar input's type (Float64, Int64)
  int n_operands;
  uint8_t host_scalar_mask;    // bit i: operand i is the item's host scalar
  uint8_t device_scalar_mask;  // bit i: operand i is one device element, read for every element
  std::vector<Item> items;

  void operator()(mlu::TaskContext&) const {
    k::Operand operands[4];
    for (const Item& item : items) {
      k::Shape shape;
      shape.ndim = 1;
      shape.sizes[0] = item.numel;
      for (int i = 0; i < n_operands; ++i) {
        const bool host = (host_scalar_mask >> i) & 1;
        const bool broadcast = host || ((device_scalar_mask >> i) & 1);
        operands[i].data = host ? const_cast<unsigned char*>(item.scalar) : item.data[i];
        operands[i].dtype = host ? scalar_dtype : dtype;
        operands[i].strides.v[0] = broadcast ? 0 : 1;
      }
      k::pointwise(op, dtype, shape, operands, item.params);
    }
  }
};

// What fills the input slot after the lists (if any): nothing, one host value
// per tensor (or one for all), or a one-element mlu tensor.
struct ScalarInput {
  Scalars host;
  const at::Tensor* device = nullptr;
  bool present() const { return !host.empty() || device != nullptr; }
};

// The value for tensor i of a one-or-per-tensor scalar list.
const at::Scalar& nth(Scalars s, size_t i) { return s.size() == 1 ? s[0] : s[i]; }

// A list op: `inputs` are the lists after the output (self first, unless the op only writes, as zero_), then
// `scalar` if present; `params` (one value or one per tensor) goes to the op's parameter 0 (alpha, value,
// weight, exponent).
struct ListOp {
  const char* name;
  PointwiseOp op;
  std::vector<TL> inputs;
  ScalarInput scalar = {};
  Scalars params = {};
  bool promotes_integers = false;  // the op turns integer inputs into floats
};

// Note [Foreach fast path]: whether `op` writing into lists like `self` can run as one task.
bool eligible(const ListOp& op, TL self) {
  const at::ScalarType dtype = self[0].scalar_type();
  if (self[0].device().type() != c10::DeviceType::PrivateUse1 || dtype == at::kBool) return false;
  const std::optional<k::ScalarType> type = kernel_dtype(dtype);
  if (!type || !k::pointwise_supports(op.op, *type)) return false;
  if (at::isIntegralType(dtype, /*includeBool=*/true) &&
      (op.op == PointwiseOp::Pow || op.op == PointwiseOp::PowScalar)) {
    return false;  // negative integer exponents raise, one tensor at a time
  }
  if (op.op == PointwiseOp::Sub &&
      std::any_of(op.scalar.host.begin(), op.scalar.host.end(), [](const at::Scalar& s) { return s.isBoolean(); })) {
    return false;  // subtracting a bool raises, one tensor at a time
  }
  std::vector<TL> lists{self};
  lists.insert(lists.end(), op.inputs.begin(), op.inputs.end());
  if (!at::native::can_use_fast_route(lists, op.scalar.host.empty() ? op.params : op.scalar.host,
                                      op.promotes_integers)) {
    return false;
  }
  if (op.scalar.device != nullptr) {
    const at::Tensor& s = *op.scalar.device;
    return s.device() == self[0].device() && s.dim() == 0 && s.scalar_type() == dtype;
  }
  return true;
}

// Queues `op` writing into `out` (eligible() holds) as one task.
void launch(const ListOp& op, TL out) {
  const at::ScalarType dtype = out[0].scalar_type();
  ForeachTask task{};
  task.op = op.op;
  task.dtype = *kernel_dtype(dtype);
  task.scalar_dtype = at::isFloatingType(dtype) ? k::ScalarType::Float64 : k::ScalarType::Int64;
  task.n_operands = 1 + static_cast<int>(op.inputs.size()) + (op.scalar.present() ? 1 : 0);
  TORCH_INTERNAL_ASSERT(task.n_operands == k::arity(op.op) + 1, op.name, ": operand count does not match the kernel");
  const int scalar_slot = task.n_operands - 1;
  if (!op.scalar.host.empty()) task.host_scalar_mask = static_cast<uint8_t>(1u << scalar_slot);
  if (op.scalar.device != nullptr) task.device_scalar_mask = static_cast<uint8_t>(1u << scalar_slot);
  task.items.reserve(out.size());
  for (size_t t = 0; t < out.size(); ++t) {
    if (out[t].numel() == 0) continue;
    Item item{};
    item.numel = out[t].numel();
    item.data[0] = device_ptr(out[t]);
    int slot = 1;
    for (TL list : op.inputs) item.data[slot++] = const_cast<void*>(device_ptr<const void>(list[t]));
    if (!op.scalar.host.empty()) {
      const at::Scalar& v = nth(op.scalar.host, t);
      if (task.scalar_dtype == k::ScalarType::Float64) {
        const double d = v.to<double>();
        std::memcpy(item.scalar, &d, sizeof d);
      } else {
        const int64_t i = v.to<int64_t>();
        std::memcpy(item.scalar, &i, sizeof i);
      }
    } else if (op.scalar.device != nullptr) {
      item.data[slot] = const_cast<void*>(device_ptr<const void>(*op.scalar.device));
    }
    if (!op.params.empty()) set_param(item.params, 0, nth(op.params, t));
    task.items.push_back(item);
  }
  if (task.items.empty()) return;
  c10::DeviceGuard guard(out[0].device());
  launch_kernel(out[0].device().index(), op.name, std::move(task));
}

Tensors empty_like_all(TL self) {
  Tensors out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) out.push_back(at::empty_like(t));
  return out;
}

// The out-of-place and in-place forms: one task when eligible, else PyTorch's per-tensor loop `slow`.
template <class Slow>
Tensors apply(const ListOp& op, TL self, Slow slow) {
  if (!eligible(op, self)) return slow();
  Tensors out = empty_like_all(self);
  launch(op, out);
  return out;
}
template <class Slow>
void apply_(const ListOp& op, TL self, Slow slow) {
  if (eligible(op, self)) {
    launch(op, self);
  } else {
    slow();
  }
}

// ---- binary ops: List (with alpha), Scalar, ScalarList, Tensor -----------------------------------------------------
// Each MLU_FOREACH_* macro defines the out-of-place and in-place kernels of one overload (at::native::SLOW is
// PyTorch's per-tensor loop for it).

#define MLU_FOREACH_LIST_ALPHA(fname, SLOW, OP)                              \
  Tensors fname##_list(TL self, TL other, const at::Scalar& alpha) {         \
    at::native::check_foreach_api_restrictions(self, other);                 \
    return apply({"_foreach_" #fname, OP, {self, other}, {}, {alpha}}, self, \
                 [&] { return at::native::SLOW(self, other, alpha); });      \
  }                                                                          \
  void fname##_list_(TL self, TL other, const at::Scalar& alpha) {           \
    at::native::check_foreach_api_restrictions(self, other);                 \
    apply_({"_foreach_" #fname "_", OP, {self, other}, {}, {alpha}}, self,   \
           [&] { at::native::SLOW##_(self, other, alpha); });                \
  }

#define MLU_FOREACH_LIST(fname, SLOW, OP, PROMOTES)                               \
  Tensors fname##_list(TL self, TL other) {                                       \
    at::native::check_foreach_api_restrictions(self, other);                      \
    return apply({"_foreach_" #fname, OP, {self, other}, {}, {}, PROMOTES}, self, \
                 [&] { return at::native::SLOW(self, other); });                  \
  }                                                                               \
  void fname##_list_(TL self, TL other) {                                         \
    at::native::check_foreach_api_restrictions(self, other);                      \
    apply_({"_foreach_" #fname "_", OP, {self, other}, {}, {}, PROMOTES}, self,   \
           [&] { at::native::SLOW##_(self, other); });                            \
  }

// A host scalar as the second operand (parameter 0, alpha where the op has one, is 1).
#define MLU_FOREACH_SCALAR(fname, SLOW, OP, PROMOTES)                                  \
  Tensors fname##_scalar(TL self, const at::Scalar& scalar) {                          \
    at::native::check_foreach_api_restrictions(self);                                  \
    return apply({"_foreach_" #fname, OP, {self}, {{scalar}}, {kOne}, PROMOTES}, self, \
                 [&] { return at::native::SLOW(self, scalar); });                      \
  }                                                                                    \
  void fname##_scalar_(TL self, const at::Scalar& scalar) {                            \
    at::native::check_foreach_api_restrictions(self);                                  \
    apply_({"_foreach_" #fname "_", OP, {self}, {{scalar}}, {kOne}, PROMOTES}, self,   \
           [&] { at::native::SLOW##_(self, scalar); });                                \
  }

#define MLU_FOREACH_SCALARLIST(fname, SLOW, OP, PROMOTES)                             \
  Tensors fname##_scalarlist(TL self, Scalars scalars) {                              \
    at::native::check_foreach_api_restrictions(self, scalars);                        \
    return apply({"_foreach_" #fname, OP, {self}, {scalars}, {kOne}, PROMOTES}, self, \
                 [&] { return at::native::SLOW(self, scalars); });                    \
  }                                                                                   \
  void fname##_scalarlist_(TL self, Scalars scalars) {                                \
    at::native::check_foreach_api_restrictions(self, scalars);                        \
    apply_({"_foreach_" #fname "_", OP, {self}, {scalars}, {kOne}, PROMOTES}, self,   \
           [&] { at::native::SLOW##_(self, scalars); });                              \
  }

// A one-element mlu tensor as the second operand (clip_grad_norm_'s coefficient, a tensor lr).
#define MLU_FOREACH_TENSOR_ALPHA(fname, SLOW, OP)                                     \
  Tensors fname##_tensor(TL self, const at::Tensor& other, const at::Scalar& alpha) { \
    at::native::check_foreach_api_restrictions(self);                                 \
    return apply({"_foreach_" #fname, OP, {self}, {{}, &other}, {alpha}}, self,       \
                 [&] { return at::native::SLOW(self, other, alpha); });               \
  }                                                                                   \
  void fname##_tensor_(TL self, const at::Tensor& other, const at::Scalar& alpha) {   \
    at::native::check_foreach_api_restrictions(self);                                 \
    apply_({"_foreach_" #fname "_", OP, {self}, {{}, &other}, {alpha}}, self,         \
           [&] { at::native::SLOW##_(self, other, alpha); });                         \
  }

#define MLU_FOREACH_TENSOR(fname, SLOW, OP, PROMOTES)                                \
  Tensors fname##_tensor(TL self, const at::Tensor& other) {                         \
    at::native::check_foreach_api_restrictions(self);                                \
    return apply({"_foreach_" #fname, OP, {self}, {{}, &other}, {}, PROMOTES}, self, \
                 [&] { return at::native::SLOW(self, other); });                     \
  }                                                                                  \
  void fname##_tensor_(TL self, const at::Tensor& other) {                           \
    at::native::check_foreach_api_restrictions(self);                                \
    apply_({"_foreach_" #fname "_", OP, {self}, {{}, &other}, {}, PROMOTES}, self,   \
           [&] { at::native::SLOW##_(self, other); });                               \
  }

const at::Scalar kOne = 1;

MLU_FOREACH_LIST_ALPHA(add, foreach_tensor_add_list_kernel_slow, PointwiseOp::Add)
MLU_FOREACH_SCALAR(add, foreach_tensor_add_scalar_kernel_slow, PointwiseOp::Add, false)
MLU_FOREACH_SCALARLIST(add, foreach_tensor_add_scalarlist_kernel_slow, PointwiseOp::Add, false)
MLU_FOREACH_TENSOR_ALPHA(add, foreach_tensor_add_tensor_kernel_slow, PointwiseOp::Add)
MLU_FOREACH_LIST_ALPHA(sub, foreach_tensor_sub_list_kernel_slow, PointwiseOp::Sub)
MLU_FOREACH_SCALAR(sub, foreach_tensor_sub_scalar_kernel_slow, PointwiseOp::Sub, false)
MLU_FOREACH_SCALARLIST(sub, foreach_tensor_sub_scalarlist_kernel_slow, PointwiseOp::Sub, false)
MLU_FOREACH_LIST(mul, foreach_tensor_mul_list_kernel_slow, PointwiseOp::Mul, false)
MLU_FOREACH_SCALAR(mul, foreach_tensor_mul_scalar_kernel_slow, PointwiseOp::Mul, false)
MLU_FOREACH_SCALARLIST(mul, foreach_tensor_mul_scalarlist_kernel_slow, PointwiseOp::Mul, false)
MLU_FOREACH_TENSOR(mul, foreach_tensor_mul_tensor_kernel_slow, PointwiseOp::Mul, false)
MLU_FOREACH_LIST(div, foreach_tensor_div_list_kernel_slow, PointwiseOp::Div, true)
MLU_FOREACH_SCALAR(div, foreach_tensor_div_scalar_kernel_slow, PointwiseOp::Div, true)
MLU_FOREACH_SCALARLIST(div, foreach_tensor_div_scalarlist_kernel_slow, PointwiseOp::Div, true)
MLU_FOREACH_TENSOR(div, foreach_tensor_div_tensor_kernel_slow, PointwiseOp::Div, true)
// maximum / minimum and clamp_min / clamp_max share PyTorch's loops (and NaN propagation).
MLU_FOREACH_LIST(maximum, foreach_tensor_clamp_min_list_kernel_slow, PointwiseOp::Maximum, false)
MLU_FOREACH_SCALAR(maximum, foreach_tensor_clamp_min_scalar_kernel_slow, PointwiseOp::ClampMinTensor, false)
MLU_FOREACH_SCALARLIST(maximum, foreach_tensor_clamp_min_scalarlist_kernel_slow, PointwiseOp::ClampMinTensor, false)
MLU_FOREACH_LIST(minimum, foreach_tensor_clamp_max_list_kernel_slow, PointwiseOp::Minimum, false)
MLU_FOREACH_SCALAR(minimum, foreach_tensor_clamp_max_scalar_kernel_slow, PointwiseOp::ClampMaxTensor, false)
MLU_FOREACH_SCALARLIST(minimum, foreach_tensor_clamp_max_scalarlist_kernel_slow, PointwiseOp::ClampMaxTensor, false)
MLU_FOREACH_LIST(clamp_min, foreach_tensor_clamp_min_list_kernel_slow, PointwiseOp::ClampMinTensor, false)
MLU_FOREACH_SCALAR(clamp_min, foreach_tensor_clamp_min_scalar_kernel_slow, PointwiseOp::ClampMinTensor, false)
MLU_FOREACH_SCALARLIST(clamp_min, foreach_tensor_clamp_min_scalarlist_kernel_slow, PointwiseOp::ClampMinTensor, false)
MLU_FOREACH_LIST(clamp_max, foreach_tensor_clamp_max_list_kernel_slow, PointwiseOp::ClampMaxTensor, false)
MLU_FOREACH_SCALAR(clamp_max, foreach_tensor_clamp_max_scalar_kernel_slow, PointwiseOp::ClampMaxTensor, false)
MLU_FOREACH_SCALARLIST(clamp_max, foreach_tensor_clamp_max_scalarlist_kernel_slow, PointwiseOp::ClampMaxTensor, false)
MLU_FOREACH_LIST(pow, foreach_tensor_pow_list_kernel_slow, PointwiseOp::Pow, false)

// ---- pow with a scalar exponent: PowScalar (PyTorch's special-cased exponents) as parameter 0 ----

Tensors pow_scalar(TL self, const at::Scalar& exponent) {
  at::native::check_foreach_api_restrictions(self);
  return apply({"_foreach_pow", PointwiseOp::PowScalar, {self}, {}, {exponent}}, self,
               [&] { return at::native::foreach_tensor_pow_scalar_kernel_slow(self, exponent); });
}
void pow_scalar_(TL self, const at::Scalar& exponent) {
  at::native::check_foreach_api_restrictions(self);
  apply_({"_foreach_pow_", PointwiseOp::PowScalar, {self}, {}, {exponent}}, self,
         [&] { at::native::foreach_tensor_pow_scalar_kernel_slow_(self, exponent); });
}
Tensors pow_scalarlist(TL self, Scalars exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  return apply({"_foreach_pow", PointwiseOp::PowScalar, {self}, {}, exponents}, self,
               [&] { return at::native::foreach_tensor_pow_scalarlist_kernel_slow(self, exponents); });
}
void pow_scalarlist_(TL self, Scalars exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  apply_({"_foreach_pow_", PointwiseOp::PowScalar, {self}, {}, exponents}, self,
         [&] { at::native::foreach_tensor_pow_scalarlist_kernel_slow_(self, exponents); });
}

// ---- addcmul / addcdiv: value as parameter 0 (one, one per tensor, or a CPU tensor of them) -------------------------

#define MLU_FOREACH_POINTWISE(fname, OP)                                                                      \
  Tensors fname##_scalar(TL self, TL t1, TL t2, const at::Scalar& value) {                                    \
    at::native::check_foreach_api_restrictions(self, t1, t2);                                                 \
    return apply({"_foreach_" #fname, OP, {self, t1, t2}, {}, {value}}, self,                                 \
                 [&] { return at::native::foreach_tensor_##fname##_scalar_slow(self, t1, t2, value); });      \
  }                                                                                                           \
  void fname##_scalar_(TL self, TL t1, TL t2, const at::Scalar& value) {                                      \
    at::native::check_foreach_api_restrictions(self, t1, t2);                                                 \
    apply_({"_foreach_" #fname "_", OP, {self, t1, t2}, {}, {value}}, self,                                   \
           [&] { at::native::foreach_tensor_##fname##_scalar_slow_(self, t1, t2, value); });                  \
  }                                                                                                           \
  Tensors fname##_scalarlist(TL self, TL t1, TL t2, Scalars values) {                                         \
    at::native::check_foreach_api_restrictions(self, t1, t2, values);                                         \
    return apply({"_foreach_" #fname, OP, {self, t1, t2}, {}, values}, self,                                  \
                 [&] { return at::native::foreach_tensor_##fname##_scalarlist_slow(self, t1, t2, values); }); \
  }                                                                                                           \
  void fname##_scalarlist_(TL self, TL t1, TL t2, Scalars values) {                                           \
    at::native::check_foreach_api_restrictions(self, t1, t2, values);                                         \
    apply_({"_foreach_" #fname "_", OP, {self, t1, t2}, {}, values}, self,                                    \
           [&] { at::native::foreach_tensor_##fname##_scalarlist_slow_(self, t1, t2, values); });             \
  }                                                                                                           \
  Tensors fname##_tensor(TL self, TL t1, TL t2, const at::Tensor& values) {                                   \
    return fname##_scalarlist(self, t1, t2, at::native::convert_tensor_to_scalar_list(values, self.size()));  \
  }                                                                                                           \
  void fname##_tensor_(TL self, TL t1, TL t2, const at::Tensor& values) {                                     \
    fname##_scalarlist_(self, t1, t2, at::native::convert_tensor_to_scalar_list(values, self.size()));        \
  }

MLU_FOREACH_POINTWISE(addcmul, PointwiseOp::Addcmul)
MLU_FOREACH_POINTWISE(addcdiv, PointwiseOp::Addcdiv)

// ---- lerp: a weight list (LerpTensor), one weight or one per tensor (LerpScalar's parameter 0) ----

Tensors lerp_list(TL self, TL end, TL weight) {
  at::native::check_foreach_api_restrictions(self, end, weight);
  return apply({"_foreach_lerp", PointwiseOp::LerpTensor, {self, end, weight}}, self,
               [&] { return at::native::foreach_tensor_ternary_lerp_slow(self, end, weight); });
}
void lerp_list_(TL self, TL end, TL weight) {
  at::native::check_foreach_api_restrictions(self, end, weight);
  apply_({"_foreach_lerp_", PointwiseOp::LerpTensor, {self, end, weight}}, self,
         [&] { at::native::foreach_tensor_ternary_lerp_slow_(self, end, weight); });
}
Tensors lerp_scalar(TL self, TL end, const at::Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  return apply({"_foreach_lerp", PointwiseOp::LerpScalar, {self, end}, {}, {weight}}, self,
               [&] { return at::native::foreach_tensor_lerp_list_kernel_slow(self, end, weight); });
}
void lerp_scalar_(TL self, TL end, const at::Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  apply_({"_foreach_lerp_", PointwiseOp::LerpScalar, {self, end}, {}, {weight}}, self,
         [&] { at::native::foreach_tensor_lerp_list_kernel_slow_(self, end, weight); });
}
Tensors lerp_scalarlist(TL self, TL end, Scalars weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  return apply({"_foreach_lerp", PointwiseOp::LerpScalar, {self, end}, {}, weights}, self,
               [&] { return at::native::foreach_tensor_lerp_scalarlist_kernel_slow(self, end, weights); });
}
void lerp_scalarlist_(TL self, TL end, Scalars weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  apply_({"_foreach_lerp_", PointwiseOp::LerpScalar, {self, end}, {}, weights}, self,
         [&] { at::native::foreach_tensor_lerp_scalarlist_kernel_slow_(self, end, weights); });
}

// ---- unary ops; floating-only ones promote integer lists (slow path) ----

// clang-format off
#define MLU_FOREACH_UNARY_OPS(X)                                                                             \
  X(sqrt, Sqrt, true) X(rsqrt, Rsqrt, true) X(exp, Exp, true) X(expm1, Expm1, true) X(log, Log, true)        \
  X(log1p, Log1p, true) X(log2, Log2, true) X(log10, Log10, true) X(sin, Sin, true) X(cos, Cos, true)        \
  X(tan, Tan, true) X(asin, Asin, true) X(acos, Acos, true) X(atan, Atan, true) X(sinh, Sinh, true)          \
  X(cosh, Cosh, true) X(tanh, Tanh, true) X(sigmoid, Sigmoid, true) X(erf, Erf, true) X(erfc, Erfc, true)    \
  X(lgamma, Lgamma, true) X(reciprocal, Reciprocal, true) X(frac, Frac, true) X(neg, Neg, false)             \
  X(abs, Abs, false) X(sign, Sign, false) X(floor, Floor, false) X(ceil, Ceil, false)                        \
  X(round, Round, false) X(trunc, Trunc, false)
// clang-format on

#define MLU_FOREACH_UNARY(fname, OP, PROMOTES)                                          \
  Tensors fname##_unary(TL self) {                                                      \
    at::native::check_foreach_api_restrictions(self);                                   \
    return apply({"_foreach_" #fname, PointwiseOp::OP, {self}, {}, {}, PROMOTES}, self, \
                 [&] { return at::native::foreach_tensor_##fname##_slow(self); });      \
  }                                                                                     \
  void fname##_unary_(TL self) {                                                        \
    at::native::check_foreach_api_restrictions(self);                                   \
    apply_({"_foreach_" #fname "_", PointwiseOp::OP, {self}, {}, {}, PROMOTES}, self,   \
           [&] { at::native::foreach_tensor_##fname##_slow_(self); });                  \
  }
MLU_FOREACH_UNARY_OPS(MLU_FOREACH_UNARY)

// ---- zero_ and copy_: Copy from a zero scalar, Copy from the source list ----

const at::Scalar kZero = 0;

void zero_list_(TL self) {
  at::native::check_foreach_api_restrictions(self);
  apply_({"_foreach_zero_", PointwiseOp::Copy, {}, {{kZero}}}, self,
         [&] { at::native::foreach_tensor_zero_slow_(self); });
}

void copy_list_(TL self, TL src, bool non_blocking) {
  at::native::check_foreach_api_restrictions(self, src);
  apply_({"_foreach_copy_", PointwiseOp::Copy, {src}}, self,
         [&] { at::native::foreach_tensor_copy_list_kernel_slow_(self, src, non_blocking); });
}

// ---- norm: one reduction per tensor in one task ----

struct NormTask {
  k::ReduceOp op;
  double p;
  k::ScalarType in_dtype, out_dtype;
  std::vector<std::pair<void*, void*>> runs;  // (output element, input data)
  std::vector<int64_t> numels;

  void operator()(mlu::TaskContext&) const {
    for (size_t i = 0; i < runs.size(); ++i) {
      k::Shape shape;
      shape.ndim = 1;
      shape.sizes[0] = numels[i];
      k::Operand out{runs[i].first, out_dtype, {}};
      k::Operand in{runs[i].second, in_dtype, {}};
      out.strides.v[0] = 0;
      in.strides.v[0] = 1;
      k::reduce(op, shape, out, in, p);
    }
  }
};

Tensors norm_list(TL self, const at::Scalar& ord, std::optional<at::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  const double p = ord.to<double>();
  const bool fast = self[0].device().type() == c10::DeviceType::PrivateUse1 &&
                    at::isFloatingType(self[0].scalar_type()) && kernel_dtype(self[0].scalar_type()).has_value() &&
                    at::native::can_use_fast_route({self}) && (!dtype || at::isFloatingType(*dtype)) &&
                    kernel_dtype(dtype.value_or(self[0].scalar_type())).has_value() && p > 0 &&
                    !(std::isinf(p) && std::any_of(self.begin(), self.end(), [](const at::Tensor& t) {
                        return t.numel() == 0;  // no identity: PyTorch's loop raises
                      }));
  if (!fast) return at::native::foreach_tensor_norm_slow(self, ord, dtype);
  NormTask task{};
  task.op = p == 1          ? k::ReduceOp::Norm1
            : p == 2        ? k::ReduceOp::Norm2
            : std::isinf(p) ? k::ReduceOp::AbsMax
                            : k::ReduceOp::NormP;
  task.p = p;
  task.in_dtype = *kernel_dtype(self[0].scalar_type());
  const at::ScalarType out_type = dtype.value_or(self[0].scalar_type());
  task.out_dtype = *kernel_dtype(out_type);
  Tensors out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) {
    out.push_back(at::empty({}, t.options().dtype(out_type)));
    if (t.numel() == 0) {
      out.back().zero_();
      continue;
    }
    task.runs.emplace_back(device_ptr(out.back()), const_cast<void*>(device_ptr<const void>(t)));
    task.numels.push_back(t.numel());
  }
  if (!task.runs.empty()) {
    c10::DeviceGuard guard(self[0].device());
    launch_kernel(self[0].device().index(), "_foreach_norm", std::move(task));
  }
  return out;
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ForeachOps.inc"
