// Reductions, arg-reductions and scans over strided views; one-pass
// statistics of dense spans.
//
// reduce: `out` and `in` share one iteration shape; `out` has stride 0 on
// every reduced dim (the TensorIterator reduction layout), so any set of dims
// reduces in one call. Accumulation is in double for floating inputs
// (Float16/BFloat16/Float32/Float64: at least as accurate as PyTorch's float
// cascade sums), in int64 for integer and bool inputs; the result is
// converted to out's dtype. NaN propagates through Max/Min (as torch.amax).
//
// arg_reduce and scan work along the LAST dim of `shape` (the caller moves
// the dim there with strides): arg_reduce writes, per row, the index of the
// first maximum (minimum) — a NaN counts as the maximum and the minimum, like
// PyTorch — and optionally the value; scan writes running sums / products.
//
// Preconditions (the caller's): outputs do not overlap inputs or each other;
// reduce's reduced dims have out stride 0; arg_reduce rows are non-empty.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"
#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

enum class ReduceOp : uint8_t {
  Sum,
  Prod,
  Mean,    // Sum / count of reduced elements
  Max,
  Min,
  AbsMax,  // inf-norm
  AbsMin,  // -inf-norm
  Norm0,   // count of non-zeros
  Norm1,
  Norm2,
  NormP,   // (sum |x|^p)^(1/p)
  All,
  Any,
};

void reduce(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p = 0);
void reduce_ref(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p = 0);

// values may have data == nullptr (argmax/argmin write indices only).
// indices are Int64. values/indices have stride 0 on the last dim.
void arg_reduce(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                const Operand& in);
void arg_reduce_ref(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                    const Operand& in);

// statistics: for each of `count` dense spans of floating elements, writes
// kStatistics doubles at out + kStatistics * k: numel, mean, standard
// deviation (population), min, max and 2-norm of its elements, or, where
// `minus` is set, of the differences data[i] - minus[i] (both of `dtype`,
// subtracted in float, or in double for Float64). One pass; sums in double
// (16- and 32-bit floats: in float over blocks of 256 elements first, as
// sum() does), the variance about the first element (Note [One-pass
// statistics] in src/reduce/reduce.cpp); a NaN makes every statistic but
// numel NaN, an Inf the norm Inf. Partial results of fixed-size chunks
// combine in a fixed order, so the bits do not depend on the thread count.
// Precondition: numel > 0.
struct StatisticsSpan {
  const void* data;
  const void* minus;  // nullptr: the statistics of data itself
  ScalarType dtype;   // Float16, BFloat16, Float32 or Float64
  int64_t numel;
};
constexpr int kStatistics = 6;
void statistics(const StatisticsSpan* spans, int64_t count, double* out);
void statistics_ref(const StatisticsSpan* spans, int64_t count, double* out);

enum class ScanOp : uint8_t { Sum, Prod };
// Accumulates in double (floating) or int64 (integer, bool), like PyTorch.
void scan(ScanOp op, const Shape& shape, const Operand& out, const Operand& in);
void scan_ref(ScanOp op, const Shape& shape, const Operand& out, const Operand& in);

}  // namespace mlu::kernels
