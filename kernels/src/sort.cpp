#include "mlu_kernels/sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {

namespace {

struct RowLayout {
  Shape outer;
  int64_t len;
  int64_t in_last, val_last, idx_last;
};

RowLayout rows_of(const Shape& shape, const Operand& in, const Operand& values, const Operand& indices) {
  RowLayout r;
  r.outer = shape;
  r.outer.ndim = shape.ndim - 1;
  r.len = shape.sizes[shape.ndim - 1];
  r.in_last = in.strides.v[shape.ndim - 1];
  r.val_last = values.strides.v[shape.ndim - 1];
  r.idx_last = indices.strides.v[shape.ndim - 1];
  return r;
}

void offsets(const RowLayout& r, int64_t row, const Operand& in, const Operand& values, const Operand& indices,
             int64_t& oi, int64_t& ov, int64_t& ox) {
  oi = ov = ox = 0;
  for (int d = r.outer.ndim - 1; d >= 0; --d) {
    const int64_t i = row % r.outer.sizes[d];
    row /= r.outer.sizes[d];
    oi += i * in.strides.v[d];
    ov += i * values.strides.v[d];
    ox += i * indices.strides.v[d];
  }
}

// Ascending order with NaN above everything (PyTorch's sort order).
template <class V>
bool less_nan_last(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Sorts (part of) each row's indices, then writes `count` values/indices.
template <class F>
void for_rows(const Shape& shape, const Operand& values, const Operand& indices, const Operand& in, int64_t count,
              F&& order) {
  const RowLayout r = rows_of(shape, in, values, indices);
  const int64_t n_rows = numel(r.outer);
  if (n_rows == 0 || r.len == 0 || count == 0) return;
  detail::dispatch(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<T>) {
      using V = decltype(detail::widen(T{}));
      const T* src = static_cast<const T*>(in.data);
      T* val = static_cast<T*>(values.data);
      int64_t* idx = static_cast<int64_t*>(indices.data);
      parallel_for(0, n_rows, std::max<int64_t>(1, 8192 / r.len), [&](int64_t b, int64_t e) {
        std::vector<int64_t> perm(static_cast<size_t>(r.len));
        std::vector<V> keys(static_cast<size_t>(r.len));
        for (int64_t row = b; row < e; ++row) {
          int64_t oi, ov, ox;
          offsets(r, row, in, values, indices, oi, ov, ox);
          for (int64_t j = 0; j < r.len; ++j) keys[static_cast<size_t>(j)] = detail::widen(src[oi + j * r.in_last]);
          std::iota(perm.begin(), perm.end(), 0);
          order(perm, keys);
          for (int64_t j = 0; j < count; ++j) {
            const int64_t p = perm[static_cast<size_t>(j)];
            val[ov + j * r.val_last] = src[oi + p * r.in_last];
            idx[ox + j * r.idx_last] = p;
          }
        }
      });
    }
  });
}

}  // namespace

void sort(const Shape& shape, const Operand& values, const Operand& indices, const Operand& in, bool descending) {
  for_rows(shape, values, indices, in, shape.sizes[shape.ndim - 1], [&](auto& perm, const auto& keys) {
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return descending ? less_nan_last(keys[static_cast<size_t>(b)], keys[static_cast<size_t>(a)])
                        : less_nan_last(keys[static_cast<size_t>(a)], keys[static_cast<size_t>(b)]);
    });
  });
}

void topk(const Shape& shape, int64_t k, const Operand& values, const Operand& indices, const Operand& in,
          bool largest, bool sorted) {
  (void)sorted;  // the first k come out sorted either way (a valid order for sorted=False too)
  for_rows(shape, values, indices, in, k, [&](auto& perm, const auto& keys) {
    // Ties keep the lower index first, so results are deterministic.
    auto cmp = [&](int64_t a, int64_t b) {
      const auto ka = keys[static_cast<size_t>(a)], kb = keys[static_cast<size_t>(b)];
      const bool before = largest ? less_nan_last(kb, ka) : less_nan_last(ka, kb);
      const bool after = largest ? less_nan_last(ka, kb) : less_nan_last(kb, ka);
      return before || (!after && a < b);
    };
    std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), cmp);
  });
}

}  // namespace mlu::kernels
