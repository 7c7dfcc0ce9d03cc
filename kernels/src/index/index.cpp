#include "mlu_kernels/index.h"

#include <algorithm>
#include <cstring>
#include <bit>
#include <memory>
#include <type_traits>
#include <vector>

#include "../common/bad_index.h"
#include "../common/convert.h"
#include "../common/dispatch.h"
#include "index_table.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

constexpr int64_t kGrain = 16384;

// The shape with `dim` moved last, so a row runs along the indexed dim.
struct Rows {
  Shape outer;
  int64_t len;
};

template <int N>
Rows move_dim_last(const Shape& shape, int dim, Strides* (&strides)[N]) {
  Rows rows;
  rows.outer.ndim = 0;
  int64_t last[N];
  for (int k = 0; k < N; ++k) last[k] = shape.ndim == 0 ? 0 : strides[k]->v[dim];
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == dim) continue;
    rows.outer.sizes[rows.outer.ndim] = shape.sizes[d];
    for (int k = 0; k < N; ++k) strides[k]->v[rows.outer.ndim] = strides[k]->v[d];
    ++rows.outer.ndim;
  }
  rows.len = shape.ndim == 0 ? 1 : shape.sizes[dim];
  for (int k = 0; k < N; ++k) strides[k]->v[kMaxDims - 1] = last[k];  // the row stride
  return rows;
}

template <int N>
void row_offsets(const Shape& outer, Strides* const (&strides)[N], int64_t row, int64_t (&offsets)[N]) {
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = outer.ndim - 1; d >= 0; --d) {
    const int64_t i = row % outer.sizes[d];
    row /= outer.sizes[d];
    for (int k = 0; k < N; ++k) offsets[k] += i * strides[k]->v[d];
  }
}

using detail::BadIndex;

template <class I>
int64_t index_at(const void* base, int64_t offset) {
  return static_cast<int64_t>(static_cast<const I*>(base)[offset]);
}

// The active ISA's row routines (index_isa.cpp).
const detail::IndexKernels& active_kernels() { return MLU_KERNELS_ACTIVE_ISA_VARIANT(index_kernels)(); }

template <class F>
void dispatch_index(ScalarType type, F&& f) {
  if (type == ScalarType::Int32) {
    f(std::type_identity<int32_t>{});
  } else {
    f(std::type_identity<int64_t>{});
  }
}

// index_select / embedding: the index varies along `dim` only, so each index
// value moves a whole slice (all other dims): one strided copy per value,
// values split over the threads. Generic gathers walk element by element.
bool index_is_one_dim(const Shape& shape, int dim, const Operand& index) {
  for (int d = 0; d < shape.ndim; ++d) {
    if (d != dim && shape.sizes[d] > 1 && index.strides.v[d] != 0) return false;
  }
  return shape.ndim > 1;
}

// Whether both operands lay `shape` out row-major without gaps (coalescing leaves one unit-stride dim).
bool both_row_major(Shape shape, Strides a, Strides b) {
  Strides* operands[2] = {&a, &b};
  coalesce(shape, operands, 2);
  return shape.ndim == 0 || (shape.ndim == 1 && a.v[0] == 1 && b.v[0] == 1);
}

// The iteration space without `dim` (a slice), with two operands' strides.
struct Slice {
  Shape shape;
  Strides a{}, b{};
};

Slice drop_dim(const Shape& shape, int dim, const Strides& a, const Strides& b) {
  Slice s;
  s.shape.ndim = 0;
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == dim) continue;
    s.shape.sizes[s.shape.ndim] = shape.sizes[d];
    s.a.v[s.shape.ndim] = a.v[d];
    s.b.v[s.shape.ndim] = b.v[d];
    ++s.shape.ndim;
  }
  return s;
}

