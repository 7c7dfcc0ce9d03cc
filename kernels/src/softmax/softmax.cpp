#include "mlu_kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "softmax_table.h"
#include "../common/unravel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

const detail::SoftmaxRows& active_rows() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT(softmax_rows)();
}

// The rows of `shape` along `dim`: `rest` indexes them, each operand's row
// starts at unravel(r, rest, strides[k]) and steps by step[k].
struct RowLayout {
  Shape rest;
  Strides strides[3];
  int64_t step[3] = {};
  int64_t len = 1;
};

RowLayout row_layout(const Shape& shape, int dim, const Operand* const* ops, int n_ops) {
  RowLayout layout;
  layout.rest.ndim = 0;
  if (shape.ndim > 0) layout.len = shape.sizes[dim];
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == dim) continue;
    const int r = layout.rest.ndim++;
    layout.rest.sizes[r] = shape.sizes[d];
    for (int k = 0; k < n_ops; ++k) layout.strides[k].v[r] = ops[k]->strides.v[d];
  }
  for (int k = 0; k < n_ops; ++k) layout.step[k] = shape.ndim > 0 ? ops[k]->strides.v[dim] : 1;
  return layout;
}

template <class T>
constexpr ScalarType kCompute = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;

// Rows per tile (Note [Softmax row tiles]).
constexpr int64_t kTile = 16;

// A tile of rows of `op` (row g starts at offsets[g], elements `step`
// apart) to and from the compute type T, rows `len` apart in `tile_data`.
// Contiguous rows (step 1) go through copy(), the per-ISA converting copies
// (F16C, AVX512-BF16), as one 2-D copy when the rows are evenly spaced;
// strided rows move element j of every row of the tile together, through a
// 16 x 16 block on the way in (Note [Softmax row tiles]).
template <class T>
void copy_rows(void* tile_data, const void* op_data, const Operand& op, bool to_tile, const int64_t* offsets,
               int64_t tile, int64_t len) {
  const int64_t spacing = tile > 1 ? offsets[1] - offsets[0] : 0;
  bool even = true;
  for (int64_t g = 2; g < tile; ++g) even &= offsets[g] - offsets[g - 1] == spacing;
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = even ? tile : 1;
  shape.sizes[1] = len;
  Strides tile_strides{}, op_strides{};
  tile_strides.v[0] = len;
  tile_strides.v[1] = 1;
  op_strides.v[0] = spacing;
  op_strides.v[1] = 1;
  const int64_t size = static_cast<int64_t>(element_size(op.dtype));
  for (int64_t g = 0; g < (even ? 1 : tile); ++g) {
    auto* rows = static_cast<unsigned char*>(tile_data) + g * len * static_cast<int64_t>(sizeof(T));
    auto* at = static_cast<const unsigned char*>(op_data) + offsets[g] * size;
    if (to_tile) {
      copy(rows, kCompute<T>, tile_strides, at, op.dtype, op_strides, shape);
    } else {
      copy(const_cast<unsigned char*>(at), op.dtype, op_strides, rows, kCompute<T>, tile_strides, shape);
    }
  }
}

template <class T>
void load_tile(T* tile_data, const Operand& op, const int64_t* offsets, int64_t tile, int64_t step, int64_t len) {
  if (step == 1) return copy_rows<T>(tile_data, op.data, op, true, offsets, tile, len);
  detail::dispatch(op.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* src = static_cast<const S*>(op.data);
      for (int64_t j0 = 0; j0 < len; j0 += kTile) {
        const int64_t span = std::min(kTile, len - j0);
        T block[kTile][kTile];
        for (int64_t j = 0; j < span; ++j) {
          const S* at = src + (j0 + j) * step;
          for (int64_t g = 0; g < tile; ++g) block[g][j] = static_cast<T>(detail::widen(at[offsets[g]]));
        }
        for (int64_t g = 0; g < tile; ++g) std::copy_n(block[g], span, tile_data + g * len + j0);
      }
    }
  });
}

template <class T>
void store_tile(const Operand& op, const int64_t* offsets, int64_t tile, int64_t step, const T* tile_data,
                int64_t len) {
  if (step == 1) return copy_rows<T>(const_cast<T*>(tile_data), op.data, op, false, offsets, tile, len);
  detail::dispatch(op.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<D>) {
      D* dst = static_cast<D*>(op.data);
      for (int64_t j = 0; j < len; ++j) {
        D* at = dst + j * step;
        for (int64_t g = 0; g < tile; ++g) at[offsets[g]] = detail::convert<D>(tile_data[g * len + j]);
      }
    }
  });
}

