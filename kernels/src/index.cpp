#include "mlu_kernels/index.h"

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/parallel.h"

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

// Records one bad index value (any thread's).
struct BadIndex {
  std::atomic<bool> seen{false};
  std::atomic<int64_t> value{0};
  void report(int64_t v) {
    if (!seen.exchange(true)) value.store(v);
  }
};

template <class I>
int64_t index_at(const void* base, int64_t offset) {
  return static_cast<int64_t>(static_cast<const I*>(base)[offset]);
}

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

IndexCheck gather_slices(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                         const Operand& index) {
  Shape rest;
  rest.ndim = 0;
  Strides out_rest{}, in_rest{};
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == dim) continue;
    rest.sizes[rest.ndim] = shape.sizes[d];
    out_rest.v[rest.ndim] = out.strides.v[d];
    in_rest.v[rest.ndim] = in.strides.v[d];
    ++rest.ndim;
  }
  const int64_t slice = numel(rest);
  const int64_t esize = static_cast<int64_t>(element_size(out.dtype));
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
                     copy(static_cast<char*>(out.data) + j * out.strides.v[dim] * esize, out.dtype, out_rest,
                          static_cast<const char*>(in.data) + i * in.strides.v[dim] * esize, in.dtype, in_rest, rest);
                   }
                 });
  });
  return {!bad.seen.load(), bad.value.load()};
}

}  // namespace

IndexCheck gather(const Shape& shape, int dim, const Operand& out, const Operand& in, int64_t dim_size,
                  const Operand& index) {
  if (index_is_one_dim(shape, dim, index)) return gather_slices(shape, dim, out, in, dim_size, index);
  Strides so = out.strides, si = in.strides, sx = index.strides;
  Strides* strides[3] = {&so, &si, &sx};
  const Rows rows = move_dim_last(shape, dim, strides);
  const int64_t n_rows = numel(rows.outer);
  if (n_rows == 0 || rows.len == 0) return {};
  const int64_t ro = so.v[kMaxDims - 1], ri = si.v[kMaxDims - 1], rx = sx.v[kMaxDims - 1];
  BadIndex bad;
  dispatch_index(index.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    detail::dispatch_bits(element_size(out.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = static_cast<T*>(out.data);
      const T* src = static_cast<const T*>(in.data);
      parallel_for(0, n_rows, std::max<int64_t>(1, kGrain / rows.len), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t off[3];
          row_offsets(rows.outer, strides, r, off);
          for (int64_t j = 0; j < rows.len; ++j) {
            const int64_t i = index_at<I>(index.data, off[2] + j * rx);
            if (i < 0 || i >= dim_size) {
              bad.report(i);
              continue;
            }
            dst[off[0] + j * ro] = src[off[1] + i * ri];
          }
        }
      });
    });
  });
  return {!bad.seen.load(), bad.value.load()};
}

IndexCheck scatter(ScatterOp op, const Shape& shape, int dim, const Operand& self, int64_t dim_size,
                   const Operand& src, const Operand& index, double alpha) {
  Strides ss = self.strides, sv = src.strides, sx = index.strides;
  Strides* strides[3] = {&ss, &sv, &sx};
  const Rows rows = move_dim_last(shape, dim, strides);
  const int64_t n_rows = numel(rows.outer);
  if (n_rows == 0 || rows.len == 0) return {};
  const int64_t rs = ss.v[kMaxDims - 1], rv = sv.v[kMaxDims - 1], rx = sx.v[kMaxDims - 1];
  BadIndex bad;
  dispatch_index(index.dtype, [&](auto itag) {
    using I = typename decltype(itag)::type;
    detail::dispatch(self.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!detail::is_complex_v<T>) {
        using Acc = decltype(detail::widen(T{}));
        T* dst = static_cast<T*>(self.data);
        const T* from = static_cast<const T*>(src.data);
        const Acc a = static_cast<Acc>(alpha);
        parallel_for(0, n_rows, std::max<int64_t>(1, kGrain / rows.len), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            int64_t off[3];
            row_offsets(rows.outer, strides, r, off);
            for (int64_t j = 0; j < rows.len; ++j) {
              const int64_t i = index_at<I>(index.data, off[2] + j * rx);
              if (i < 0 || i >= dim_size) {
                bad.report(i);
                continue;
              }
              T& d = dst[off[0] + i * rs];
              const Acc v = detail::widen(from[off[1] + j * rv]);
              const Acc cur = detail::widen(d);
              switch (op) {
                case ScatterOp::Assign: d = from[off[1] + j * rv]; break;
                case ScatterOp::Add:
                  if constexpr (std::is_same_v<T, bool>) {
                    d = cur || v;
                  } else {
                    d = detail::convert<T>(static_cast<Acc>(cur + a * v));
                  }
                  break;
                case ScatterOp::Mul:
                  if constexpr (std::is_same_v<T, bool>) {
                    d = cur && v;
                  } else {
                    d = detail::convert<T>(static_cast<Acc>(cur * v));
                  }
                  break;
                case ScatterOp::Max: d = detail::convert<T>((v != v || v > cur) ? v : cur); break;
                case ScatterOp::Min: d = detail::convert<T>((v != v || v < cur) ? v : cur); break;
              }
            }
          }
        });
      }
    });
  });
  return {!bad.seen.load(), bad.value.load()};
}

}  // namespace mlu::kernels