IndexCheck gather_slices(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                         const Operand& index) {
  const Slice sl = drop_dim(shape, dim, out.strides, in.strides);
  const Shape& rest = sl.shape;
  const Strides &out_rest = sl.a, &in_rest = sl.b;
  const int64_t slice = numel(rest);
  const int64_t esize = static_cast<int64_t>(element_size(out.dtype));
  // Row-major slices on both sides (index_select of rows, embedding): one memcpy per value, not a strided copy
  // that re-plans its loops for every slice.
  const bool dense = out.dtype == in.dtype && both_row_major(rest, out_rest, in_rest);
  BadIndex bad;
  dispatch_index(index.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    parallel_for(0, shape.sizes[dim], std::max<int64_t>(1, kGrain / std::max<int64_t>(slice, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t j = b; j < e; ++j) {
                     const int64_t i = index_at<I>(index.data, j * index.strides.v[dim]);
                     if (i < 0 || i >= dim_size) {
                       bad.report(i);
                       continue;
                     }
                     char* to = static_cast<char*>(out.data) + j * out.strides.v[dim] * esize;
                     const char* from = static_cast<const char*>(in.data) + i * in.strides.v[dim] * esize;
                     if (dense) {
                       std::memcpy(to, from, static_cast<size_t>(slice * esize));
                     } else {
                       copy(to, out.dtype, out_rest, from, in.dtype, in_rest, rest);
                     }
                   }
                 });
  });
  return bad.check();
}

}  // namespace

IndexCheck gather(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                  const Operand& index) {
  detail::VerboseCall call("gather");
  if (call) call.describe(out.dtype, "n%lld dim%d", detail::lld(numel(shape)), dim);
  if (index_is_one_dim(shape, dim, index)) return gather_slices(shape, dim, out, in, dim_size, index);
  Strides so = out.strides, si = in.strides, sx = index.strides;
  Strides* strides[3] = {&so, &si, &sx};
  const Rows rows = move_dim_last(shape, dim, strides);
  const int64_t n_rows = numel(rows.outer);
  if (n_rows == 0 || rows.len == 0) return {};
  const int64_t ro = so.v[kMaxDims - 1], ri = si.v[kMaxDims - 1], rx = sx.v[kMaxDims - 1];
  const detail::IndexKernels& kernels = active_kernels();
  BadIndex bad;
  dispatch_index(index.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    detail::dispatch_bits(element_size(out.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Contiguous rows: Note [Vector gathers] or Note [Check, then copy] (index_isa.cpp).
      const detail::GatherRow gather_row = kernels.gather_row[std::countr_zero(sizeof(T))][sizeof(I) == 8];
      T* dst = static_cast<T*>(out.data);
      const T* src = static_cast<const T*>(in.data);
      parallel_for(0, n_rows, std::max<int64_t>(1, kGrain / rows.len), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t off[3];
          row_offsets(rows.outer, strides, r, off);
          // Locals and restrict: the stores cannot change the bounds or
          // strides, so the loop keeps them in registers.
          T* __restrict d = dst + off[0];
          const T* __restrict from = src + off[1];
          const I* __restrict idx = static_cast<const I*>(index.data) + off[2];
          const int64_t len = rows.len, size = dim_size, so = ro, si = ri, sx = rx;
          bool any_bad = size == 0 && len > 0;  // an empty dim: every index is out of range
          if (size == 0) {
          } else if (so == 1 && si == 1 && sx == 1) {  // the common case
            any_bad = gather_row(d, from, idx, len, size);
          } else {
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = static_cast<int64_t>(idx[j * sx]);
              const bool ok = (i >= 0) & (i < size);
              any_bad |= !ok;
              d[j * so] = from[(ok ? i : 0) * si];
            }
          }
          if (any_bad) {  // rare: find a bad value to report (its element got in[row start])
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = static_cast<int64_t>(idx[j * sx]);
              if (i < 0 || i >= size) bad.report(i);
            }
          }
        }
      });
    });
  });
  return bad.check();
}

