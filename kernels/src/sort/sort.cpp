#include "mlu_kernels/sort.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <numeric>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

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

// Note [Packed sort keys]
// Rows of keys of 32 bits or fewer sort as uint64 words: an order-preserving
// uint32 image of the key (its complement for descending order) above the
// element's index. A plain std::sort of the words is then the stable sort
// (equal keys order by index) with one integer compare per step instead of
// two indirect, NaN-checking float compares. The image: floats by the sign
// flip (x >= 0: bits | 2^31, x < 0: ~bits), with -0 made +0 (they compare
// equal) and every NaN the same largest image (NaN sorts above everything,
// NaNs tie); signed integers offset by 2^31; unsigned and bool as they are.
template <class V>
inline constexpr bool kPackable = sizeof(V) <= 4 && !std::is_same_v<V, double>;

template <class V>
uint32_t order_image(V v) {
  if constexpr (std::is_same_v<V, float>) {
    if (v != v) return 0xFFFFFFFFu;
    const uint32_t bits = std::bit_cast<uint32_t>(v + 0.0f);  // -0 -> +0
    return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  } else if constexpr (std::is_signed_v<V>) {
    return static_cast<uint32_t>(static_cast<int64_t>(v) + (int64_t{1} << 31));
  } else {
    return static_cast<uint32_t>(v);
  }
}

// Sorts the words by their high 32 bits, stably: LSD radix sort, a byte per
// pass, a pass skipped where every word has the same byte. No data-dependent
// branches (std::sort mispredicted every other compare on random keys: ~70
// us per row of 1024).
void radix_sort_high_words(std::vector<uint64_t>& words, std::vector<uint64_t>& scratch) {
  const size_t n = words.size();
  scratch.resize(n);
  uint64_t* src = words.data();
  uint64_t* dst = scratch.data();
  for (int shift = 32; shift < 64; shift += 8) {
    size_t start[256] = {};
    for (size_t j = 0; j < n; ++j) ++start[(src[j] >> shift) & 0xFF];
    if (start[(src[0] >> shift) & 0xFF] == n) continue;
    size_t sum = 0;
    for (size_t& s : start) {
      const size_t count = s;
      s = sum;
      sum += count;
    }
    for (size_t j = 0; j < n; ++j) dst[start[(src[j] >> shift) & 0xFF]++] = src[j];
    std::swap(src, dst);
  }
  if (src != words.data()) std::copy(src, src + n, words.data());
}

// Note [Few first positions]
// topk with a small k (the usual k = 8 of a row of 1024): the row's packed
// images are computed in one pass, then scanned once against the image of
// the k-th best so far, which almost every element fails (a predictable
// branch); the few that pass are inserted into a sorted array of k words.
// An equal image never passes: the kept one has the lower index, as in the
// packed sort. std::partial_sort's heap did the same scan on 64-bit words
// with a heap update per pass, and was the largest part of topk's time
// (profile and A/B timings: docs/bench_kernels.md). Testing blocks of 32
// images with one OR of the compares first was slower.
constexpr int64_t kFewFirst = 32;

template <class V>
void few_first(std::vector<int64_t>& perm, const std::vector<V>& keys, uint32_t flip, int64_t count) {
  thread_local std::vector<uint32_t> images;
  const size_t n = keys.size();
  images.resize(n);
  for (size_t j = 0; j < n; ++j) images[j] = order_image(keys[j]) ^ flip;
  uint64_t best[kFewFirst];
  for (int64_t j = 0; j < count; ++j) best[j] = uint64_t{images[static_cast<size_t>(j)]} << 32 | static_cast<uint64_t>(j);
  std::sort(best, best + count);
  uint32_t limit = static_cast<uint32_t>(best[count - 1] >> 32);
  for (size_t j = static_cast<size_t>(count); j < n; ++j) {
    if (images[j] >= limit) continue;
    const uint64_t word = uint64_t{images[j]} << 32 | j;
    int64_t at = count - 1;  // shifts the worse words up, dropping the last
    while (at > 0 && best[at - 1] > word) {
      best[at] = best[at - 1];
      --at;
    }
    best[at] = word;
    limit = static_cast<uint32_t>(best[count - 1] >> 32);
  }
  for (int64_t j = 0; j < count; ++j) perm[static_cast<size_t>(j)] = static_cast<int64_t>(best[j] & 0xFFFFFFFFu);
}