// Runs `row(ptrs, len)` on every row: in place on an operand that is already
// a contiguous row of T, through per-thread buffers otherwise. Operand 0 is
// written, the others read.
//
// Note [Softmax row tiles]: rows go in tiles of kTile consecutive rows, and a
// buffered operand is moved a tile at a time, element j of every row of the
// tile together. When the rows are strided (softmax over dim 0 of a
// contiguous matrix), neighbouring rows are neighbours in memory, so a tile
// reads and writes whole cache lines instead of one element per line.
template <class T, int N, class Row>
void for_each_row(const Shape& shape, int dim, const Operand* const (&ops)[N], Row&& row) {
  const RowLayout layout = row_layout(shape, dim, ops, N);
  const int64_t rows = numel(layout.rest), len = layout.len;
  if (rows == 0 || len == 0) return;
  bool direct[N];
  for (int k = 0; k < N; ++k) direct[k] = ops[k]->dtype == kCompute<T> && (layout.step[k] == 1 || len == 1);
  parallel_for(0, rows, std::max<int64_t>(kTile, 32768 / len), [&](int64_t begin, int64_t end) {
    std::vector<T> buffers[N];
    for (int k = 0; k < N; ++k) {
      if (!direct[k]) buffers[k].resize(static_cast<size_t>(kTile * len));
    }
    int64_t offset[N][kTile];
    for (int64_t r0 = begin; r0 < end; r0 += kTile) {
      const int64_t tile = std::min(kTile, end - r0);
      for (int k = 0; k < N; ++k) {
        for (int64_t g = 0; g < tile; ++g) {
          offset[k][g] = detail::unravel_offset(r0 + g, layout.rest, layout.strides[k]);
        }
      }
      for (int k = 1; k < N; ++k) {
        if (!direct[k]) load_tile(buffers[k].data(), *ops[k], offset[k], tile, layout.step[k], len);
      }
      for (int64_t g = 0; g < tile; ++g) {
        T* ptr[N];
        for (int k = 0; k < N; ++k) {
          ptr[k] = direct[k] ? static_cast<T*>(ops[k]->data) + offset[k][g] : buffers[k].data() + g * len;
        }
        row(ptr, len);
      }
      if (!direct[0]) store_tile(*ops[0], offset[0], tile, layout.step[0], buffers[0].data(), len);
    }
  });
}

// Whether the rows are done as blocks of columns (Note [Softmax by columns]):
// the softmax dim is not the innermost one, and the innermost remaining dim is
// contiguous in every operand and wide enough to fill vectors.
bool by_columns(const RowLayout& layout, int n_ops) {
  const int last = layout.rest.ndim - 1;
  if (last < 0 || layout.rest.sizes[last] < kSoftmaxMinColumns || layout.len < 2) return false;
  for (int k = 0; k < n_ops; ++k) {
    if (layout.strides[k].v[last] != 1 || layout.step[k] == 1) return false;
  }
  // A converted operand is buffered whole per block: keep that bounded.
  return layout.len <= (int64_t{1} << 16);
}

// Note [Short rows by columns]
// Rows shorter than kSoftmaxMinColumns cost a row routine call each, whose
// fixed cost dwarfs a few elements' work (a softmax over 4 classes was far
// slower than the CPU's: docs/bench_kernels.md).
// Many of them are done by columns instead, as the CPU does after making its
// input contiguous: for_each_column_block copies a span of rows, transposed,
// into per-thread buffers (rows become columns), runs the column routine and
// copies the outputs back.
bool short_rows(const RowLayout& layout) {
  const int last = layout.rest.ndim - 1;
  return last >= 0 && layout.len >= 2 && layout.len < kSoftmaxMinColumns &&
         layout.rest.sizes[last] >= kSoftmaxMinColumns;
}

template <class S>
constexpr ScalarType kStorage = std::is_same_v<S, BFloat16> ? ScalarType::BFloat16 : kCompute<S>;

