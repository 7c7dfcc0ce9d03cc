// Pointwise kernels: out = op(in0, in1, in2) element by element over one
// iteration space, for every op of the catalogue below.
//
// Semantics follow PyTorch's CPU kernels: the inputs are converted to the
// op's compute type (the TensorIterator "common dtype"; Float16 and BFloat16
// compute in float, like PyTorch's opmath), the op runs in that type, and the
// result is converted to the output's dtype. Predicates and comparisons
// produce bool. Each operand may have its own dtype and strides (0 for a
// broadcast dim; negative strides are fine).
//
// Preconditions (checked by the caller, never here):
//  - `op` is supported for `compute` (pointwise_supports);
//  - operands[0] is the output, then arity(op) inputs; the output does not
//    partially overlap an input (exact aliasing, as in `x.exp_()`, is fine:
//    every element is read before it is written);
//  - Bool operands hold bytes 0 or 1.
// Integer division or remainder by zero writes 0 here; PyTorch raises, so the
// glue checks divisors of those ops (Note [Integer division by zero] in
// csrc/aten/PointwiseLaunch.cpp).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// The catalogue: X(Name, arity, kinds). kinds is where the op is defined
// for real compute types: F floating, I integer, B bool; W floating but not
// Float16 / BFloat16 (the CPU defines these for float and double only); C
// none (complex only). Which ops complex compute types have is complex_supports()'s list
// (src/pointwise/complex.cpp), whatever the kinds. The names are the
// kernels' names in profiler tables: none may parse as a mangled C++ name
// (test_pointwise.cpp's OpNamesReadAsThemselvesWhenDemangled).
// clang-format off
#define MLU_POINTWISE_OPS(X)                                          \
  /* unary, any type */                                               \
  X(Copy, 1, FIB) X(Neg, 1, FI) X(Abs, 1, FIB) X(Sign, 1, FIB) X(Signbit, 1, FIB)     \
  X(Floor, 1, FIB) X(Ceil, 1, FIB) X(Round, 1, FIB) X(Trunc, 1, FIB)  \
  X(Relu, 1, FI) X(BitwiseNot, 1, IB) X(LogicalNot, 1, FIB)           \
  X(IsNan, 1, FIB) X(IsInf, 1, FIB) X(IsFinite, 1, FIB)               \
  X(IsPosInf, 1, FIB) X(IsNegInf, 1, FIB)                             \
  X(Clamp, 1, FI) X(ClampMin, 1, FI) X(ClampMax, 1, FI)               \
  X(Threshold, 2, FI) X(PowScalar, 1, FI)                             \
  /* unary, floating */                                               \
  X(Frac, 1, F) X(RoundDecimals, 1, F) X(Reciprocal, 1, F)            \
  X(Sqrt, 1, F) X(Rsqrt, 1, F) X(Exp, 1, F) X(Exp2, 1, F)             \
  X(Expm1, 1, F) X(Log, 1, F) X(Log2, 1, F) X(Log10, 1, F)            \
  X(Log1p, 1, F) X(Sin, 1, F) X(Cos, 1, F) X(Tan, 1, F) X(Asin, 1, F) \
  X(Acos, 1, F) X(Atan, 1, F) X(Sinh, 1, F) X(Cosh, 1, F)             \
  X(Tanh, 1, F) X(Asinh, 1, F) X(Acosh, 1, F) X(Atanh, 1, F)          \
  X(Erf, 1, F) X(Erfc, 1, F) X(Erfinv, 1, F) X(Lgamma, 1, F)          \
  X(Digamma, 1, F) X(Sinc, 1, F) X(Sigmoid, 1, F) X(Logit, 1, F)      \
  X(Gelu, 1, F) X(GeluTanh, 1, F) X(Silu, 1, F) X(Mish, 1, F)         \
  X(Softplus, 1, F) X(Elu, 1, F) X(LeakyRelu, 1, F)                   \
  X(Hardsigmoid, 1, F) X(Hardswish, 1, F) X(Hardshrink, 1, F)         \
  X(Softshrink, 1, F) X(NanToNum, 1, F)                               \
  /* unary, special functions (src/pointwise/special_ops.h) */         \
  X(I0, 1, F) X(I0e, 1, F) X(I1, 1, F) X(I1e, 1, F) X(Ndtri, 1, W)     \
  X(LogNdtr, 1, W) X(Erfcx, 1, W) X(Entr, 1, F) X(Polygamma, 1, F)    \
  X(AiryAi, 1, W) X(BesselJ0, 1, W) X(BesselJ1, 1, W)                 \
  X(BesselY0, 1, W) X(BesselY1, 1, W) X(ModifiedBesselI0, 1, W)       \
  X(ModifiedBesselI1, 1, W) X(ModifiedBesselK0, 1, W)                 \
  X(ModifiedBesselK1, 1, W) X(ScaledModifiedBesselK0, 1, W)           \
  X(ScaledModifiedBesselK1, 1, W) X(SphericalBesselJ0, 1, W)          \
  /* unary, complex (Angle also floating: 0 or pi) */                 \
  X(Conj, 1, C) X(Angle, 1, F) X(Sgn, 1, C)                           \
  /* binary */                                                        \
  X(Add, 2, FIB) X(Sub, 2, FI) X(Mul, 2, FIB) X(Div, 2, F)            \
  X(DivTrunc, 2, FI) X(DivFloor, 2, FI) X(Remainder, 2, FI)           \
  X(Fmod, 2, FI) X(Pow, 2, FI) X(Maximum, 2, FIB) X(Minimum, 2, FIB)  \
  X(Fmax, 2, F) X(Fmin, 2, F) X(Atan2, 2, F) X(Hypot, 2, F)           \
  X(Copysign, 2, F) X(Nextafter, 2, F) X(Xlogy, 2, F)                 \
  X(Logaddexp, 2, F) X(Logaddexp2, 2, F) X(Heaviside, 2, FIB)         \
  X(Eq, 2, FIB) X(Ne, 2, FIB) X(Less, 2, FIB) X(LessEqual, 2, FIB)   \
  X(Greater, 2, FIB) X(GreaterEqual, 2, FIB) X(BitwiseAnd, 2, IB)     \
  X(BitwiseOr, 2, IB) X(BitwiseXor, 2, IB) X(LeftShift, 2, I)         \
  X(RightShift, 2, I) X(LogicalAnd, 2, FIB) X(LogicalOr, 2, FIB)      \
  X(LogicalXor, 2, FIB) X(Gcd, 2, I) X(Lcm, 2, I)                     \
  X(ClampMinTensor, 2, FIB) X(ClampMaxTensor, 2, FIB)                 \
  X(LerpScalar, 2, F) X(Glu, 2, F)                                    \
  /* binary, special functions (polynomials: (x, n)) */               \
  X(Igamma, 2, F) X(Igammac, 2, F) X(Zeta, 2, W) X(Xlog1py, 2, F)     \
  X(ChebyshevT, 2, W) X(ChebyshevU, 2, W) X(ChebyshevV, 2, W)         \
  X(ChebyshevW, 2, W) X(ShiftedChebyshevT, 2, W)                      \
  X(ShiftedChebyshevU, 2, W) X(ShiftedChebyshevV, 2, W)               \
  X(ShiftedChebyshevW, 2, W) X(HermiteH, 2, W) X(HermiteHe, 2, W)     \
  X(LaguerreL, 2, W) X(LegendreP, 2, W)                               \
  /* binary, real inputs to a complex result (torch.complex, polar) */ \
  X(MakeComplex, 2, C) X(Polar, 2, C)                                 \
  /* binary backward: (grad, input or result); Threshold and LeakyRelu \
     take (input, grad), the operand order of PyTorch's meta */         \
  X(ThresholdBackward, 2, FI) X(SigmoidBackward, 2, F)                \
  X(TanhBackward, 2, F) X(GeluBackward, 2, F)                         \
  X(GeluTanhBackward, 2, F) X(SiluBackward, 2, F)                     \
  X(MishBackward, 2, F) X(EluBackward, 2, F)                          \
  X(LeakyReluBackward, 2, F) X(HardtanhBackward, 2, F)                \
  X(HardsigmoidBackward, 2, F) X(HardswishBackward, 2, F)             \
  X(SoftplusBackward, 2, F) X(LogitBackward, 2, F)                    \
  X(ShrinkBackward, 2, F)                                             \
  /* ternary */                                                       \
  X(Where, 3, FIB) X(LerpTensor, 3, F) X(Addcmul, 3, FI) X(Addr, 3, F) \
  X(Addcdiv, 3, F) X(ClampTensor, 3, FIB)
