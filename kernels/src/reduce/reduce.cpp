// Reduction entry points: coalesce, pick the ISA's kernels; and the
// references (one element at a time, by linear index).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "../common/dispatch.h"
#include "../common/unravel.h"
#include "accumulate.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "reduce_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

namespace ro = reduce_ops;

const detail::ReduceKernels& active() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT(reduce_kernels)();
}

// Rows along the last dim must stay rows: only the outer dims coalesce.
void coalesce_outer(Shape& shape, Strides* operands[], int n) {
  if (shape.ndim <= 1) return;
  Shape outer;
  outer.ndim = shape.ndim - 1;
  int64_t last_sizes = shape.sizes[shape.ndim - 1];
  std::vector<int64_t> last(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) last[static_cast<size_t>(k)] = operands[k]->v[shape.ndim - 1];
  for (int d = 0; d < outer.ndim; ++d) outer.sizes[d] = shape.sizes[d];
  coalesce(outer, operands, n);
  shape = outer;
  shape.sizes[shape.ndim] = last_sizes;
  for (int k = 0; k < n; ++k) operands[k]->v[shape.ndim] = last[static_cast<size_t>(k)];
  ++shape.ndim;
}

template <class T>
T read(const Operand& o, int64_t offset) {
  T value{};
  detail::dispatch(o.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<S>) value = detail::convert<T>(static_cast<const S*>(o.data)[offset]);
  });
  return value;
}

template <class T>
void write(const Operand& o, int64_t offset, T value) {
  detail::dispatch(o.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<D>) static_cast<D*>(o.data)[offset] = detail::convert<D>(value);
  });
}

bool floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}

template <class Acc>
void reduce_ref_typed(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  ro::dispatch_op(op, [&](auto tag) {
    using Op = typename decltype(tag)::type;
    int64_t count = 1;
    Shape out_shape = shape;
    for (int d = 0; d < shape.ndim; ++d) {
      if (out.strides.v[d] == 0) count *= shape.sizes[d];
    }
    if (numel(shape) == 0) {
      // Empty reductions: every output (if any) gets the identity.
      for (int d = 0; d < shape.ndim; ++d) {
        if (out.strides.v[d] == 0) out_shape.sizes[d] = 1;
      }
      for (int64_t i = 0; i < numel(out_shape); ++i) {
        write(out, detail::unravel_offset(i, out_shape, out.strides), Op::finish(Op::template init<Acc>(), count, p));
      }
      return;
    }
    // One accumulator per output offset, folded in row-major input order.
    std::vector<std::pair<int64_t, Acc>> accs;
    const int64_t n = numel(shape);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = detail::unravel_offset(i, shape, out.strides);
      size_t slot = 0;
      while (slot < accs.size() && accs[slot].first != o) ++slot;
      if (slot == accs.size()) accs.push_back({o, Op::template init<Acc>()});
      accs[slot].second = Op::step(accs[slot].second, read<Acc>(in, detail::unravel_offset(i, shape, in.strides)), p);
    }
    for (const auto& [o, acc] : accs) write(out, o, Op::finish(acc, count, p));
  });
}

}  // namespace

void reduce(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  Shape s = shape;
  Operand o = out, i = in;
  Strides* strides[] = {&o.strides, &i.strides};
  coalesce(s, strides, 2);
  if (s.ndim == 0) {
    s.ndim = 1;
    s.sizes[0] = 1;
    o.strides.v[0] = 1;  // kept: one element in, one out
    i.strides.v[0] = 1;
  }
  for (int d = 0; d < s.ndim; ++d) {
    if (s.sizes[d] == 0 && o.strides.v[d] != 0) return;  // no outputs at all
  }
  detail::VerboseCall call("reduce");
  if (call) {
    call.describe(i.dtype, "op%d numel%lld ndim%d", static_cast<int>(op), static_cast<long long>(numel(s)), s.ndim);
    // Along the innermost dim (rows folded), or across it (columns folded).
    call.path(o.strides.v[s.ndim - 1] == 0 ? "rows" : "columns");
  }
  active().reduce(op, s, o, i, p);
}