// Runs `block(ptrs, steps, len, width)` on every block of up to kColumns
// columns (the innermost remaining dim), the block routine taking elements of
// type S. An operand of type S whose columns are contiguous is used in place
// (element j of column c at ptr + j * step + c); others are converted (or
// transposed, Note [Short rows by columns]) into a per-thread buffer by one
// 2-D copy() and, for operand 0, back, spans of up to 4 blocks at a time
// (about 1 MB per buffer: fewer, longer rows for copy()). Operand 0 is
// written, the others read.
template <class S, int N, class Block>
void for_each_column_block(const RowLayout& layout, const Operand* const (&ops)[N], Block&& block) {
  constexpr int64_t kCols = detail::kColumns;
  const int last = layout.rest.ndim - 1;
  const int64_t inner = layout.rest.sizes[last], len = layout.len;
  Shape outer = layout.rest;
  outer.ndim = last;
  bool direct[N], all_direct = true;
  for (int k = 0; k < N; ++k) {
    all_direct &= direct[k] = ops[k]->dtype == kStorage<S> && layout.strides[k].v[last] == 1;
  }
  const int64_t fit = (int64_t{1} << 20) / (len * static_cast<int64_t>(sizeof(S))) / kCols * kCols;
  const int64_t span = all_direct ? kCols : std::clamp<int64_t>(fit, kCols, 4 * kCols);
  const int64_t spans_per_row = (inner + span - 1) / span;
  const int64_t spans = numel(outer) * spans_per_row;
  parallel_for(0, spans, std::max<int64_t>(1, 32768 / (len * span)), [&](int64_t begin, int64_t end) {
    std::vector<S> buffers[N];
    for (int k = 0; k < N; ++k) {
      if (!direct[k]) buffers[k].resize(static_cast<size_t>(len * span));
    }
    for (int64_t b = begin; b < end; ++b) {
      const int64_t o = b / spans_per_row, c0 = (b % spans_per_row) * span;
      const int64_t width = std::min(span, inner - c0);
      S* ptr[N];
      int64_t step[N];
      unsigned char* at[N];
      Shape shape;
      shape.ndim = 2;
      shape.sizes[0] = len;
      shape.sizes[1] = width;
      Strides op_strides{}, buffer_strides{};
      buffer_strides.v[0] = width;
      buffer_strides.v[1] = 1;
      for (int k = 0; k < N; ++k) {
        const int64_t offset = detail::unravel_offset(o, outer, layout.strides[k]) + c0 * layout.strides[k].v[last];
        at[k] = static_cast<unsigned char*>(ops[k]->data) + offset * static_cast<int64_t>(element_size(ops[k]->dtype));
        if (direct[k]) {
          ptr[k] = reinterpret_cast<S*>(at[k]);
          step[k] = layout.step[k];
          continue;
        }
        ptr[k] = buffers[k].data();
        step[k] = width;
        op_strides.v[0] = layout.step[k];
        op_strides.v[1] = layout.strides[k].v[last];
        if (k > 0) copy(ptr[k], kStorage<S>, buffer_strides, at[k], ops[k]->dtype, op_strides, shape);
      }
      for (int64_t c = 0; c < width; c += kCols) {
        S* sub[N];
        for (int k = 0; k < N; ++k) sub[k] = ptr[k] + c;
        block(sub, step, len, std::min(kCols, width - c));
      }
      if (!direct[0]) {
        op_strides.v[0] = layout.step[0];
        op_strides.v[1] = layout.strides[0].v[last];
        copy(at[0], ops[0]->dtype, op_strides, ptr[0], kStorage<S>, buffer_strides, shape);
      }
    }
  });
}

template <int N>
bool all_bfloat16(const Operand* const (&ops)[N]) {
  return std::all_of(ops, ops + N, [](const Operand* op) { return op->dtype == ScalarType::BFloat16; });
}

template <class T>
const detail::SoftmaxRowFns<T>& row_fns() {
  if constexpr (std::is_same_v<T, double>) {
    return active_rows().d;
  } else {
    return active_rows().f;
  }
}

template <class F>
void dispatch_compute(ScalarType out, ScalarType in, F&& f) {
  if (out == ScalarType::Float64 || in == ScalarType::Float64) {
    f(std::type_identity<double>{});
  } else {
    f(std::type_identity<float>{});
  }
}

}  // namespace

