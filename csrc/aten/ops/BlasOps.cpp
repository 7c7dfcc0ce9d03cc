// Matrix products on mlu (mlu_kernels/gemm.h): mm, bmm, addmm, baddbmm,
// addmv (and through it mv), addbmm, dot / vdot. PyTorch's meta functions
// check shapes and dtypes and size the results; the GEMM runs on the current
// stream. matmul, linear, einsum, outer, inner and tensordot are composites
// that lower to these. Integer products run natively too (the CPU's
// wrapping arithmetic), complex ones through the vendor BLAS; bool takes the
// CPU fallback.
//
// Note [addmm's self]
// addmm(self, m1, m2, beta, alpha) = beta * self + alpha * m1 @ m2 with self
// broadcast to the result: unless the result is self (in place), self is
// first copied into the result (an mlu copy, in queue order), then the GEMM
// scales it by beta; a self that is one row broadcast over the result (a
// linear layer's bias) goes to the GEMM as its bias row instead, no copy.
// beta == 0 skips the copy and the GEMM does not read the result, so NaN in
// self does not propagate (as on the CPU and CUDA).
#include <algorithm>

#include <ATen/MemoryOverlap.h>

#include <ATen/ops/add.h>
#include <ATen/ops/addbmm_native.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/addr.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <mlu_kernels/gemm.h>

#include <string_view>

#include "csrc/aten/CpuOneDnn.h"
#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using S = const at::Scalar&;

bool has_gemm(const at::Tensor& t, bool) {
  const auto type = kernel_dtype(t.scalar_type());
  return type.has_value() && k::gemm_supports(*type);
}

// The kernels take real alpha and beta; complex products with complex ones
// are composed (add_product), and a complex scalar with real tensors takes
// the CPU fallback for the CPU's error.
bool has_gemm(const at::Scalar& s, bool complex_operands) {
  return complex_operands || !s.isComplex() || s.toComplexDouble().imag() == 0;
}

bool is_complex_operand(const at::Tensor& t) { return t.defined() && t.is_complex(); }
bool is_complex_operand(const at::Scalar&) { return false; }

template <class... Ts>
bool all_have_gemm(const Ts&... ts) {
  const bool complex_operands = (is_complex_operand(ts) || ...);
  return (has_gemm(ts, complex_operands) && ...);
}

// Matrix i of a 2-D (i ignored) or 3-D tensor as a kernel view.
k::MatrixView matrix(const at::Tensor& t) {
  const int64_t d = t.dim();
  return {const_cast<void*>(device_ptr<const void>(t)), t.stride(d - 2), t.stride(d - 1)};
}

int64_t batch_stride(const at::Tensor& t) { return t.dim() == 3 ? t.stride(0) : 0; }

// result (2-D or 3-D) = beta * result + alpha * m1 @ m2, batched over dim 0
// for 3-D operands; with `bias` (a row broadcast over the result, Note
// [addmm's self]), beta * bias takes the place of beta * result.
// The operands' dtypes must agree (the kernel reads all three as one dtype);
// the checks and texts are the CPU's (some are in its impls, not its metas).
void check_dtypes(const at::Tensor& result, const at::Tensor& m1, const at::Tensor& m2) {
  if (result.dim() == 3) {
    TORCH_CHECK(m1.scalar_type() == m2.scalar_type(), "expected scalar type ", m1.scalar_type(), " but found ",
                m2.scalar_type());
  } else {
    TORCH_CHECK(m1.scalar_type() == m2.scalar_type(),
                "expected m1 and m2 to have the same dtype, but got: ", m1.dtype(), " != ", m2.dtype());
  }
  TORCH_CHECK(result.scalar_type() == m1.scalar_type(), "Expected out tensor to have dtype ", m1.dtype(), ", but got ",
              result.dtype(), " instead");
}

// Whether writing `out` may change what `in` reads (one storage, and the
// elements are not provably apart).
bool may_overlap(const at::Tensor& out, const at::Tensor& in) {
  if (!out.has_storage() || !in.has_storage() || !out.storage().is_alias_of(in.storage())) return false;
  return at::get_overlap_status(out, in) != at::MemOverlapStatus::No;
}

