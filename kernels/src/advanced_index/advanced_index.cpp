#include "mlu_kernels/advanced_index.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

constexpr int64_t kGrain = 16384;

// The operands walked together: 0 = out/self, 1 = src/values, 2.. = indices.
struct Walk {
  Shape shape;
  int n_operands;
  const Strides* strides[2 + kMaxDims];
  const Operand* indices;
  const IndexedDims* dims;
};

// Records one bad index value (any thread's) and the index tensor it was in.
struct BadIndex {
  std::atomic<bool> seen{false};
  std::atomic<int64_t> value{0};
  std::atomic<int> dim{0};
  void report(int k, int64_t v) {
    if (!seen.exchange(true)) {
      value.store(v);
      dim.store(k);
    }
  }
  AdvancedIndexCheck check() const { return {!seen.load(), dim.load(), value.load()}; }
};

int64_t load_index(const Operand& index, int64_t offset) {
  return index.dtype == ScalarType::Int32 ? static_cast<const int32_t*>(index.data)[offset]
                                          : static_cast<const int64_t*>(index.data)[offset];
}

// The element offset that the index values at `offsets` (one per index
// tensor, already including the row position) select, or false after
// reporting a bad value.
bool indexed_offset(const Walk& w, const int64_t* offsets, BadIndex& bad, int64_t& result) {
  int64_t sum = 0;
  for (int k = 0; k < w.dims->count; ++k) {
    int64_t i = load_index(w.indices[k], offsets[k]);
    const int64_t size = w.dims->sizes[k];
    if (i < -size || i >= size) {
      bad.report(k, i);
      return false;
    }
    if (i < 0) i += size;
    sum += i * w.dims->strides[k];
  }
  result = sum;
  return true;
}

// Calls segment(plain_offset, plain_stride, indexed_offset, indexed_stride,
// len) for the elements [begin, end) (row-major) of the walk, where `indexed`
// (0 or 1) is the operand whose position the index values pick and the other
// is read or written plainly. A row part whose index values do not change
// along the row (the common case: TensorIterator puts the non-indexed dims
// last) is one segment; otherwise each element is its own.
template <class Segment>
void visit(const Walk& w, int indexed, int64_t begin, int64_t end, BadIndex& bad, const Segment& segment) {
  const Shape& shape = w.shape;
  const int last = shape.ndim - 1;
  const int64_t len = shape.sizes[last];
  const int plain = 1 - indexed;
  const int n_index = w.dims->count;
  bool constant_row = true;
  for (int k = 0; k < n_index; ++k) constant_row = constant_row && w.strides[2 + k]->v[last] == 0;
  bool same_index_dtype = true;
  for (int k = 1; k < n_index; ++k) same_index_dtype = same_index_dtype && w.indices[k].dtype == w.indices[0].dtype;
  const int64_t sp = w.strides[plain]->v[last], si = w.strides[indexed]->v[last];
  int64_t off[2 + kMaxDims];
  int64_t index_off[kMaxDims];
  for (int64_t pos = begin; pos < end;) {
    const int64_t row = pos / len, j0 = pos % len, j1 = std::min(len, j0 + (end - pos));
    pos += j1 - j0;
    for (int k = 0; k < w.n_operands; ++k) off[k] = 0;
    int64_t rest = row;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t i = rest % shape.sizes[d];
      rest /= shape.sizes[d];
      for (int k = 0; k < w.n_operands; ++k) off[k] += i * w.strides[k]->v[d];
    }
    if (constant_row) {
      int64_t base;
      if (indexed_offset(w, off + 2, bad, base)) {
        segment(off[plain] + j0 * sp, sp, off[indexed] + j0 * si + base, si, j1 - j0);
      }
      continue;
    }
    // Index values that change along the row (x[i, j] with 1-D i and j): with
    // one index dtype, a loop with that dtype fixed and each range check one
    // unsigned compare, so no per-element dtype dispatch or two-sided check
    // (timings: docs/bench_kernels.md); a bad value goes
    // back through indexed_offset, which reports it.
    if (same_index_dtype) {
      auto points = [&](auto tag) {
        using I = typename decltype(tag)::type;
        const I* index[kMaxDims];
        int64_t step[kMaxDims];
        for (int k = 0; k < n_index; ++k) {
          index[k] = static_cast<const I*>(w.indices[k].data) + off[2 + k];
          step[k] = w.strides[2 + k]->v[last];
        }
        for (int64_t j = j0; j < j1; ++j) {
          int64_t base = 0;
          bool ok = true;
          for (int k = 0; k < n_index; ++k) {
            int64_t i = static_cast<int64_t>(index[k][j * step[k]]);
            const int64_t size = w.dims->sizes[k];
            i += i < 0 ? size : 0;
            ok &= static_cast<uint64_t>(i) < static_cast<uint64_t>(size);
            base += i * w.dims->strides[k];
          }
          if (ok) [[likely]] {
            segment(off[plain] + j * sp, sp, off[indexed] + j * si + base, si, 1);
          } else {
            for (int k = 0; k < n_index; ++k) index_off[k] = off[2 + k] + j * step[k];
            indexed_offset(w, index_off, bad, base);  // reports the bad value
          }
        }
      };
      if (w.indices[0].dtype == ScalarType::Int32) {
        points(std::type_identity<int32_t>{});
      } else {
        points(std::type_identity<int64_t>{});
      }
      continue;
    }
    for (int64_t j = j0; j < j1; ++j) {
      for (int k = 0; k < n_index; ++k) index_off[k] = off[2 + k] + j * w.strides[2 + k]->v[last];
      int64_t base;
      if (indexed_offset(w, index_off, bad, base)) segment(off[plain] + j * sp, sp, off[indexed] + j * si + base, si, 1);
    }
  }
}

