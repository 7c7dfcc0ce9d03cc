// The per-ISA tables of pointwise kernels: one function per (op, compute
// type), each running the linear index range [begin, end) of the iteration
// space. pointwise_isa.cpp builds a table per ISA; pointwise.cpp picks the
// table of the active ISA and splits the range over the compute threads.
#pragma once

#include "../common/isa_variants.h"
#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels::detail {

// The C++ types arithmetic runs in, one index each.
enum ComputeIndex : int {
  kComputeBool,
  kComputeUInt8,
  kComputeInt8,
  kComputeInt16,
  kComputeInt32,
  kComputeInt64,
  kComputeFloat,
  kComputeDouble,
  kNumComputeTypes,
};

// Float16 and BFloat16 compute in float; complex types have no index (-1).
int compute_index(ScalarType type);

// The kinds of the catalogue (MLU_POINTWISE_OPS) as bit sets, for the
// tables' `if constexpr (Kinds & F)`. C: complex only, no real kernel; W:
// like F here, pointwise_supports refuses its 16-bit types.
namespace kinds {
constexpr int F = 1, I = 2, B = 4, C = 0, W = F;
constexpr int FI = F | I, FIB = F | I | B, IB = I | B;
}  // namespace kinds

#define MLU_POINTWISE_COUNT(name, arity, kinds) +1
constexpr int kNumPointwiseOps = 0 MLU_POINTWISE_OPS(MLU_POINTWISE_COUNT);
#undef MLU_POINTWISE_COUNT

using PointwiseRange = void (*)(const Shape& shape, const Operand* operands,
                                const OpParams& params, int64_t begin, int64_t end);

struct PointwiseTable {
  PointwiseRange fn[kNumPointwiseOps][kNumComputeTypes];  // null: unsupported
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::PointwiseTable& pointwise_table())