void launch_gemm(const char* name, const at::Tensor& result, const at::Tensor& m1_in, const at::Tensor& m2_in,
                 double beta, double alpha, const at::Tensor& bias = at::Tensor()) {
  check_dtypes(result, m1_in, m2_in);
  // The products are fallthroughs of the Conjugate and Negative keys (as on
  // the CPU, whose BLAS takes conjugation flags): a lazily conjugated or
  // negated operand arrives with its bit set, and is materialised here.
  TORCH_CHECK(!result.is_conj() && !result.is_neg(), name,
              ": an out= tensor with the conjugate or negative bit set "
              "is not supported on mlu; pass a resolved tensor (resolve_conj(), resolve_neg())");
  const at::Tensor m1 = m1_in.resolve_conj().resolve_neg();
  const at::Tensor m2 = m2_in.resolve_conj().resolve_neg();
  if (result.numel() == 0) return;
  if (may_overlap(result, m1) || may_overlap(result, m2)) {
    // The kernels' C must not overlap A or B (x.addmm_(x, x)): the product
    // goes to a scratch result, copied back in queue order.
    at::Tensor scratch =
        beta != 0 ? result.clone(at::MemoryFormat::Contiguous) : at::empty(result.sizes(), result.options());
    launch_gemm(name, scratch, m1, m2, beta, alpha, bias);
    result.copy_(scratch);
    return;
  }
  k::GemmArgs args{};
  args.dtype = require_kernel_dtype(result.scalar_type(), name);
  const int64_t d = result.dim();
  args.m = result.size(d - 2);
  args.n = result.size(d - 1);
  args.k = m1.size(-1);
  args.alpha = alpha;
  args.beta = beta;
  args.a = matrix(m1);
  args.b = matrix(m2);
  args.c = matrix(result);
  if (bias.defined()) {
    args.bias = device_ptr<const void>(bias);
    args.bias_stride = bias.stride(-1);
  }
  if (d == 3) {
    args.batch = result.size(0);
    args.batch_stride_a = batch_stride(m1);
    args.batch_stride_b = batch_stride(m2);
    args.batch_stride_c = batch_stride(result);
  }
  launch_kernel(result.device().index(), name, [=] { k::gemm(args); });
}

// self broadcast to the result as a row (a linear layer's bias): the GEMM
// takes it in place of C (kernels' Note [GEMM bias row]), no copy into the
// result first. Needs the same dtype and no overlap with the result (asked
// of self: its expansion overlaps itself, which the check cannot judge).
bool self_is_bias_row(const at::Tensor& result, const at::Tensor& self, const at::Tensor& expanded) {
  if (expanded.scalar_type() != result.scalar_type()) return false;
  for (int64_t d = 0; d + 1 < expanded.dim(); ++d) {
    if (expanded.stride(d) != 0 && expanded.size(d) != 1) return false;
  }
  return at::get_overlap_status(result, self) == at::MemOverlapStatus::No;
}

// Note [addmm's self]
void add_product(const char* name, const at::Tensor& result, const at::Tensor& self, const at::Tensor& m1,
                 const at::Tensor& m2, S beta, S alpha, bool in_place) {
  auto imaginary = [](S v) { return v.isComplex() && v.toComplexDouble().imag() != 0; };
  if (imaginary(alpha) || imaginary(beta)) {
    // Complex scalars (complex operands only: all_have_gemm): the product,
    // then alpha * product + beta * self with the complex pointwise kernels;
    // beta == 0 leaves self unread, as in the GEMM.
    at::Tensor product = at::empty_like(result, at::MemoryFormat::Contiguous);
    if (product.numel() > 0) launch_gemm(name, product, m1, m2, 0, 1);
    if (beta.toComplexDouble() == c10::complex<double>(0, 0)) {
      result.copy_(product.mul_(alpha));
    } else {
      result.copy_(at::add(self.mul(beta), product, alpha));
    }
    return;
  }
  const double b = beta.toDouble();
  if (b != 0 && !in_place && result.numel() > 0) {
    const at::Tensor expanded = self.expand(result.sizes());
    if (self_is_bias_row(result, self, expanded)) {
      launch_gemm(name, result, m1, m2, b, alpha.toDouble(), expanded);
      return;
    }
    result.copy_(expanded);
  }
  launch_gemm(name, result, m1, m2, b, alpha.toDouble());
}

// Functional, in-place and out= forms of a structured op whose impl is
// add_product(name, result, self, m1, m2, beta, alpha); the functional and
// out= forms check the devices first (the in-place ones' callers do).
template <class Meta>
at::Tensor product(const char* name, T self, T m1, T m2, S beta, S alpha) {
  check_same_device(name, {self, m1, m2});
  c10::OptionalDeviceGuard guard(m1.device());
  MLUFunctional<Meta> meta;
  meta.meta(self, m1, m2, beta, alpha);
  add_product(name, meta.output(), self, m1, m2, beta, alpha, false);
  return std::move(meta.output());
}