namespace {

// One scatter update of d with v (alpha scales Add).
template <ScatterOp Op, class T, class Acc>
inline void scatter_element(T& d, T from, Acc alpha) {
  if constexpr (Op == ScatterOp::Assign) {
    d = from;
  } else {
    const Acc v = detail::widen(from), cur = detail::widen(d);
    if constexpr (std::is_same_v<T, bool>) {
      d = Op == ScatterOp::Add ? (cur || v) : Op == ScatterOp::Mul ? (cur && v)
        : Op == ScatterOp::Max ? (cur || v) : (cur && v);
    } else if constexpr (Op == ScatterOp::Add) {
      d = detail::convert<T>(static_cast<Acc>(cur + alpha * v));
    } else if constexpr (Op == ScatterOp::Mul) {
      d = detail::convert<T>(static_cast<Acc>(cur * v));
    } else if constexpr (Op == ScatterOp::Max) {
      d = detail::convert<T>((v != v || v > cur) ? v : cur);
    } else {
      d = detail::convert<T>((v != v || v < cur) ? v : cur);
    }
  }
}

template <class F>
void dispatch_scatter(ScatterOp op, F&& f) {
  switch (op) {
    case ScatterOp::Assign: f(std::integral_constant<ScatterOp, ScatterOp::Assign>{}); break;
    case ScatterOp::Add: f(std::integral_constant<ScatterOp, ScatterOp::Add>{}); break;
    case ScatterOp::Mul: f(std::integral_constant<ScatterOp, ScatterOp::Mul>{}); break;
    case ScatterOp::Max: f(std::integral_constant<ScatterOp, ScatterOp::Max>{}); break;
    case ScatterOp::Min: f(std::integral_constant<ScatterOp, ScatterOp::Min>{}); break;
  }
}

// Calls f(index tag, element tag, op constant, alpha as the arithmetic
// type) for a scatter's index type, real element type and op.
template <class F>
void dispatch_scatter_kernel(ScatterOp op, ScalarType index_type, ScalarType type, double alpha, F&& f) {
  dispatch_index(index_type, [&](auto itag) {
    detail::dispatch(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!detail::is_complex_v<T>) {
        using Acc = decltype(detail::widen(T{}));
        dispatch_scatter(op, [&](auto op_tag) { f(itag, tag, op_tag, static_cast<Acc>(alpha)); });
      }
    });
  });
}

// Note [Scatter accumulation in float]
// The CPU accumulates Float16 / BFloat16 scatter_add, scatter_reduce
// (sum, prod) and index_add in float and rounds once at the end, so an
// element hit by several indices does not round after every update (11.9375
// - 1.09375 - 12.1875 in bfloat16: -1.3125 rounded once, -1.34375 step by
// step). These scatters keep float accumulators for the elements they touch:
// loaded before the first update, stored (rounded) after the last, updates
// in index order in between.
template <class T, ScatterOp Op>
inline constexpr bool kAccumulatesInFloat =
    (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) && (Op == ScatterOp::Add || Op == ScatterOp::Mul);

// Calls update(j, i) for each position j < len of a 1-D index (elements
// index_dim apart) whose value i lies in [0, dim_size), in index order;
// reports the others.
template <class I, class Update>
inline void for_each_position(const void* index, int64_t index_dim, int64_t len, int64_t dim_size, BadIndex& bad,
                              Update&& update) {
  for (int64_t j = 0; j < len; ++j) {
    const int64_t i = index_at<I>(index, j * index_dim);
    if (i < 0 || i >= dim_size) {
      bad.report(i);
      continue;
    }
    update(j, i);
  }
}

// The active ISA's update of a contiguous float / double slice (index_isa.cpp).
template <ScatterOp Op, class T>
detail::UpdateSlice<T> update_slice(const detail::IndexKernels& kernels) {
  static_assert(Op == ScatterOp::Add || Op == ScatterOp::Mul);
  constexpr int op = Op == ScatterOp::Add ? 0 : 1;
  if constexpr (std::is_same_v<T, float>) {
    return kernels.update_float[op];
  } else {
    return kernels.update_double[op];
  }
}

// The active ISA's float-row steps for Half / BFloat16 (index_isa.cpp).
template <class T>
const detail::FloatRowFns<T>& float_row_fns(const detail::IndexKernels& kernels) {
  if constexpr (std::is_same_v<T, Half>) {
    return kernels.half;
  } else {
    return kernels.bfloat16;
  }
}

// Of those, Note [Scatter updates from a float row] on unit strides.
template <ScatterOp Op, class I, class T>
detail::PrepareUpdates<I, T> contiguous_updates(const detail::FloatRowFns<T>& fns) {
  static_assert(Op == ScatterOp::Add || Op == ScatterOp::Mul);
  constexpr int op = Op == ScatterOp::Add ? 0 : 1;
  if constexpr (std::is_same_v<I, int32_t>) {
    return fns.prepare_int32[op];
  } else {
    return fns.prepare_int64[op];
  }
}