// clang-format on

enum class PointwiseOp : uint16_t {
#define MLU_POINTWISE_ENUM(name, arity, kinds) name,
  MLU_POINTWISE_OPS(MLU_POINTWISE_ENUM)
#undef MLU_POINTWISE_ENUM
};

// One operand: a strided view of `dtype` elements (inputs are only read).
struct Operand {
  void* data;
  ScalarType dtype;
  Strides strides;
};

// The scalar arguments of an op, in the order listed per op in
// src/pointwise/ops.h (e.g. Add: f/i[0] = alpha; Clamp: [0] = min, [1] = max).
// Floating compute types read f[], the others i[] (the glue fills both).
// Complex compute types read f[k] + i * f_imag[k].
struct OpParams {
  double f[4] = {};
  int64_t i[4] = {};
  double f_imag[4] = {};
};

// i[0] of Nextafter, Xlogy, Xlog1py, Logit, I0e, Addr, DivTrunc, DivFloor and (floating) PowScalar: the
// storage type of a Float16 / BFloat16 result, whose rounding the CPU applies to an
// intermediate (Notes [nextafter in 16 bits], [xlogy in 16 bits], [logit in 16 bits],
// [i0e in 16 bits], [addr in 16 bits], [Division rounding in 16 bits]); 0 otherwise.
inline constexpr int64_t kStorageHalf = 1;
inline constexpr int64_t kStorageBFloat16 = 2;

// Number of inputs of `op` (1, 2 or 3).
int arity(PointwiseOp op);
// The op's name, e.g. "Exp". The string is static.
const char* pointwise_name(PointwiseOp op);
// Whether `op` is defined for inputs computed as `compute` (Float16 and
// BFloat16 count as floating). Complex compute types (ComplexFloat,
// ComplexDouble) run the arithmetic in std::complex with c10::complex's
// formulas (Note [Complex pointwise] in src/pointwise/complex.cpp); any
// operand may then be real (read with imaginary part 0) and a real output
// receives the real part (abs, angle) or a bool the predicate.
bool pointwise_supports(PointwiseOp op, ScalarType compute);

// The optimised kernel: vectorised for the best instruction set the CPU has
// (see isa.h), split over the compute threads (parallel.h).
void pointwise(PointwiseOp op, ScalarType compute, const Shape& shape,
               const Operand* operands, const OpParams& params);
// The plain scalar reference, one element at a time by linear index.
void pointwise_ref(PointwiseOp op, ScalarType compute, const Shape& shape,
                   const Operand* operands, const OpParams& params);

}  // namespace mlu::kernels