template <class Meta>
at::Tensor& product_(const char* name, at::Tensor& self, T m1, T m2, S beta, S alpha) {
  c10::OptionalDeviceGuard guard(m1.device());
  MLUInplace<Meta> meta(self);
  meta.meta(self, m1, m2, beta, alpha);
  add_product(name, self, self, m1, m2, beta, alpha, true);
  return self;
}

// addmm_ / baddbmm_: the device check names the in-place op.
at::Tensor& addmm_inplace_mlu(at::Tensor& self, T mat1, T mat2, S beta, S alpha) {
  check_same_device("addmm_", {self, mat1, mat2});
  at::assert_no_internal_overlap(self);  // the CPU's addmm_ refuses it too (baddbmm_ does not)
  return product_<at::meta::structured_addmm>("addmm", self, mat1, mat2, beta, alpha);
}

at::Tensor& baddbmm_inplace_mlu(at::Tensor& self, T batch1, T batch2, S beta, S alpha) {
  check_same_device("baddbmm_", {self, batch1, batch2});
  return product_<at::meta::structured_baddbmm>("baddbmm", self, batch1, batch2, beta, alpha);
}

template <class Meta>
at::Tensor& product_out(const char* name, T self, T m1, T m2, S beta, S alpha, at::Tensor& out) {
  check_same_device(name, {self, m1, m2, out});
  c10::OptionalDeviceGuard guard(m1.device());
  MLUOut<Meta> meta(out);
  meta.meta(self, m1, m2, beta, alpha);
  const at::Tensor& result = meta.maybe_get_output(0);
  add_product(name, result, self, m1, m2, beta, alpha, result.is_same(self));
  meta.finish();
  return out;
}

// mm / bmm: the product alone (beta = 0: the result is not read).
template <class Meta>
at::Tensor plain_product(const char* name, T self, T mat2) {
  check_same_device(name, {self, mat2});
  c10::OptionalDeviceGuard guard(self.device());
  MLUFunctional<Meta> meta;
  meta.meta(self, mat2);
  launch_gemm(name, meta.output(), self, mat2, 0.0, 1.0);
  return std::move(meta.output());
}

template <class Meta>
at::Tensor& plain_product_out(const char* name, T self, T mat2, at::Tensor& out) {
  check_same_device(name, {self, mat2, out});
  c10::OptionalDeviceGuard guard(self.device());
  MLUOut<Meta> meta(out);
  meta.meta(self, mat2);
  launch_gemm(name, meta.maybe_get_output(0), self, mat2, 0.0, 1.0);
  meta.finish();
  return out;
}

// m1 (n x k) @ m2 (k x 1) of 16-bit operands as float32, unrounded
// (GemmArgs::float_c).
at::Tensor float_product(const at::Tensor& m1_in, const at::Tensor& m2_in) {
  const at::Tensor m1 = m1_in.resolve_conj().resolve_neg();
  const at::Tensor m2 = m2_in.resolve_conj().resolve_neg();
  at::Tensor c = at::empty({m1.size(0), m2.size(1)}, m1.options().dtype(at::kFloat));
  if (c.numel() == 0) return c;
  k::GemmArgs args{};
  args.dtype = require_kernel_dtype(m1.scalar_type(), "addmv");
  args.m = m1.size(0);
  args.n = m2.size(1);
  args.k = m1.size(1);
  args.alpha = 1;
  args.beta = 0;
  args.a = matrix(m1);
  args.b = matrix(m2);
  args.c = matrix(c);
  args.float_c = true;
  launch_kernel(c.device().index(), "addmv", [=] { k::gemm(args); });
  return c;
}