// The in-range positions j of a 1-D index (len values, `step` apart) as
// (value, j), by value then j; out-of-range values are reported.
template <class I>
std::vector<std::pair<int64_t, int64_t>> sorted_positions(const void* index, int64_t step, int64_t len,
                                                          int64_t dim_size, BadIndex& bad) {
  std::vector<std::pair<int64_t, int64_t>> sorted;
  sorted.reserve(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j) {
    const int64_t i = index_at<I>(index, j * step);
    if (i < 0 || i >= dim_size) {
      bad.report(i);
      continue;
    }
    sorted.emplace_back(i, j);
  }
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// index_add / index_copy (the index varies along `dim` only): each index
// value updates a whole slice. Threads split the slice, not the index, so
// every element sees its updates in index order (deterministic) and a thread
// walks contiguous spans. Returns false, doing nothing, when the slice does
// not coalesce to one dim (the caller takes the generic path).
bool scatter_slices(ScatterOp op, const Shape& shape, int dim, const Operand& self, int64_t dim_size,
                    const Operand& src, const Operand& index, double alpha, bool round_each_update, BadIndex& bad) {
  Slice sl = drop_dim(shape, dim, self.strides, src.strides);
  Shape& rest = sl.shape;
  Strides &self_rest = sl.a, &src_rest = sl.b;
  Strides* rest_strides[2] = {&self_rest, &src_rest};
  coalesce(rest, rest_strides, 2);
  if (rest.ndim > 1) return false;
  const int64_t slice = rest.ndim == 0 ? 1 : rest.sizes[0];
  const int64_t ds = rest.ndim == 0 ? 0 : self_rest.v[0], vs = rest.ndim == 0 ? 0 : src_rest.v[0];
  const int64_t len = shape.sizes[dim];
  const int64_t self_dim = self.strides.v[dim], src_dim = src.strides.v[dim], index_dim = index.strides.v[dim];
  dispatch_scatter_kernel(op, index.dtype, self.dtype, alpha, [&](auto itag, auto tag, auto op_tag, auto a) {
    using I = typename decltype(itag)::type;
    using T = typename decltype(tag)::type;
    constexpr ScatterOp kOp = decltype(op_tag)::value;
    T* dst = static_cast<T*>(self.data);
    const T* from = static_cast<const T*>(src.data);
    const int64_t grain = std::max<int64_t>(256, kGrain / std::max<int64_t>(len, 1));
    if constexpr (detail::is_floating_v<T> && (kOp == ScatterOp::Add || kOp == ScatterOp::Mul)) {
      // Sums and products of floating slices run on the pointwise engine (per
      // ISA, converting in registers), one slice (span) per index position.
      const PointwiseOp pointwise_op = kOp == ScatterOp::Add ? PointwiseOp::Add : PointwiseOp::Mul;
      OpParams params;
      params.f[0] = alpha;
      Strides dst_step{}, src_step{}, unit{};
      dst_step.v[0] = ds;
      src_step.v[0] = vs;
      unit.v[0] = 1;
      if (kAccumulatesInFloat<T, kOp> && !round_each_update) {
        const auto sorted = sorted_positions<I>(index.data, index_dim, len, dim_size, bad);
        std::vector<size_t> group;  // where each value's positions start in `sorted`, then the end
        for (size_t n = 0; n < sorted.size(); ++n) {
          if (n == 0 || sorted[n].first != sorted[n - 1].first) group.push_back(n);
        }
        const int64_t groups = static_cast<int64_t>(group.size());
        group.push_back(sorted.size());
        if (groups < static_cast<int64_t>(sorted.size())) {
          // Note [Scatter accumulation in float]: repeated values. Threads
          // split the destination slices (one per value), each updated in
          // index order through a float row: the first update reads the
          // destination, the last writes it, rounding once. A slice hit once
          // is updated in place.
          Shape whole;
          whole.ndim = 1;
          whole.sizes[0] = slice;
          parallel_for(0, groups, std::max<int64_t>(1, kGrain / std::max<int64_t>(slice, 1)),
                       [&](int64_t gb, int64_t ge) {
            std::vector<float> acc;
            for (int64_t g = gb; g < ge; ++g) {
              const size_t begin = group[static_cast<size_t>(g)], end = group[static_cast<size_t>(g) + 1];
              const Operand d{dst + sorted[begin].first * self_dim, self.dtype, dst_step};
              acc.resize(static_cast<size_t>(slice));
              const Operand row{acc.data(), ScalarType::Float32, unit};
              for (size_t n = begin; n < end; ++n) {
                const Operand ops[3] = {n + 1 == end ? d : row, n == begin ? d : row,
                                        {const_cast<T*>(from + sorted[n].second * src_dim), src.dtype, src_step}};
                pointwise(pointwise_op, ScalarType::Float32, whole, ops, params);
              }
            }
          });
          return;
        }
      }
      // Each element updated once (or rounding after every update): the
      // engine's single rounding per update is the scalar loop's.
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (slice == 1) {
          // One element per index position (a flat overlap-add, as stft's
          // backward does): the CPU's serial loop in index order, with the
          // engine's expression; a pointwise() call per element cost 8x.
          for_each_position<I>(index.data, index_dim, len, dim_size, bad, [&](int64_t j, int64_t i) {
            scatter_element<kOp>(dst[i * self_dim], from[j * src_dim], a);
          });
          return;
        }
        if (ds == 1 && vs == 1) {
          // Contiguous slices of the compute type: the engine's expression
          // (Add: d + alpha * v) inline, without a pointwise() call per slice
          // and thread: that call's fixed cost was paid once per slice
          // (timings: docs/bench_kernels.md).
          const T alpha_t = static_cast<T>(alpha);
          const detail::UpdateSlice<T> update = update_slice<kOp, T>(active_kernels());
          parallel_for(0, slice, grain, [&](int64_t b, int64_t e) {
            for_each_position<I>(index.data, index_dim, len, dim_size, bad, [&](int64_t j, int64_t i) {
              update(dst + i * self_dim + b, from + j * src_dim + b, e - b, alpha_t);
            });
          });
          return;
        }
      }
      const ScalarType compute = self.dtype == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
      parallel_for(0, slice, grain, [&](int64_t b, int64_t e) {
        Shape span;
        span.ndim = 1;
        span.sizes[0] = e - b;
        for_each_position<I>(index.data, index_dim, len, dim_size, bad, [&](int64_t j, int64_t i) {
          const Operand ops[3] = {{dst + i * self_dim + b * ds, self.dtype, dst_step},
                                  {dst + i * self_dim + b * ds, self.dtype, dst_step},
                                  {const_cast<T*>(from + j * src_dim + b * vs), src.dtype, src_step}};
          pointwise(pointwise_op, compute, span, ops, params);
        });
      });
      return;
    }
    parallel_for(0, slice, grain, [&](int64_t b, int64_t e) {
      for_each_position<I>(index.data, index_dim, len, dim_size, bad, [&](int64_t j, int64_t i) {
        T* d = dst + i * self_dim;
        const T* v = from + j * src_dim;
        for (int64_t p = b; p < e; ++p) scatter_element<kOp>(d[p * ds], v[p * vs], a);
      });
    });
  });
  return true;
}

}  // namespace