void reduce_ref(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  if (floating(in.dtype)) {
    reduce_ref_typed<double>(op, shape, out, in, p);
  } else {
    reduce_ref_typed<int64_t>(op, shape, out, in, p);
  }
}

void arg_reduce(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                const Operand& in) {
  Shape s = shape;
  Operand v = values, x = indices, i = in;
  Strides* strides[] = {&v.strides, &x.strides, &i.strides};
  coalesce_outer(s, strides, 3);
  if (numel(s) == 0) return;
  active().arg_reduce(is_max, s, v, x, i);
}

void arg_reduce_ref(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                    const Operand& in) {
  const int64_t len = shape.sizes[shape.ndim - 1];
  const int64_t rows = len == 0 ? 0 : numel(shape) / len;
  Shape outer = shape;
  outer.ndim = shape.ndim - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t in_base = detail::unravel_offset(r, outer, in.strides);
    auto at = [&](int64_t j) {
      return floating(in.dtype) ? read<double>(in, in_base + j * in.strides.v[shape.ndim - 1])
                                : static_cast<double>(read<int64_t>(in, in_base + j * in.strides.v[shape.ndim - 1]));
    };
    int64_t best_i = 0;
    for (int64_t j = 1; j < len; ++j) {
      if (floating(in.dtype)) {
        if (ro::better(is_max, at(j), at(best_i))) best_i = j;
      } else {
        const int64_t a = read<int64_t>(in, in_base + j * in.strides.v[shape.ndim - 1]);
        const int64_t b = read<int64_t>(in, in_base + best_i * in.strides.v[shape.ndim - 1]);
        if (ro::better(is_max, a, b)) best_i = j;
      }
    }
    write<int64_t>(indices, detail::unravel_offset(r, outer, indices.strides), best_i);
    if (values.data != nullptr) {
      const int64_t src = in_base + best_i * in.strides.v[shape.ndim - 1];
      if (floating(in.dtype)) {
        write(values, detail::unravel_offset(r, outer, values.strides), read<double>(in, src));
      } else {
        write(values, detail::unravel_offset(r, outer, values.strides), read<int64_t>(in, src));
      }
    }
  }
}

// Note [One-pass statistics]
// statistics folds each span in chunks of kStatisticsChunk elements (chunks
// run on the compute threads), each into kMoments moments (reduce_isa.cpp:
// 16- and 32-bit floats in float vectors, each block's sums widened to
// double; doubles in double); the chunks' moments merge in chunk order and
// give the six statistics. The chunk size is fixed, so the result does not
// depend on the thread count.
//  - The variance is E[(x - c)^2] - E[x - c]^2 with c the span's first
//    element (0 if that is not finite): without the shift, a span whose mean
//    dwarfs its spread (a parameter update of 0.5 +- 1e-7) loses its
//    standard deviation to cancellation. The norm uses the plain sum of x^2.
//  - The folds' min / max compare plainly (vectorised), skipping NaN. Only a
//    NaN makes the sum of x^2 NaN (squares of infinities are +inf): then
//    the extremes are made NaN too.
constexpr int64_t kStatisticsChunk = 16384;

double element(const StatisticsSpan& span, int64_t i) {
  const Operand data{const_cast<void*>(span.data), span.dtype, {}};
  double x = read<double>(data, i);
  if (span.minus != nullptr) {
    x -= read<double>(Operand{const_cast<void*>(span.minus), span.dtype, {}}, i);
    if (span.dtype != ScalarType::Float64) x = static_cast<float>(x);  // the difference of floats, in float
  }
  return x;
}

