// torch._scaled_mm / _scaled_mm_v2 on mlu: float8 products with per-tensor
// or per-row scales.
//
// Note [float8 products]
// The math is the CPU's emulated path (the one every non-AMX host and every
// `_scaled_mm_v2` takes), and results equal it bit for bit where mlu's float
// GEMM equals the CPU's:
//   out = ((float(a) * scale_a) @ (float(b) * scale_b) + bias) [* 1/scale_result]
// with the operands scaled *before* the product (scaling the product instead
// differs by an ulp in most elements), the bias added in float, the
// reciprocal of scale_result applied only when out_dtype is given as
// float8_e4m3fn or float8_e5m2 (the CPU ignores it otherwise), and one final
// rounding to the output dtype. Scales stay on the device (no host sync:
// the op can be captured in a graph). The checks and their texts are the
// emulated path's. (On an AMX-INT8 host with oneDNN enabled the CPU takes
// oneDNN instead for same-dtype v1 inputs, which orders the sums
// differently and words some checks differently.) Devices are checked by
// the registration (Note [Device checks]).
#include <ATen/ops/_grouped_mm.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/native/Resize.h>

#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

using T = const at::Tensor&;
using OptT = const std::optional<at::Tensor>&;

enum class Scaling : uint8_t { TensorWise = 0, RowWise = 1 };  // at::blas::ScalingType's first two

bool tensorwise(T t, T scale) {
  return c10::isFloat8Type(t.scalar_type()) && scale.scalar_type() == at::kFloat && scale.numel() == 1;
}

bool rowwise(T t, T scale) {
  return c10::isFloat8Type(t.scalar_type()) && scale.scalar_type() == at::kFloat && scale.dim() == 2 &&
         scale.size(0) == t.size(0) && scale.size(1) == 1 && scale.is_contiguous();
}

[[noreturn]] void invalid_scaling(T a, T b, T scale_a, T scale_b) {
  TORCH_CHECK_VALUE(false,
                    "Invalid scaling configuration.\n"
                    "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.\n"
                    "- For RowWise scaling, a and b should be float8, scales should be float, scale_a should be (",
                    a.size(0), ", 1) and scale_b should be (1, ", b.size(1),
                    "), and both should be contiguous.\n"
                    "Got mat_a.dtype()=",
                    a.scalar_type(), ", scale_a.dtype()=", scale_a.scalar_type(), ", scale_a.size()=", scale_a.sizes(),
                    ", scale_a.stride()=", scale_a.strides(), ", mat_b.dtype()=", b.scalar_type(),
                    ", scale_b.dtype()=", scale_b.scalar_type(), ", scale_b.size()=", scale_b.sizes(),
                    " and scale_b.stride()=", scale_b.strides());
}

// The checks of the emulated product for its scaling, then the product
// into `out` (Note [float8 products]).
at::Tensor& scaled_product(T a, T b, T scale_a, T scale_b, OptT bias, OptT scale_result,
                           std::optional<at::ScalarType> out_dtype, Scaling scaling, at::Tensor& out) {
  TORCH_CHECK(a.dim() == 2, "mat_a must be a matrix");
  TORCH_CHECK(b.dim() == 2, "mat_b must be a matrix");
  TORCH_CHECK(a.size(1) == b.size(0), "mat_a and mat_b shapes cannot be multiplied (", a.size(0), "x", a.size(1),
              " and ", b.size(0), "x", b.size(1), ")");
  TORCH_CHECK_VALUE(c10::isFloat8Type(a.scalar_type()) && c10::isFloat8Type(b.scalar_type()),
                    "mat_a and mat_b must be fp8 types, got: ", a.scalar_type(), b.scalar_type());
  if (scaling == Scaling::TensorWise) {
    TORCH_CHECK_VALUE(scale_a.numel() == 1 && scale_a.scalar_type() == at::kFloat, "scale_a must have 1 Float element");
    TORCH_CHECK_VALUE(scale_b.numel() == 1 && scale_b.scalar_type() == at::kFloat, "scale_b must have 1 Float element");
  } else {
    TORCH_CHECK_VALUE(scale_a.dim() == 2 && scale_a.size(0) == a.size(0) && scale_a.size(1) == 1,
                      "scale_a must have shape [", a.size(0), ", 1], got [", scale_a.sizes(), "]");
    TORCH_CHECK_VALUE(scale_a.numel() == a.size(0) && scale_a.scalar_type() == at::kFloat, "scale_a must have ",
                      a.size(0), " Float elements, got ", scale_a.numel());
    TORCH_CHECK_VALUE(scale_b.numel() == b.size(1) && scale_b.scalar_type() == at::kFloat, "scale_b must have ",
                      b.size(1), " Float elements, got ", scale_b.numel());
    TORCH_CHECK_VALUE(scale_a.stride(1) == 1, "expected scale_a.stride(1) to be 1, but got ", scale_a.stride(1));
    TORCH_CHECK_VALUE(scale_b.dim() == 2 && scale_b.stride(1) == 1, "expected scale_b.stride(1) to be 1, but got ",
                      scale_b.dim() == 2 ? scale_b.stride(1) : scale_b.stride(0));
  }
  TORCH_CHECK(!scale_result || (scale_result->numel() == 1 && scale_result->scalar_type() == at::kFloat),
              "scale_result must be a float scalar");
  TORCH_CHECK(!bias || bias->numel() == b.size(1), "Bias must be size ", b.size(1), " but got ", bias->numel());
  at::native::resize_output(out, {a.size(0), b.size(1)});
  if (out.numel() == 0) return out;
  // Tensor-wise scales as 0-dim tensors: they broadcast without a host read.
  const at::Tensor sa = scaling == Scaling::TensorWise ? scale_a.reshape({}) : scale_a;
  const at::Tensor sb = scaling == Scaling::TensorWise ? scale_b.reshape({}) : scale_b;
  at::Tensor product = at::matmul(at::mul(a.to(at::kFloat), sa), at::mul(b.to(at::kFloat), sb));
  if (bias) product.add_(*bias);
  const bool float8_out = out_dtype == at::kFloat8_e4m3fn || out_dtype == at::kFloat8_e5m2;
  if (float8_out && scale_result) product.mul_(at::reciprocal(scale_result->reshape({})));
  out.copy_(product);
  return out;
}