// The first `count` positions of the row in (largest first if `descending`)
// order, ties by index, into perm; all of them sorted when count < len too.
template <class V>
void packed_order(std::vector<int64_t>& perm, const std::vector<V>& keys, bool descending, int64_t count) {
  thread_local std::vector<uint64_t> words, scratch;
  const uint32_t flip = descending ? 0xFFFFFFFFu : 0u;
  if (count <= kFewFirst && count < static_cast<int64_t>(keys.size())) {
    return few_first(perm, keys, flip, count);
  }
  words.resize(keys.size());
  for (size_t j = 0; j < keys.size(); ++j) words[j] = uint64_t{order_image(keys[j]) ^ flip} << 32 | j;
  if (count < static_cast<int64_t>(words.size())) {
    std::partial_sort(words.begin(), words.begin() + count, words.end());
  } else if (words.size() >= 64) {
    radix_sort_high_words(words, scratch);
  } else {
    std::sort(words.begin(), words.end());
  }
  for (int64_t j = 0; j < count; ++j) perm[static_cast<size_t>(j)] = static_cast<int64_t>(words[static_cast<size_t>(j)] & 0xFFFFFFFFu);
}

// Note [The CPU's order among equal keys]
// Which of several equal keys comes first is unspecified for sort(stable=
// False), topk and kthvalue, but PyTorch's CPU kernels fix it by their
// algorithms, and tests compare indices with the CPU: sort is libstdc++'s
// std::sort (introsort) over (key, index) pairs (SortingKernel.cpp), topk is
// std::partial_sort when k * 64 <= n, else std::nth_element and a std::sort
// of the first k - 1 (TopKImpl.h), kthvalue is TH's Sedgewick quickselect
// (Sorting.cpp). Each result depends only on the sequence of comparisons, so
// the same algorithm over an index permutation, with the same comparator on
// the keys, gives the CPU's indices exactly (tests/test_sort_ties.py checks
// against the CPU). sort and topk take the fast stable path first and rerun
// the CPU's algorithm only for a row whose result has equal keys where the
// order could differ; kthvalue always runs the quickselect (as the CPU does).

// The CPU's comparators: ascending with NaN above every number, or
// descending with NaN first.
template <class V>
bool before(V a, V b, bool descending) {
  return descending ? less_nan_last(b, a) : less_nan_last(a, b);
}

template <class V>
bool equal_keys(V a, V b) {
  return !less_nan_last(a, b) && !less_nan_last(b, a);
}

template <class V>
bool adjacent_equal_keys(const std::vector<int64_t>& perm, const std::vector<V>& keys, int64_t count) {
  for (int64_t j = 0; j + 1 < count; ++j) {
    if (equal_keys(keys[static_cast<size_t>(perm[static_cast<size_t>(j)])],
                   keys[static_cast<size_t>(perm[static_cast<size_t>(j + 1)])])) {
      return true;
    }
  }
  return false;
}

// The first `count` positions in order, equal keys by index (all of them
// sorted when count < len too).
template <class V>
void stable_order(std::vector<int64_t>& perm, const std::vector<V>& keys, bool descending, int64_t count) {
  const int64_t len = static_cast<int64_t>(keys.size());
  if constexpr (kPackable<V>) {
    if (len <= UINT32_MAX) return packed_order(perm, keys, descending, count);
  }
  auto key = [&](int64_t j) { return keys[static_cast<size_t>(j)]; };
  if (count == len) {
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return before(key(a), key(b), descending); });
    return;
  }
  std::partial_sort(perm.begin(), perm.begin() + count, perm.end(), [&](int64_t a, int64_t b) {
    return before(key(a), key(b), descending) || (!before(key(b), key(a), descending) && a < b);
  });
}

// TopKImpl.h's topk_impl_loop over the index permutation.
template <class V>
void cpu_topk_order(std::vector<int64_t>& perm, const std::vector<V>& keys, int64_t k, bool largest, bool sorted) {
  std::iota(perm.begin(), perm.end(), 0);
  auto comp = [&](int64_t a, int64_t b) {
    return before(keys[static_cast<size_t>(a)], keys[static_cast<size_t>(b)], largest);
  };
  if (k * 64 <= static_cast<int64_t>(perm.size())) {
    std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), comp);
    return;
  }
  std::nth_element(perm.begin(), perm.begin() + (k - 1), perm.end(), comp);
  if (sorted) std::sort(perm.begin(), perm.begin() + (k - 1), comp);
}