IndexCheck scatter(ScatterOp op, const Shape& shape, int dim, const Operand& self, int64_t dim_size,
                   const Operand& src, const Operand& index, double alpha, bool round_each_update) {
  detail::VerboseCall call("scatter");
  if (call) call.describe(self.dtype, "op%d n%lld dim%d", static_cast<int>(op), detail::lld(numel(shape)), dim);
  BadIndex bad;
  if (numel(shape) == 0) return {};
  if (index_is_one_dim(shape, dim, index) &&
      scatter_slices(op, shape, dim, self, dim_size, src, index, alpha, round_each_update, bad)) {
    return bad.check();
  }
  Strides ss = self.strides, sv = src.strides, sx = index.strides;
  Strides* strides[3] = {&ss, &sv, &sx};
  const Rows rows = move_dim_last(shape, dim, strides);
  const int64_t n_rows = numel(rows.outer);
  if (n_rows == 0 || rows.len == 0) return {};
  const int64_t rs = ss.v[kMaxDims - 1], rv = sv.v[kMaxDims - 1], rx = sx.v[kMaxDims - 1];
  dispatch_scatter_kernel(op, index.dtype, self.dtype, alpha, [&](auto itag, auto tag, auto op_tag, auto a) {
    using I = typename decltype(itag)::type;
    using T = typename decltype(tag)::type;
    constexpr ScatterOp kOp = decltype(op_tag)::value;
    T* dst = static_cast<T*>(self.data);
    const T* from = static_cast<const T*>(src.data);
    // Strided rows go in blocks of 64 neighbours, stepping along the indexed
    // dim for the whole block: consecutive updates then touch neighbouring
    // elements instead of one row's far-apart ones. Contiguous rows (a
    // scatter along the last dim) go one at a time. Each row sees its own
    // updates in order either way.
    const int64_t grain = std::max<int64_t>(1, kGrain / rows.len);
    if constexpr (kAccumulatesInFloat<T, kOp>) {
      if (!round_each_update) {
        // Note [Scatter accumulation in float]: a float accumulator per element
        // of the row's destination, set from the destination where an index
        // first points at it, stored back once after the row's updates.
        const detail::FloatRowFns<T>& float_rows = float_row_fns<T>(active_kernels());
        parallel_for(0, n_rows, grain, [&](int64_t b, int64_t e) {
          std::unique_ptr<float[]> acc(new float[static_cast<size_t>(dim_size)]);  // only touched ones are read
          std::unique_ptr<float[]> operand(new float[static_cast<size_t>(rows.len)]);
          const auto* idx_base = static_cast<const I*>(index.data);
          for (int64_t r = b; r < e; ++r) {
            int64_t off[3];
            row_offsets(rows.outer, strides, r, off);
            T* d = dst + off[0];
            const T* v = from + off[1];
            const I* idx = idx_base + off[2];
            auto in_range = [&](int64_t i) { return static_cast<uint64_t>(i) < static_cast<uint64_t>(dim_size); };
            // A contiguous destination row no longer than a few index rows is
            // converted whole, both ways, in vectorisable loops; the way back
            // keeps every element whose float did not change (exact, NaN
            // payloads included). Otherwise only the touched elements move.
            const bool whole_row = rs == 1 && dim_size <= 4 * rows.len;
            if (whole_row) {
              for (int64_t k = 0; k < dim_size; ++k) acc[static_cast<size_t>(k)] = detail::widen(d[k]);
            } else {
              for (int64_t j = 0; j < rows.len; ++j) {
                const int64_t i = static_cast<int64_t>(idx[j * rx]);
                if (in_range(i)) acc[static_cast<size_t>(i)] = detail::widen(d[i * rs]);
              }
            }
            {
              // Locals and restrict: the float stores could otherwise alias
              // the captured sizes, reloaded every update.
              float* __restrict into = acc.get();
              const float* __restrict by = operand.get();
              const I* __restrict at = idx;
              const int64_t len = rows.len, step_x = rx, size = dim_size;
              const bool any_bad =
                  rx == 1 && rv == 1
                      ? contiguous_updates<kOp, I>(float_rows)(at, v, len, size, a, operand.get())
                      : detail::prepare_updates<kOp>(at, step_x, v, rv, len, size, a, operand.get());
              for (int64_t j = 0; j < len; ++j) {
                const int64_t i = static_cast<int64_t>(at[j * step_x]);
                if (any_bad && static_cast<uint64_t>(i) >= static_cast<uint64_t>(size)) {
                  bad.report(i);
                  continue;
                }
                if constexpr (kOp == ScatterOp::Add) {
                  into[i] += by[j];
                } else {
                  into[i] *= by[j];
                }
              }
            }
            if (whole_row) {
              float_rows.store_row_back(d, acc.get(), dim_size);
            } else {
              for (int64_t j = 0; j < rows.len; ++j) {
                const int64_t i = static_cast<int64_t>(idx[j * rx]);
                if (in_range(i)) d[i * rs] = detail::convert<T>(acc[static_cast<size_t>(i)]);
              }
            }
          }
        });
        return;
      }
    }
    const int64_t block = rx == 1 && rv == 1 ? 1 : 64;
    parallel_for(0, n_rows, grain, [&](int64_t b, int64_t e) {
      int64_t off[64][3];
      for (int64_t r0 = b; r0 < e; r0 += block) {
        const int64_t m = std::min(block, e - r0);
        for (int64_t r = 0; r < m; ++r) row_offsets(rows.outer, strides, r0 + r, off[r]);
        if (m == 1) {
          // One row: locals and restrict keep the loop in registers.
          T* __restrict d = dst + off[0][0];
          const T* __restrict v = from + off[0][1];
          const I* __restrict idx = static_cast<const I*>(index.data) + off[0][2];
          const int64_t len = rows.len, size = dim_size, sd = rs, sv = rv, sx = rx;
          for (int64_t j = 0; j < len; ++j) {
            const int64_t i = static_cast<int64_t>(idx[j * sx]);
            if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(size)) {
              bad.report(i);
              continue;
            }
            scatter_element<kOp>(d[i * sd], v[j * sv], a);
          }
          continue;
        }
        for (int64_t j = 0; j < rows.len; ++j) {
          for (int64_t r = 0; r < m; ++r) {
            const int64_t i = index_at<I>(index.data, off[r][2] + j * rx);
            if (i < 0 || i >= dim_size) {
              bad.report(i);
              continue;
            }
            scatter_element<kOp>(dst[off[r][0] + i * rs], from[off[r][1] + j * rv], a);
          }
        }
      }
    });
  });
  return bad.check();
}

}  // namespace mlu::kernels