// Note [addmv in 16 bits]
// The CPU's addmv_out_cpu runs Float16 / BFloat16 products through oneDNN
// when it takes the dtype and mat has more than 16^3 elements (mkldnn's
// checksize), which the GEMM below matches. Otherwise it calls its gemv with
// alpha and beta rounded to the 16-bit type, and the gemv rounds where the
// 16-bit arithmetic does (BlasKernel.cpp):
//  - 'n', mat column-major (stride(0) == 1, lda_cond): self scaled in 16
//    bits (scal: beta * y rounded) unless beta is 0 or 1, the products
//    alpha * x_j * mat_ij summed in float, rounded, then added to y in 16
//    bits (y += sum: the float sum is rounded before the add);
//  - 't' otherwise (mat row-major, or a contiguous copy of it): the products
//    summed in float; beta * y rounded to 16 bits, alpha * sum added in
//    float, rounded once (beta 0: alpha * sum rounded); except Float16 with
//    alpha 1 and a unit-strided vec (fp16_gemv_trans), where beta * y stays
//    in float: y = beta * y + sum, rounded once.
// The float sums come from the GEMM kernel (float_product), whose order of
// summation is its own: results can differ from the CPU's in the float sum's
// last bit, rarely in the rounded result. The empty product takes the CPU's
// shortcut: beta * self with beta rounded.
bool add_matrix_vector_16bit(const at::Tensor& result, const at::Tensor& self, const at::Tensor& mat,
                             const at::Tensor& vec, S beta, S alpha) {
  const at::ScalarType type = result.scalar_type();
  if (type != at::kHalf && type != at::kBFloat16) return false;
  if (mat.scalar_type() != type || vec.scalar_type() != type || self.scalar_type() != type || beta.isComplex() ||
      alpha.isComplex()) {
    return false;
  }
  if (result.numel() == 0) return true;
  if (mat.numel() > 16 * 16 * 16 && cpu_mkldnn_takes(type)) return false;  // oneDNN: the GEMM's rounding
  const auto to16 = [&](S v) {
    return type == at::kHalf ? static_cast<double>(v.to<at::Half>()) : static_cast<double>(v.to<at::BFloat16>());
  };
  const double a = to16(alpha), b = to16(beta);
  const at::Tensor y = self.expand({mat.size(0)});
  if (mat.numel() == 0) {
    if (beta.toDouble() == 0) {
      result.zero_();
    } else {
      result.copy_(at::mul(y, b));
    }
    return true;
  }
  const at::Tensor sum = float_product(mat, vec.unsqueeze(1)).squeeze(1);
  const auto lda_cond = [](int64_t m, int64_t n, int64_t lda) { return n == 1 || lda >= std::max<int64_t>(1, m); };
  if (mat.stride(0) == 1 && lda_cond(mat.size(0), mat.size(1), mat.stride(1))) {  // 'n'
    const at::Tensor rounded = (a == 1 ? sum : sum.mul(a)).to(type);
    if (b == 0) {
      result.copy_(rounded);
    } else {
      result.copy_(at::add(b == 1 ? y : at::mul(y, b), rounded));
    }
    return true;
  }
  if (type == at::kHalf && a == 1 && vec.stride(0) == 1) {  // 't' through fp16_gemv_trans
    if (b == 0) {
      result.copy_(sum);
    } else {
      result.copy_(at::add(b == 1 ? y.to(at::kFloat) : y.to(at::kFloat).mul(b), sum));
    }
    return true;
  }
  const at::Tensor scaled = a == 1 ? sum : sum.mul(a);  // 't'
  result.copy_(b == 0 ? scaled : at::add(at::mul(y, b).to(at::kFloat), scaled));
  return true;
}

// addmv: result (n) = beta * self + alpha * mat (n x m) @ vec (m), as a GEMM
// with one column (16-bit products as the CPU rounds them: Note [addmv in 16
// bits]).
void add_matrix_vector(const at::Tensor& result, const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                       S beta, S alpha) {
  if (add_matrix_vector_16bit(result, self, mat, vec, beta, alpha)) return;
  add_product("addmv", result.unsqueeze(1), self.dim() == 1 ? self.unsqueeze(1) : self, mat, vec.unsqueeze(1), beta,
              alpha, result.is_same(self));
}

at::Tensor addmv_mlu(T self, T mat, T vec, S beta, S alpha) {
  check_same_device("addmv", {self, mat, vec});
  c10::OptionalDeviceGuard guard(mat.device());
  MLUFunctional<at::meta::structured_addmv> meta;
  meta.meta(self, mat, vec, beta, alpha);
  add_matrix_vector(meta.output(), self, mat, vec, beta, alpha);
  return std::move(meta.output());
}

at::Tensor& addmv_inplace_mlu(at::Tensor& self, T mat, T vec, S beta, S alpha) {
  check_same_device("addmv_", {self, mat, vec});
  c10::OptionalDeviceGuard guard(mat.device());
  MLUInplace<at::meta::structured_addmv> meta(self);
  meta.meta(self, mat, vec, beta, alpha);
  add_matrix_vector(self, self, mat, vec, beta, alpha);
  return self;
}

at::Tensor& addmv_out_mlu(T self, T mat, T vec, S beta, S alpha, at::Tensor& out) {
  check_same_device("addmv", {self, mat, vec, out});
  c10::OptionalDeviceGuard guard(mat.device());
  MLUOut<at::meta::structured_addmv> meta(out);
  meta.meta(self, mat, vec, beta, alpha);
  add_matrix_vector(meta.maybe_get_output(0), self, mat, vec, beta, alpha);
  meta.finish();
  return out;
}