// Note [16-bit log_softmax over the last dim]
// The CPU's log_softmax over the last dim of a Half / BFloat16 input
// (serial_vec_log_softmax_lastdim_range, LogSoftmaxKernelImpl.h) computes
// in float but keeps the row's sum of exponentials and then its log in
// scalar_t arrays, so both are rounded to the 16-bit type before
// x - max - log_sum is computed in float and rounded. Over another dim (and
// for softmax) it keeps them in float and rounds once. `cpu_lastdim` says the
// CPU would take its last-dim kernel (`dim` is the last dim of the caller's
// tensor); the rows then round as it does, whatever path they take here. Rounding the log-sum costs accuracy where the result is near
// zero (up to half a 16-bit ulp of log_sum), but gives the CPU's values.
void softmax(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log, bool cpu_lastdim) {
  const Operand* ops[2] = {&out, &in};
  const auto rounding = !log || !cpu_lastdim                ? detail::LogSumRounding::None
                        : in.dtype == ScalarType::BFloat16 ? detail::LogSumRounding::BFloat16
                        : in.dtype == ScalarType::Float16  ? detail::LogSumRounding::Half
                                                           : detail::LogSumRounding::None;
  detail::VerboseCall call(log ? "log_softmax" : "softmax");
  dispatch_compute(out.dtype, in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto& fns = row_fns<T>();
    const RowLayout layout = row_layout(shape, dim, ops, 2);
    if (call) {
      call.describe(in.dtype, "rows%lld len%lld", static_cast<long long>(numel(layout.rest)),
                    static_cast<long long>(layout.len));
    }
    if (by_columns(layout, 2) || short_rows(layout)) {
      call.path("columns");
      if (all_bfloat16(ops)) {  // Note [Softmax by columns]: converted in the column routine
        const auto& columns = active_rows().bf16;
        for_each_column_block<BFloat16, 2>(
            layout, ops, [&](BFloat16* const* p, const int64_t* step, int64_t len, int64_t width) {
              columns.forward_columns(p[0], step[0], p[1], step[1], len, width, log, rounding);
            });
        return;
      }
      for_each_column_block<T, 2>(layout, ops, [&](T* const* p, const int64_t* step, int64_t len, int64_t width) {
        fns.forward_columns(p[0], step[0], p[1], step[1], len, width, log, rounding);
      });
      return;
    }
    call.path("rows");
    for_each_row<T, 2>(shape, dim, ops,
                       [&](T* const* p, int64_t len) { fns.forward(p[0], p[1], len, log, rounding); });
  });
}

void softmax_backward(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                      const Operand& output, bool log) {
  const Operand* ops[3] = {&grad_input, &grad, &output};
  detail::VerboseCall call(log ? "log_softmax_backward" : "softmax_backward");
  dispatch_compute(grad_input.dtype, output.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto& fns = row_fns<T>();
    const RowLayout layout = row_layout(shape, dim, ops, 3);
    if (call) {
      call.describe(output.dtype, "rows%lld len%lld", static_cast<long long>(numel(layout.rest)),
                    static_cast<long long>(layout.len));
    }
    if (by_columns(layout, 3) || short_rows(layout)) {
      call.path("columns");
      if (all_bfloat16(ops)) {
        const auto& columns = active_rows().bf16;
        for_each_column_block<BFloat16, 3>(
            layout, ops, [&](BFloat16* const* p, const int64_t* step, int64_t len, int64_t width) {
              columns.backward_columns(p[0], step[0], p[1], step[1], p[2], step[2], len, width, log);
            });
        return;
      }
      for_each_column_block<T, 3>(layout, ops, [&](T* const* p, const int64_t* step, int64_t len, int64_t width) {
        fns.backward_columns(p[0], step[0], p[1], step[1], p[2], step[2], len, width, log);
      });
      return;
    }
    call.path("rows");
    for_each_row<T, 3>(shape, dim, ops,
                       [&](T* const* p, int64_t len) { fns.backward(p[0], p[1], p[2], len, log); });
  });
}

void softmax_ref(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log) {
  const Operand* ops[2] = {&out, &in};
  dispatch_compute(out.dtype, in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<T, 2>(shape, dim, ops, [&](T* const* p, int64_t len) {
      T max = -std::numeric_limits<T>::infinity();
      bool nan = false;
      for (int64_t i = 0; i < len; ++i) {
        max = std::max(max, p[1][i]);
        nan |= std::isnan(p[1][i]);
      }
      if (nan) max = std::numeric_limits<T>::quiet_NaN();
      long double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += std::exp(static_cast<long double>(p[1][i] - max));
      for (int64_t i = 0; i < len; ++i) {
        const long double shifted = static_cast<long double>(p[1][i] - max);
        p[0][i] = static_cast<T>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    });
  });
}

void softmax_backward_ref(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                          const Operand& output, bool log) {
  const Operand* ops[3] = {&grad_input, &grad, &output};
  dispatch_compute(grad_input.dtype, output.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<T, 3>(shape, dim, ops, [&](T* const* p, int64_t len) {
      long double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += log ? p[1][i] : static_cast<long double>(p[1][i]) * p[2][i];
      for (int64_t i = 0; i < len; ++i) {
        const long double g = p[1][i], o = p[2][i];
        p[0][i] = static_cast<T>(log ? g - std::exp(o) * sum : o * (g - sum));
      }
    });
  });
}

}  // namespace mlu::kernels