void statistics(const StatisticsSpan* spans, int64_t count, double* out) {
  detail::VerboseCall call("statistics");
  if (call && count > 0) call.describe(spans[0].dtype, "spans%lld", static_cast<long long>(count));
  std::vector<std::array<double, detail::kMoments>> parts;
  for (int64_t k = 0; k < count; ++k) {
    const StatisticsSpan& span = spans[k];
    const double first = element(span, 0);
    const double shift = std::isfinite(first) ? first : 0.0;
    const int64_t chunks = (span.numel + kStatisticsChunk - 1) / kStatisticsChunk;
    parts.resize(static_cast<size_t>(chunks));
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        active().moments(span, c * kStatisticsChunk, std::min(span.numel, (c + 1) * kStatisticsChunk), shift,
                         parts[static_cast<size_t>(c)].data());
      }
    });
    double m[detail::kMoments] = {0, 0, 0, ro::highest<double>(), ro::lowest<double>()};
    for (const auto& part : parts) {
      for (int j = 0; j < 3; ++j) m[j] += part[static_cast<size_t>(j)];
      m[3] = std::min(m[3], part[3]);
      m[4] = std::max(m[4], part[4]);
    }
    const double n = static_cast<double>(span.numel);
    const double mean_shifted = m[0] / n;
    const double variance = m[1] / n - mean_shifted * mean_shifted;
    double* row = out + kStatistics * k;
    row[0] = n;
    row[1] = shift + mean_shifted;
    row[2] = std::sqrt(variance < 0 ? 0 : variance);  // not std::max: a NaN stays NaN
    row[3] = std::isnan(m[2]) ? m[2] : m[3];
    row[4] = std::isnan(m[2]) ? m[2] : m[4];
    row[5] = std::sqrt(m[2]);
  }
}

// Two passes in double: the mean, then the squared deviations from it.
void statistics_ref(const StatisticsSpan* spans, int64_t count, double* out) {
  for (int64_t k = 0; k < count; ++k) {
    const StatisticsSpan& span = spans[k];
    double sum = 0, squares = 0, low = ro::highest<double>(), high = ro::lowest<double>();
    for (int64_t i = 0; i < span.numel; ++i) {
      const double x = element(span, i);
      sum += x;
      squares += x * x;
      low = ro::min_of(low, x);
      high = ro::max_of(high, x);
    }
    const double n = static_cast<double>(span.numel);
    const double mean = sum / n;
    double deviations = 0;
    for (int64_t i = 0; i < span.numel; ++i) deviations += (element(span, i) - mean) * (element(span, i) - mean);
    double* row = out + kStatistics * k;
    row[0] = n;
    row[1] = mean;
    row[2] = std::sqrt(deviations / n);
    row[3] = low;
    row[4] = high;
    row[5] = std::sqrt(squares);
  }
}

void scan(ScanOp op, const Shape& shape, const Operand& out, const Operand& in) {
  Shape s = shape;
  Operand o = out, i = in;
  Strides* strides[] = {&o.strides, &i.strides};
  coalesce_outer(s, strides, 2);
  if (numel(s) == 0) return;
  active().scan(op, s, o, i);
}

void scan_ref(ScanOp op, const Shape& shape, const Operand& out, const Operand& in) {
  const int64_t len = shape.sizes[shape.ndim - 1];
  const int64_t rows = len == 0 ? 0 : numel(shape) / len;
  Shape outer = shape;
  outer.ndim = shape.ndim - 1;
  const int last = shape.ndim - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ib = detail::unravel_offset(r, outer, in.strides);
    const int64_t ob = detail::unravel_offset(r, outer, out.strides);
    if (floating(in.dtype)) {
      double acc = op == ScanOp::Sum ? 0 : 1;
      for (int64_t j = 0; j < len; ++j) {
        const double x = read<double>(in, ib + j * in.strides.v[last]);
        acc = op == ScanOp::Sum ? acc + x : acc * x;
        write(out, ob + j * out.strides.v[last], acc);
      }
    } else {
      int64_t acc = op == ScanOp::Sum ? 0 : 1;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t x = read<int64_t>(in, ib + j * in.strides.v[last]);
        acc = op == ScanOp::Sum ? acc + x : acc * x;
        write(out, ob + j * out.strides.v[last], acc);
      }
    }
  }
}

}  // namespace mlu::kernels