Walk make_walk(const Shape& shape, const Operand& a, const Operand& b, const Operand* indices, const IndexedDims& dims) {
  Walk w;
  w.shape = shape;
  if (w.shape.ndim == 0) {
    w.shape.ndim = 1;
    w.shape.sizes[0] = 1;
  }
  w.n_operands = 2 + dims.count;
  w.strides[0] = &a.strides;
  w.strides[1] = &b.strides;
  for (int k = 0; k < dims.count; ++k) w.strides[2 + k] = &indices[k].strides;
  w.indices = indices;
  w.dims = &dims;
  return w;
}

}  // namespace

AdvancedIndexCheck index_gather(const Shape& shape, const Operand& out, const Operand& src, const Operand* indices,
                                const IndexedDims& dims) {
  detail::VerboseCall call("index_gather");
  if (call) call.describe(out.dtype, "n%lld indexed%d", detail::lld(numel(shape)), dims.count);
  if (numel(shape) == 0) return {};
  const Walk w = make_walk(shape, out, src, indices, dims);
  const int64_t n = numel(w.shape);
  BadIndex bad;
  detail::dispatch_bits(element_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.data);
    const T* from = static_cast<const T*>(src.data);
    auto segment = [&](int64_t o, int64_t so, int64_t s, int64_t ss, int64_t n) {
      if (so == 1 && ss == 1) {
        std::memcpy(dst + o, from + s, static_cast<size_t>(n) * sizeof(T));
        return;
      }
      for (int64_t j = 0; j < n; ++j) dst[o + j * so] = from[s + j * ss];
    };
    parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) { visit(w, /*indexed=*/1, b, e, bad, segment); });
  });
  return bad.check();
}

AdvancedIndexCheck index_put(const Shape& shape, const Operand& self, const Operand& values, const Operand* indices,
                             const IndexedDims& dims, bool accumulate, bool deterministic) {
  detail::VerboseCall call("index_put");
  if (call) call.describe(self.dtype, "n%lld indexed%d", detail::lld(numel(shape)), dims.count);
  call.path(accumulate ? "accumulate" : deterministic ? "assign in order" : "assign");
  if (numel(shape) == 0) return {};
  const Walk w = make_walk(shape, self, values, indices, dims);
  const int64_t n = numel(w.shape);
  BadIndex bad;
  if (!accumulate) {
    detail::dispatch_bits(element_size(self.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = static_cast<T*>(self.data);
      const T* from = static_cast<const T*>(values.data);
      auto segment = [&](int64_t v, int64_t sv, int64_t d, int64_t sd, int64_t n) {
        for (int64_t j = 0; j < n; ++j) dst[d + j * sd] = from[v + j * sv];
      };
      if (deterministic) {
        visit(w, /*indexed=*/0, 0, n, bad, segment);
      } else {
        parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) { visit(w, /*indexed=*/0, b, e, bad, segment); });
      }
    });
    return bad.check();
  }
  detail::dispatch(self.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(self.data);
    const T* from = static_cast<const T*>(values.data);
    auto segment = [&](int64_t v, int64_t sv, int64_t d, int64_t sd, int64_t n) {
      for (int64_t j = 0; j < n; ++j) {
        T& target = dst[d + j * sd];
        const T value = from[v + j * sv];
        if constexpr (std::is_same_v<T, bool>) {
          target = target || value;
        } else if constexpr (detail::is_complex_v<T>) {
          target = target + value;
        } else {
          using Acc = decltype(detail::widen(T{}));
          target = detail::convert<T>(static_cast<Acc>(detail::widen(target) + detail::widen(value)));
        }
      }
    };
    visit(w, /*indexed=*/0, 0, n, bad, segment);  // serial: a fixed order of additions
  });
  return bad.check();
}

}  // namespace mlu::kernels