// TH's quick_select_template (Sorting.cpp): the k-th smallest (0-based k)
// ends at position k of keys / perm.
template <class V>
void cpu_quickselect(std::vector<V>& keys, std::vector<int64_t>& perm, int64_t k) {
  auto greater_or_nan = [](V x, V y) { return less_nan_last(y, x); };
  auto swap = [&](int64_t i, int64_t j) {
    std::swap(keys[static_cast<size_t>(i)], keys[static_cast<size_t>(j)]);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  };
  auto at = [&](int64_t i) { return keys[static_cast<size_t>(i)]; };
  int64_t left = 0, right = static_cast<int64_t>(keys.size()) - 1;
  while (right > left) {
    if (right == left + 1) {
      if (greater_or_nan(at(left), at(right))) swap(left, right);
      return;
    }
    // Median of three for the pivot.
    swap((left + right) >> 1, left + 1);
    if (greater_or_nan(at(left + 1), at(right))) swap(left + 1, right);
    if (greater_or_nan(at(left), at(right))) swap(left, right);
    if (greater_or_nan(at(left + 1), at(left))) swap(left + 1, left);
    int64_t i = left + 1, j = right;
    const V pivot = at(left);
    while (true) {
      do ++i; while (greater_or_nan(pivot, at(i)));
      do --j; while (greater_or_nan(at(j), pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(left, j);
    if (j <= k) left = i;
    if (j >= k) right = j - 1;
  }
}

}  // namespace

void sort(const Shape& shape, const Operand& values, const Operand& indices, const Operand& in, bool descending,
          bool stable) {
  detail::VerboseCall call("sort");
  if (call) call.describe(in.dtype, "n%lld", detail::lld(numel(shape)));
  call.path(stable ? "stable" : "unstable");
  const int64_t len = shape.sizes[shape.ndim - 1];
  // A zero stride repeats one element: the CPU's sort_kernel then returns the
  // identity order, the stable one.
  const bool cpu_ties = !stable && in.strides.v[shape.ndim - 1] != 0;
  for_rows(shape, values, indices, in, len, [&](auto& perm, const auto& keys) {
    stable_order(perm, keys, descending, len);
    if (cpu_ties && adjacent_equal_keys(perm, keys, len)) {
      std::iota(perm.begin(), perm.end(), 0);
      std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return before(keys[static_cast<size_t>(a)], keys[static_cast<size_t>(b)], descending);
      });
    }
  });
}

void topk(const Shape& shape, int64_t k, const Operand& values, const Operand& indices, const Operand& in,
          bool largest, bool sorted) {
  detail::VerboseCall call("topk");
  if (call) call.describe(in.dtype, "n%lld k%lld", detail::lld(numel(shape)), detail::lld(k));
  const int64_t len = shape.sizes[shape.ndim - 1];
  // Unsorted, the CPU's nth_element path leaves the first k in its own
  // order; sorted (or through its partial sort) only equal keys can differ.
  const bool cpu_order_always = !sorted && k * 64 > len;
  for_rows(shape, values, indices, in, k, [&](auto& perm, const auto& keys) {
    if (!cpu_order_always) {
      stable_order(perm, keys, largest, k);
      // Without two equal keys among the first k, the k-th key appears once
      // there: another equal key lies beyond them.
      if (!adjacent_equal_keys(perm, keys, k)) {
        const auto kth = keys[static_cast<size_t>(perm[static_cast<size_t>(k - 1)])];
        int64_t equal = 0;
        for (const auto key : keys) equal += equal_keys(key, kth);
        if (equal == 1) return;
      }
    }
    cpu_topk_order(perm, keys, k, largest, sorted);
  });
}

void kth_smallest(const Shape& shape, int64_t k, const Operand& value, const Operand& index, const Operand& in) {
  detail::VerboseCall call("kth_smallest");
  if (call) call.describe(in.dtype, "n%lld k%lld", detail::lld(numel(shape)), detail::lld(k));
  for_rows(shape, value, index, in, 1, [&](auto& perm, const auto& keys) {
    using V = typename std::remove_cvref_t<decltype(keys)>::value_type;
    using Work = std::conditional_t<std::is_same_v<V, bool>, uint8_t, V>;  // not vector<bool>
    thread_local std::vector<Work> work;
    work.assign(keys.begin(), keys.end());
    cpu_quickselect(work, perm, k - 1);
    perm[0] = perm[static_cast<size_t>(k - 1)];
  });
}

}  // namespace mlu::kernels