at::Tensor& scaled_mm_out_mlu(T a, T b, T scale_a, T scale_b, OptT bias, OptT scale_result,
                              std::optional<at::ScalarType> out_dtype, bool /*use_fast_accum*/, at::Tensor& out) {
  TORCH_CHECK(a.dim() == 2, "mat1 must be a matrix");  // b's dims: b.t() below says
  TORCH_CHECK_VALUE(!out_dtype || *out_dtype == out.scalar_type(), "out_dtype must match output matrix type");
  Scaling scaling;
  if (tensorwise(a, scale_a) && tensorwise(b.t(), scale_b.dim() == 2 ? scale_b.t() : scale_b)) {
    scaling = Scaling::TensorWise;
  } else if (scale_b.dim() == 2 && rowwise(a, scale_a) && rowwise(b.t(), scale_b.t())) {
    scaling = Scaling::RowWise;
  } else {
    invalid_scaling(a, b, scale_a, scale_b);
  }
  return scaled_product(a, b, scale_a, scale_b, bias, scale_result, out_dtype, scaling, out);
}

at::Tensor scaled_mm_mlu(T a, T b, T scale_a, T scale_b, OptT bias, OptT scale_result,
                         std::optional<at::ScalarType> out_dtype, bool use_fast_accum) {
  at::Tensor out = at::empty({0}, a.options().dtype(out_dtype.value_or(a.scalar_type())));
  return scaled_mm_out_mlu(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out);
}

