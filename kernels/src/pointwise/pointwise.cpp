// The pointwise entry points: catalogue queries, the dispatcher (coalesce,
// choose the ISA table, split over the compute threads) and the reference.
#include <string_view>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/unravel.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "complex.h"
#include "ops.h"
#include "pointwise_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace detail {

int compute_index(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return kComputeBool;
    case ScalarType::UInt8: return kComputeUInt8;
    case ScalarType::Int8: return kComputeInt8;
    case ScalarType::Int16: return kComputeInt16;
    case ScalarType::Int32: return kComputeInt32;
    case ScalarType::Int64: return kComputeInt64;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Float32: return kComputeFloat;
    case ScalarType::Float64: return kComputeDouble;
    default: return -1;
  }
}

}  // namespace detail

namespace {

struct OpInfo {
  const char* name;
  int arity;
  bool wide_floats_only;  // kinds W
};

constexpr OpInfo kOps[] = {
#define MLU_POINTWISE_INFO(name, arity, kinds) {#name, arity, std::string_view(#kinds) == "W"},
    MLU_POINTWISE_OPS(MLU_POINTWISE_INFO)
#undef MLU_POINTWISE_INFO
};

const detail::PointwiseTable& active_table() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT_BF16(pointwise_table)();
}

// Below this many elements a kernel runs on one thread: waking the pool
// costs more than it saves.
constexpr int64_t kParallelGrain = 32768;

// Whether `op` over the coalesced operands is neg or abs from a contiguous
// Float16/BFloat16 tensor into a contiguous one of the same dtype.
bool sign_bit_op(PointwiseOp op, const Shape& s, const Operand* operands) {
  const ScalarType type = operands[0].dtype;
  return (op == PointwiseOp::Neg || op == PointwiseOp::Abs) &&
         (type == ScalarType::Float16 || type == ScalarType::BFloat16) && operands[1].dtype == type &&
         s.ndim == 1 && operands[0].strides.v[0] == 1 && operands[1].strides.v[0] == 1;
}

}  // namespace

int arity(PointwiseOp op) { return kOps[static_cast<int>(op)].arity; }

const char* pointwise_name(PointwiseOp op) { return kOps[static_cast<int>(op)].name; }

namespace {
bool is_complex_type(ScalarType type) {
  return type == ScalarType::ComplexFloat || type == ScalarType::ComplexDouble;
}
}  // namespace

bool pointwise_supports(PointwiseOp op, ScalarType compute) {
  if (is_complex_type(compute)) return detail::complex_supports(op);
  if ((compute == ScalarType::Float16 || compute == ScalarType::BFloat16) &&
      kOps[static_cast<int>(op)].wide_floats_only) {
    return false;
  }
  const int index = detail::compute_index(compute);
  return index >= 0 && isa_baseline::pointwise_table().fn[static_cast<int>(op)][index] != nullptr;
}

void pointwise(PointwiseOp op, ScalarType compute, const Shape& shape, const Operand* operands,
               const OpParams& params) {
  const int n_operands = arity(op) + 1;
  Shape s = shape;
  Operand local[4];
  Strides* strides[4];
  for (int k = 0; k < n_operands; ++k) {
    local[k] = operands[k];
    strides[k] = &local[k].strides;
  }
  coalesce(s, strides, n_operands);
  if (s.ndim == 0) {
    s.ndim = 1;
    s.sizes[0] = 1;
    for (int k = 0; k < n_operands; ++k) local[k].strides.v[0] = 0;
  }
  const int64_t n = numel(s);
  if (n == 0) return;
  detail::VerboseCall call("pointwise", detail::VerboseCall::Nested::Quiet);
  if (call) call.describe(compute, "%s n%lld ndim%d", kOps[static_cast<int>(op)].name, static_cast<long long>(n), s.ndim);
  if (is_complex_type(compute)) {
    call.path("complex");
    detail::complex_pointwise(op, compute, s, local, params);
    return;
  }
  if (sign_bit_op(op, s, local)) {
    call.path("sign_bit");
    // Neg/abs of a 16-bit float into its own dtype only touch the sign bit:
    // exact, and without the float round trip (CPU PyTorch's vectorised
    // kernels do the same).
    auto* out = static_cast<uint16_t*>(local[0].data);
    const auto* in = static_cast<const uint16_t*>(local[1].data);
    const bool neg = op == PointwiseOp::Neg;
    parallel_for(0, n, kParallelGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = static_cast<uint16_t>(neg ? in[i] ^ 0x8000u : in[i] & 0x7FFFu);
      }
    });
    return;
  }
  const detail::PointwiseRange fn =
      active_table().fn[static_cast<int>(op)][detail::compute_index(compute)];
  call.path(s.ndim == 1 ? "flat" : "strided");  // flat: every operand coalesced to one stride
  parallel_for(0, n, kParallelGrain,
               [&](int64_t begin, int64_t end) { fn(s, local, params, begin, end); });
}