// dot / vdot: a 1 x 1 GEMM, checked as on the CPU.
at::Tensor dot_mlu(const char* name, T self, T other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
              "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), name,
              " : expected both vectors to have same dtype, but found ", self.scalar_type(), " and ",
              other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(), "] and src [",
              other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ", other.numel(),
              " elements respectively");
  check_same_device(name, {self, other});
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor result = at::empty({}, self.options());
  // vdot conjugates its first argument (a no-op on real dtypes).
  const at::Tensor first = std::string_view(name) == "vdot" ? self.conj() : self;
  launch_gemm(name, result.view({1, 1}), first.unsqueeze(0), other.unsqueeze(1), 0.0, 1.0);
  return result;
}

// ---- addr: beta * self + alpha * outer(vec1, vec2) ----

// build_addr_iter of the CPU's LinearAlgebra.cpp: self expanded to the
// outer product's shape (kept as it is in place), vec1 as a column.
at::TensorIterator addr_iter(at::Tensor& result, T self, T vec1, T vec2, bool in_place) {
  TORCH_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  TORCH_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  const int64_t rows = vec1.size(0), cols = vec2.size(0);
  const at::Tensor self_ = in_place ? self : self.expand({rows, cols});
  TORCH_CHECK(self_.dim() == 2, "2D tensor expected, got ", self_.dim(), "D tensor for input");
  TORCH_CHECK(self_.size(0) == rows && self_.size(1) == cols, "size mismatch, input: ", self_.sizes(),
              ", v1: ", vec1.sizes(), ", v2: ", vec2.sizes());
  return at::TensorIteratorConfig()
      .set_check_mem_overlap(true)
      .add_output(result)
      .add_owned_const_input(self_)
      .add_owned_const_input(vec1.reshape({rows, 1}))
      .add_const_input(vec2)
      .allow_cpu_scalars(true)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .build();
}

// The CPU's check_addr_scalar.
void check_addr_scalar(at::ScalarType dtype, S scalar, const char* name) {
  TORCH_CHECK(!scalar.isBoolean() || dtype == at::kBool, "Boolean ", name, " only supported for Boolean results.");
  TORCH_CHECK(at::isFloatingType(dtype) || at::isComplexType(dtype) || scalar.isIntegral(true),
              "For integral input tensors, argument ", name, " must not be a floating point number.");
}

// Floating results run the Addr kernel, which rounds where the CPU's
// addr_kernel does (Note [addr in 16 bits]); other dtypes PyTorch's
// composite math_addr, whose integer and bool results are the CPU's.
// Returns false when `iter` is not floating.
bool launch_addr(const at::TensorIterator& iter, S beta, S alpha) {
  const at::ScalarType dtype = iter.common_dtype();
  check_addr_scalar(dtype, beta, "beta");
  check_addr_scalar(dtype, alpha, "alpha");
  if (!at::isFloatingType(dtype)) return false;
  OpParams params = make_params({beta, alpha});
  params.i[0] = dtype == at::kBFloat16 ? mlu::kernels::kStorageBFloat16
                : dtype == at::kHalf   ? mlu::kernels::kStorageHalf
                                       : 0;
  TORCH_INTERNAL_ASSERT(launch_pointwise(iter, PointwiseOp::Addr, params));
  return true;
}

at::Tensor addr_mlu(T self, T vec1, T vec2, S beta, S alpha) {
  c10::OptionalDeviceGuard guard(self.device());
  at::Tensor result;
  auto iter = addr_iter(result, self, vec1, vec2, false);
  if (!launch_addr(iter, beta, alpha)) return at::native::math_addr(self, vec1, vec2, beta, alpha);
  return iter.output();
}

at::Tensor& addr_out_mlu(T self, T vec1, T vec2, S beta, S alpha, at::Tensor& out) {
  c10::OptionalDeviceGuard guard(self.device());
  auto iter = addr_iter(out, self, vec1, vec2, out.is_same(self));
  if (!launch_addr(iter, beta, alpha)) return at::native::math_addr_out(self, vec1, vec2, beta, alpha, out);
  return out;
}

// The fused FFN of the Transformer fast path: addmm, then relu or (exact) gelu in place, as the CPU does.
at::Tensor addmm_activation_mlu(T self, T mat1, T mat2, S beta, S alpha, bool use_gelu) {
  at::Tensor out = at::addmm(self, mat1, mat2, beta, alpha);
  return use_gelu ? at::gelu_(out) : at::relu_(out);
}

at::Tensor& addmm_activation_out_mlu(T self, T mat1, T mat2, S beta, S alpha, bool use_gelu, at::Tensor& out) {
  at::addmm_out(out, self, mat1, mat2, beta, alpha);
  return use_gelu ? at::gelu_(out) : at::relu_(out);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/BlasOps.inc"