// _scaled_mm_v2: a list of scales and recipes per side (one of each,
// TensorWise or RowWise, float scales), no swizzle, and the product of v1
// without scale_result.
at::Tensor& scaled_mm_v2_out_mlu(T a, T b, at::TensorList scale_a, at::IntArrayRef recipe_a, at::IntArrayRef swizzle_a,
                                 at::TensorList scale_b, at::IntArrayRef recipe_b, at::IntArrayRef swizzle_b, OptT bias,
                                 std::optional<at::ScalarType> out_dtype, at::IntArrayRef contraction_dim,
                                 bool /*use_fast_accum*/, at::Tensor& out) {
  TORCH_CHECK_VALUE(a.dim() == 2, "mat_a must be a matrix");
  TORCH_CHECK_VALUE(b.dim() == 2, "mat_b must be a matrix");
  if (a.size(0) == 0 || a.size(1) == 0 || b.size(1) == 0) {
    at::native::resize_output(out, {a.size(0), b.size(1)});
    if (a.size(1) == 0) out.zero_();
    return out;
  }
  if (!contraction_dim.empty()) {
    TORCH_CHECK_VALUE(contraction_dim.size() == 2, "contraction_dim must have exactly 2 elements");
    TORCH_CHECK_VALUE(a.size(contraction_dim[0]) == b.size(contraction_dim[1]),
                      "mat_a and mat_b shapes cannot be multiplied (", a.size(0), "x", a.size(1), " and ", b.size(0),
                      "x", b.size(1), ") with contraction dims mat_a: ", contraction_dim[0],
                      ", mat_b: ", contraction_dim[1]);
  } else {
    TORCH_CHECK_VALUE(a.size(1) == b.size(0), "mat_a and mat_b shapes cannot be multiplied (", a.size(0), "x",
                      a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  }
  TORCH_CHECK_VALUE(!bias || bias->numel() == b.size(1), "Bias must be size ", b.size(1), " but got ", bias->numel());
  TORCH_CHECK_VALUE(!out_dtype || *out_dtype == out.scalar_type(), "out_dtype must match output matrix type");
  if (bias) {
    const at::ScalarType t = bias->scalar_type();
    TORCH_CHECK_VALUE(t == at::kFloat || t == at::kBFloat16 || t == at::kHalf,
                      "Bias must be Float32 or BFloat16 or Half, but got ", t);
  }
  TORCH_CHECK_VALUE(!swizzle_a.empty() && !swizzle_b.empty() && swizzle_a[0] == 0 && swizzle_b[0] == 0,
                    "CPU does not support swizzle.");
  const bool one_each = scale_a.size() == 1 && recipe_a.size() == 1 && scale_b.size() == 1 && recipe_b.size() == 1;
  const bool fp8 = c10::isFloat8Type(a.scalar_type()) && c10::isFloat8Type(b.scalar_type());
  const bool same_recipe = one_each && recipe_a[0] == recipe_b[0] &&
                           (recipe_a[0] == static_cast<int64_t>(Scaling::TensorWise) ||
                            recipe_a[0] == static_cast<int64_t>(Scaling::RowWise));
  if (!fp8 || !same_recipe || scale_a[0].scalar_type() != at::kFloat || scale_b[0].scalar_type() != at::kFloat) {
    TORCH_CHECK_VALUE(!scale_a.empty() && !scale_b.empty(), "Invalid scaling configuration.");
    invalid_scaling(a, b, scale_a[0], scale_b[0]);
  }
  // The emulated product is told out_dtype or bfloat16, so a float8 out_dtype
  // only scales by 1 (there is no scale_result).
  return scaled_product(a, b, scale_a[0], scale_b[0], bias, std::nullopt, out_dtype.value_or(at::kBFloat16),
                        static_cast<Scaling>(recipe_a[0]), out);
}

at::Tensor scaled_mm_v2_mlu(T a, T b, at::TensorList scale_a, at::IntArrayRef recipe_a, at::IntArrayRef swizzle_a,
                            at::TensorList scale_b, at::IntArrayRef recipe_b, at::IntArrayRef swizzle_b, OptT bias,
                            std::optional<at::ScalarType> out_dtype, at::IntArrayRef contraction_dim,
                            bool use_fast_accum) {
  at::Tensor out = at::empty({0}, a.options().dtype(out_dtype.value_or(a.scalar_type())));
  return scaled_mm_v2_out_mlu(a, b, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b, bias, out_dtype,
                              contraction_dim, use_fast_accum, out);
}

// Note [Scaled grouped products]
// torch._scaled_grouped_mm (float8 mixture-of-experts layers) has no CPU
// kernel; mlu follows CUDA's contract (its checks are the meta function's,
// torch/_meta_registrations.py): float8_e4m3fn operands, a row-major and b
// column-major, float32 row-wise scales, bfloat16 out, and per layout
//   2-D a x 3-D b: scale_a [M] (a's rows), scale_b [G, N];
//   3-D a x 2-D b: scale_a [G, M], scale_b [N];
//   3-D a x 3-D b: scale_a [G, M], scale_b [G, N];
//   2-D a x 2-D b (offs split K): scale_a [G * M], scale_b [G * N], group g's
//     rows of scales for the columns of a and rows of b in g.
// As in Note [float8 products] the operands are scaled in float32 first, then
// multiplied per group by the native _grouped_mm (Note [Grouped products]) and
// rounded once to bfloat16. For 2-D x 2-D the group of each k comes from offs
// on the device (the count of group ends at or below k), so the host never
// reads offs.
at::Tensor scaled_grouped_mm_mlu(T a, T b, T scale_a, T scale_b, OptT offs, OptT bias, OptT scale_result,
                                 std::optional<at::ScalarType> out_dtype, bool /*use_fast_accum*/) {
  TORCH_CHECK(a.scalar_type() == at::kFloat8_e4m3fn && b.scalar_type() == at::kFloat8_e4m3fn,
              "Expected inputs of E4M3 FP8 type but got mat_a.dtype=", a.scalar_type(),
              " and mat_b.dtype=", b.scalar_type(), ".");
  TORCH_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3),
              "Multiplicands must be 2D or 3D but got mat_a.dim()=", a.dim(), " and mat_b.dim()=", b.dim());
  TORCH_CHECK(a.stride(-2) > 1 && a.stride(-1) == 1,
              "Expected mat_a tensor to be row major in the last two dimensions, got strides ",
              a.strides().slice(a.dim() - 2));
  TORCH_CHECK(b.stride(-2) == 1 && b.stride(-1) > 1,
              "Expected mat_b tensor to be column major in the last two dimensions, got strides ",
              b.strides().slice(b.dim() - 2));
  TORCH_CHECK(scale_a.scalar_type() == at::kFloat && scale_b.scalar_type() == at::kFloat,
              "For FP8 scales must both be float32, or for MXFP8 both scales must be float8_e8m0fnu. Got "
              "scale_a.dtype=",
              scale_a.scalar_type(), " and scale_b.dtype=", scale_b.scalar_type(), ".");
  TORCH_CHECK(!scale_result, "Scale result tensor provided, but it is not supported yet.");
  TORCH_CHECK(!bias, "Bias tensor provided, but it is not supported yet.");
  TORCH_CHECK(!out_dtype || *out_dtype == at::kBFloat16, "If output dtype provided, it must be torch.bfloat16.");
  const bool a2 = a.dim() == 2, b2 = b.dim() == 2;
  TORCH_CHECK(!(a2 || b2) || offs, "Offsets tensor not provided, but is needed for ", a.dim(), "D/", b.dim(),
              "D multiplicand layouts.");
  TORCH_CHECK(a2 || b2 || !offs, "Offsets tensor provided, but is not needed for 3D/3D multiplicand layouts.");
  const int64_t groups = offs ? offs->size(0) : a.size(0);
  // The scales' expected shapes (Note [Scaled grouped products]).
  auto check_scale = [&](const char* name, T scale, T mat, int64_t scaled_dim) {
    if (mat.dim() == 2) {
      const int64_t want = mat.size(scaled_dim) * (a2 && b2 ? groups : 1);
      TORCH_CHECK(scale.is_contiguous(), "Expected ", name, " to be contiguous.");
      TORCH_CHECK(scale.dim() == 1, "Expected ", name, " to be 1D tensor, but got ", scale.dim(), "D tensor.");
      TORCH_CHECK(scale.size(0) == want, "Expected ", name, " to have ", want, " elements, got ", scale.size(0),
                  " elements.");
    } else {
      TORCH_CHECK(scale.dim() == 2, "Expected ", name, " to be 2D tensor, but got ", scale.dim(), "D tensor.");
      TORCH_CHECK(scale.stride(-1) == 1, "Expected ", name, " to be contiguous in the last dimension.");
      TORCH_CHECK(scale.size(0) == mat.size(0), "Expected ", name, " batch dimension to be ", mat.size(0), ", got ",
                  scale.size(0), ".");
      TORCH_CHECK(scale.size(1) == mat.size(1 + scaled_dim), "Expected ", name, " non-batch dimension to be ",
                  mat.size(1 + scaled_dim), ", got ", scale.size(1), ".");
    }
  };
  check_scale("scale_a", scale_a, a, 0);
  check_scale("scale_b", scale_b, b, 1);
  at::Tensor fa = a.to(at::kFloat), fb = b.to(at::kFloat);
  if (a2 && b2) {
    // Columns of a and rows of b in group g take row g of the scales.
    const int64_t m = a.size(0), n = b.size(1), k = a.size(1);
    const at::Tensor ks = at::arange(k, offs->options());
    const at::Tensor group = offs->unsqueeze(0).le(ks.unsqueeze(1)).sum(1).clamp_max(groups - 1);  // #ends <= k
    fa.mul_(scale_a.view({groups, m}).index_select(0, group).t());
    fb.mul_(scale_b.view({groups, n}).index_select(0, group));
  } else {
    fa.mul_(scale_a.unsqueeze(-1));                             // [M] or [G, M]: a's rows
    fb.mul_(b2 ? scale_b.unsqueeze(0) : scale_b.unsqueeze(1));  // [N] or [G, N]: b's columns
  }
  return at::_grouped_mm(fa, fb, offs, std::nullopt, at::kFloat).to(at::kBFloat16);
}

}  // namespace
}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/ScaledMMOps.inc"