namespace {

template <class T>
T load_element(const Operand& operand, int64_t offset) {
  T value{};
  detail::dispatch(operand.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    value = detail::convert<T>(static_cast<const S*>(operand.data)[offset]);
  });
  return value;
}

template <class R>
void store_element(const Operand& operand, int64_t offset, R value) {
  detail::dispatch(operand.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    static_cast<D*>(operand.data)[offset] = detail::convert<D>(value);
  });
}

template <class Op, class T, int N>
void reference(const Shape& shape, const Operand* operands, const OpParams& p) {
  const int64_t n = numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    T in[3] = {};
    for (int k = 0; k < N; ++k) {
      in[k] = load_element<T>(operands[k + 1],
                              detail::unravel_offset(i, shape, operands[k + 1].strides));
    }
    const int64_t out = detail::unravel_offset(i, shape, operands[0].strides);
    if constexpr (N == 1) {
      store_element(operands[0], out, Op::template f<T>(p, in[0]));
    } else if constexpr (N == 2) {
      store_element(operands[0], out, Op::template f<T>(p, in[0], in[1]));
    } else {
      store_element(operands[0], out, Op::template f<T>(p, in[0], in[1], in[2]));
    }
  }
}

using namespace detail::kinds;  // the catalogue's kinds tokens

template <class Op, int N, int Kinds>
void reference_for(ScalarType compute, const Shape& shape, const Operand* operands,
                   const OpParams& p) {
  using namespace detail;
  switch (compute_index(compute)) {
    case kComputeBool:
      if constexpr (Kinds & B) reference<Op, bool, N>(shape, operands, p);
      break;
    case kComputeUInt8:
      if constexpr (Kinds & I) reference<Op, uint8_t, N>(shape, operands, p);
      break;
    case kComputeInt8:
      if constexpr (Kinds & I) reference<Op, int8_t, N>(shape, operands, p);
      break;
    case kComputeInt16:
      if constexpr (Kinds & I) reference<Op, int16_t, N>(shape, operands, p);
      break;
    case kComputeInt32:
      if constexpr (Kinds & I) reference<Op, int32_t, N>(shape, operands, p);
      break;
    case kComputeInt64:
      if constexpr (Kinds & I) reference<Op, int64_t, N>(shape, operands, p);
      break;
    case kComputeFloat:
      if constexpr (Kinds & F) reference<Op, float, N>(shape, operands, p);
      break;
    case kComputeDouble:
      if constexpr (Kinds & F) reference<Op, double, N>(shape, operands, p);
      break;
    default: break;
  }
}

}  // namespace

void pointwise_ref(PointwiseOp op, ScalarType compute, const Shape& shape,
                   const Operand* operands, const OpParams& params) {
  if (is_complex_type(compute)) {  // the complex kernel is scalar already
    detail::complex_pointwise(op, compute, shape, operands, params);
    return;
  }
  switch (op) {
#define MLU_POINTWISE_REF(name, arity, kinds) \
  case PointwiseOp::name:                     \
    reference_for<ops::name, arity, kinds>(compute, shape, operands, params); \
    break;
    MLU_POINTWISE_OPS(MLU_POINTWISE_REF)
#undef MLU_POINTWISE_REF
  }
}

}  // namespace mlu::kernels
