// arange/linspace, sort/topk and stream compaction against direct loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "mlu_kernels/parallel.h"
#include "mlu_kernels/select.h"
#include "mlu_kernels/sequence.h"
#include "mlu_kernels/sort.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

Shape shape1(int64_t n) {
  Shape s;
  s.ndim = 1;
  s.sizes[0] = n;
  return s;
}

Strides unit1() {
  Strides s{};
  s.v[0] = 1;
  return s;
}

TEST(Sequence, ArangeAndLinspaceMatchPyTorchFormulas) {
  std::vector<float> out(200000);
  arange(out.data(), ScalarType::Float32, 200000, 1, -3.0, 0.25);
  for (int64_t i = 0; i < 200000; ++i) ASSERT_EQ(out[i], static_cast<float>(-3.0 + i * 0.25));
  std::vector<int32_t> ints(10);
  arange_int(ints.data(), ScalarType::Int32, 5, 2, 7, -3);
  EXPECT_EQ(ints[0], 7);
  EXPECT_EQ(ints[8], -5);
  std::vector<double> lin(5);
  linspace(lin.data(), ScalarType::Float64, 5, 1, 0.0, 1.0, /*fused=*/true);
  EXPECT_EQ(lin, (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0}));
  linspace(lin.data(), ScalarType::Float64, 1, 1, 2.0, 9.0, /*fused=*/true);
  EXPECT_EQ(lin[0], 2.0);
}

TEST(Sort, RowsSortStablyWithNanLast) {
  // Two rows of 5 (row stride 5), sorted along the last dim.
  std::vector<float> in = {3, NAN, 1, 3, -2, 5, 4, 4, 0, 1};
  std::vector<float> values(10);
  std::vector<int64_t> indices(10);
  Shape s;
  s.ndim = 2;
  s.sizes[0] = 2;
  s.sizes[1] = 5;
  Strides rows{};
  rows.v[0] = 5;
  rows.v[1] = 1;
  sort(s, Operand{values.data(), ScalarType::Float32, rows}, Operand{indices.data(), ScalarType::Int64, rows},
       Operand{in.data(), ScalarType::Float32, rows}, false, /*stable=*/true);
  EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.begin() + 5), (std::vector<int64_t>{4, 2, 0, 3, 1}));
  EXPECT_TRUE(std::isnan(values[4]));
  EXPECT_EQ(std::vector<int64_t>(indices.begin() + 5, indices.end()), (std::vector<int64_t>{3, 4, 1, 2, 0}));
  sort(s, Operand{values.data(), ScalarType::Float32, rows}, Operand{indices.data(), ScalarType::Int64, rows},
       Operand{in.data(), ScalarType::Float32, rows}, true, /*stable=*/true);
  EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.begin() + 5), (std::vector<int64_t>{1, 0, 3, 2, 4}));
  // topk(2) of each row, largest: 3 at 0 and 3 at 3 tie, and the CPU's
  // nth_element leaves the later one (torch.topk on the CPU gives [[1, 3], [0, 1]]).
  std::vector<float> tv(4);
  std::vector<int64_t> ti(4);
  Strides krows{};
  krows.v[0] = 2;
  krows.v[1] = 1;
  topk(s, 2, Operand{tv.data(), ScalarType::Float32, krows}, Operand{ti.data(), ScalarType::Int64, krows},
       Operand{in.data(), ScalarType::Float32, rows}, true, true);
  EXPECT_EQ(ti, (std::vector<int64_t>{1, 3, 0, 1}));  // indices within each row
}

// Note [Packed sort keys] and Note [The CPU's order among equal keys]: sort,
// topk and kth_smallest of rows with ties, NaNs (both signs), +-0,
// infinities and denormals, in every dtype with a packed path (and float64,
// which keeps the comparison sort), both directions. The expected indices are
// the CPU kernels' algorithms run here on an index permutation (a stable
// sort; std::sort; std::partial_sort or std::nth_element then std::sort;
// Sedgewick's quickselect, written out again below) with PyTorch's
// comparators (NaN above everything, NaNs and zeros tie).
// tests/test_sort_ties.py checks the same against PyTorch's CPU itself.
int64_t reference_quickselect(std::vector<double> keys, std::vector<int64_t> perm, int64_t k) {
  auto gt = [](double x, double y) { return (std::isnan(x) && !std::isnan(y)) || x > y; };
  auto swap = [&](int64_t i, int64_t j) {
    std::swap(keys[static_cast<size_t>(i)], keys[static_cast<size_t>(j)]);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  };
  int64_t lo = 0, hi = static_cast<int64_t>(keys.size()) - 1;
  for (;;) {
    if (hi <= lo) break;
    if (hi == lo + 1) {
      if (gt(keys[static_cast<size_t>(lo)], keys[static_cast<size_t>(hi)])) swap(lo, hi);
      break;
    }
    swap((lo + hi) >> 1, lo + 1);
    if (gt(keys[static_cast<size_t>(lo + 1)], keys[static_cast<size_t>(hi)])) swap(lo + 1, hi);
    if (gt(keys[static_cast<size_t>(lo)], keys[static_cast<size_t>(hi)])) swap(lo, hi);
    if (gt(keys[static_cast<size_t>(lo + 1)], keys[static_cast<size_t>(lo)])) swap(lo + 1, lo);
    int64_t i = lo + 1, j = hi;
    const double pivot = keys[static_cast<size_t>(lo)];
    for (;;) {
      do ++i; while (gt(pivot, keys[static_cast<size_t>(i)]));
      do --j; while (gt(keys[static_cast<size_t>(j)], pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
  return perm[static_cast<size_t>(k)];
}

TEST(Sort, EqualKeysComeOutAsOnTheCpu) {
  testutil::Rng rng(5);
  const int64_t rows = 6, len = 301;
  Shape s;
  s.ndim = 2;
  s.sizes[0] = rows;
  s.sizes[1] = len;
  Strides contiguous{};
  contiguous.v[0] = len;
  contiguous.v[1] = 1;
  for (ScalarType type : {ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float16, ScalarType::Int32,
                          ScalarType::Int16, ScalarType::Int8, ScalarType::UInt8, ScalarType::Bool,
                          ScalarType::Float64}) {
    testutil::Buffer in(type, rows * len);
    testutil::fill_random(in, rng, /*integer_safe=*/false);
    for (int64_t i = 0; i < rows * len; i += 3) {  // ties: copies of earlier elements
      const int64_t from = testutil::uniform(rng, 0, i);
      std::memcpy(in.element(i), in.element(from), element_size(type));
    }
    auto row_keys = [&](int64_t r) {
      std::vector<double> keys(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) keys[static_cast<size_t>(j)] = testutil::element_value(type, in.element(r * len + j));
      return keys;
    };
    auto less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
    for (bool descending : {false, true}) {
      // want[stable][r]: the row's order from a stable sort / from std::sort.
      std::vector<int64_t> want[2];
      for (int stable = 0; stable < 2; ++stable) {
        want[stable].resize(static_cast<size_t>(rows * len));
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<double> keys = row_keys(r);
          auto before = [&](int64_t a, int64_t b) {
            return descending ? less(keys[static_cast<size_t>(b)], keys[static_cast<size_t>(a)])
                              : less(keys[static_cast<size_t>(a)], keys[static_cast<size_t>(b)]);
          };
          int64_t* w = want[stable].data() + r * len;
          std::iota(w, w + len, 0);
          if (stable) {
            std::stable_sort(w, w + len, before);
          } else {
            std::sort(w, w + len, before);
          }
        }
        testutil::Buffer values(type, rows * len);
        std::vector<int64_t> indices(static_cast<size_t>(rows * len));
        sort(s, Operand{values.data(), type, contiguous}, Operand{indices.data(), ScalarType::Int64, contiguous},
             Operand{in.data(), type, contiguous}, descending, stable == 1);
        ASSERT_EQ(indices, want[stable]) << scalar_type_name(type) << (descending ? " descending" : " ascending")
                                         << (stable ? " stable" : " unstable");
      }
      // 32: the largest k of Note [Few first positions]; 33 takes the partial
      // sort; 4 * 64 < len < 5 * 64 switches the CPU from partial_sort to nth_element.
      for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{7}, int64_t{32}, int64_t{33}, len}) {
        for (bool sorted : {true, false}) {
          Strides k_rows{};
          k_rows.v[0] = k;
          k_rows.v[1] = 1;
          testutil::Buffer top(type, rows * k);
          std::vector<int64_t> top_indices(static_cast<size_t>(rows * k));
          topk(s, k, Operand{top.data(), type, k_rows}, Operand{top_indices.data(), ScalarType::Int64, k_rows},
               Operand{in.data(), type, contiguous}, descending, sorted);
          for (int64_t r = 0; r < rows; ++r) {
            const std::vector<double> keys = row_keys(r);
            auto before = [&](int64_t a, int64_t b) {
              return descending ? less(keys[static_cast<size_t>(b)], keys[static_cast<size_t>(a)])
                                : less(keys[static_cast<size_t>(a)], keys[static_cast<size_t>(b)]);
            };
            std::vector<int64_t> w(static_cast<size_t>(len));
            std::iota(w.begin(), w.end(), 0);
            if (k * 64 <= len) {
              std::partial_sort(w.begin(), w.begin() + k, w.end(), before);
            } else {
              std::nth_element(w.begin(), w.begin() + (k - 1), w.end(), before);
              if (sorted) std::sort(w.begin(), w.begin() + (k - 1), before);
            }
            ASSERT_EQ(std::vector<int64_t>(top_indices.begin() + r * k, top_indices.begin() + (r + 1) * k),
                      std::vector<int64_t>(w.begin(), w.begin() + k))
                << scalar_type_name(type) << " topk " << k << (descending ? " largest" : " smallest")
                << (sorted ? " sorted" : " unsorted") << " row " << r;
          }
        }
      }
    }
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{150}, len}) {
      if (type == ScalarType::Bool) continue;  // kthvalue has no bool kernel on the CPU
      Strides one{};
      one.v[0] = 1;
      testutil::Buffer value(type, rows);
      std::vector<int64_t> index(static_cast<size_t>(rows));
      kth_smallest(s, k, Operand{value.data(), type, one}, Operand{index.data(), ScalarType::Int64, one},
                   Operand{in.data(), type, contiguous});
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> perm(static_cast<size_t>(len));
        std::iota(perm.begin(), perm.end(), 0);
        ASSERT_EQ(index[static_cast<size_t>(r)], reference_quickselect(row_keys(r), perm, k - 1))
            << scalar_type_name(type) << " kth_smallest " << k << " row " << r;
        ASSERT_EQ(std::memcmp(value.element(r), in.element(r * len + index[static_cast<size_t>(r)]), element_size(type)), 0);
      }
    }
  }
}

TEST(Select, NonzeroAndMaskedSelectInRowMajorOrder) {
  std::vector<int32_t> in = {0, 2, 0, 5, 7, 0};
  Shape s;
  s.ndim = 2;
  s.sizes[0] = 2;
  s.sizes[1] = 3;
  Strides rows{};
  rows.v[0] = 3;
  rows.v[1] = 1;
  const Operand x{in.data(), ScalarType::Int32, rows};
  ASSERT_EQ(count_nonzero(s, x), 3);
  std::vector<int64_t> coords(6);
  nonzero(s, x, coords.data(), 2, 1);
  EXPECT_EQ(coords, (std::vector<int64_t>{0, 1, 1, 0, 1, 1}));
  std::vector<int32_t> picked(3);
  masked_select(s, x, x, Operand{picked.data(), ScalarType::Int32, unit1()});
  EXPECT_EQ(picked, (std::vector<int32_t>{2, 5, 7}));
  (void)shape1;
}

// Many chunks over several threads (Note [Two-pass compaction]), on a
// transposed view: the result is the serial row-major one.
TEST(Select, ParallelCompactionOfATransposedViewMatchesASerialWalk) {
  const int saved = num_threads();
  set_num_threads(4);
  const int64_t rows = 700, cols = 1100;  // 770K elements: 11 chunks
  std::vector<float> data(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < data.size(); ++i) data[i] = (i * 2654435761u) % 7 < 3 ? 0.0f : static_cast<float>(i);
  Shape s;
  s.ndim = 2;
  s.sizes[0] = cols;  // the view is the transpose of a rows x cols array
  s.sizes[1] = rows;
  Strides t{};
  t.v[0] = 1;
  t.v[1] = cols;
  const Operand x{data.data(), ScalarType::Float32, t};
  std::vector<int64_t> want_coords;
  std::vector<float> want_values;
  for (int64_t i = 0; i < cols; ++i) {
    for (int64_t j = 0; j < rows; ++j) {
      const float v = data[static_cast<size_t>(j * cols + i)];
      if (v == 0.0f) continue;
      want_coords.push_back(i);
      want_coords.push_back(j);
      want_values.push_back(v);
    }
  }
  const int64_t count = count_nonzero(s, x);
  ASSERT_EQ(count, static_cast<int64_t>(want_values.size()));
  std::vector<int64_t> coords(static_cast<size_t>(2 * count));
  nonzero(s, x, coords.data(), 2, 1);
  EXPECT_EQ(coords, want_coords);
  std::vector<float> values(static_cast<size_t>(count));
  masked_select(s, x, x, Operand{values.data(), ScalarType::Float32, unit1()});
  EXPECT_EQ(values, want_values);
  set_num_threads(saved);
}

// Note [Branch-free compaction]: every chunk writes exactly its own rows. A
// contiguous bool mask over many chunks, as 3-D and as 2-D (the dense-matrix
// loop of nonzero), with runs of false at the end of chunks and of the whole,
// all-true and all-false masks: the coordinates and values equal a serial
// walk, and sentinels right after the outputs survive.
TEST(Select, BranchFreeCompactionWritesNothingPastItsRows) {
  const int saved = num_threads();
  set_num_threads(4);
  const int64_t n = 5 * 300 * 700;  // 1.05M elements: 16 chunks
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i);
  for (const int ndim : {3, 2}) {
    Shape s;
    s.ndim = ndim;
    Strides c{};
    if (ndim == 3) {
      s.sizes[0] = 5;
      s.sizes[1] = 300;
      s.sizes[2] = 700;
      c.v[0] = 300 * 700;
      c.v[1] = 700;
      c.v[2] = 1;
    } else {
      s.sizes[0] = 1500;
      s.sizes[1] = 700;
      c.v[0] = 700;
      c.v[1] = 1;
    }
    for (int pattern = 0; pattern < 3; ++pattern) {
      std::vector<uint8_t> mask(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const bool random = (static_cast<uint64_t>(i) * 2654435761u) % 5 < 2;
        // Pattern 0: random, with the last 100000 elements false.
        mask[static_cast<size_t>(i)] = pattern == 0 ? (random && i < n - 100000) : pattern == 1;
      }
      const Operand m{mask.data(), ScalarType::Bool, c};
      std::vector<int64_t> want_coords;
      std::vector<float> want_values;
      for (int64_t i = 0; i < n; ++i) {
        if (!mask[static_cast<size_t>(i)]) continue;
        if (ndim == 3) {
          want_coords.insert(want_coords.end(), {i / (300 * 700), i / 700 % 300, i % 700});
        } else {
          want_coords.insert(want_coords.end(), {i / 700, i % 700});
        }
        want_values.push_back(static_cast<float>(i));
      }
      const int64_t count = count_nonzero(s, m);
      ASSERT_EQ(count, static_cast<int64_t>(want_values.size())) << "pattern " << pattern;
      std::vector<int64_t> coords(static_cast<size_t>(ndim * (count + 1)), -7);
      nonzero(s, m, coords.data(), ndim, 1);
      EXPECT_EQ(std::vector<int64_t>(coords.end() - ndim, coords.end()), std::vector<int64_t>(ndim, -7));
      coords.resize(static_cast<size_t>(ndim * count));
      EXPECT_EQ(coords, want_coords) << ndim << "-D, pattern " << pattern;
      std::vector<float> picked(static_cast<size_t>(count + 1), -7.0f);
      masked_select(s, Operand{values.data(), ScalarType::Float32, c}, m,
                    Operand{picked.data(), ScalarType::Float32, unit1()});
      EXPECT_EQ(picked.back(), -7.0f);
      picked.pop_back();
      EXPECT_EQ(picked, want_values) << ndim << "-D, pattern " << pattern;
    }
  }
  set_num_threads(saved);
}

// count_nonzero, nonzero and masked_select against their references on random
// views of every dtype (NaN, -0 and subnormal values included; masks of any
// dtype, sometimes broadcast): byte for byte.
TEST(Select, MatchesReferencesOnRandomViews) {
  using namespace testutil;
  const int saved = num_threads();
  set_num_threads(3);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng(seed);
    const Shape shape = random_shape(rng);
    const ScalarType type = kAllTypes[uniform(rng, 0, std::size(kAllTypes) - 1)];
    const ScalarType mask_type = chance(rng, 0.6) ? ScalarType::Bool : kAllTypes[uniform(rng, 0, 11)];
    const ViewLayout in_layout = random_layout(shape, rng, false), mask_layout = random_layout(shape, rng, true);
    Buffer in(type, in_layout.span), mask(mask_type, mask_layout.span);
    fill_random(in, rng, false);
    fill_random(mask, rng, false);
    const Operand x{in.element(in_layout.offset), type, in_layout.strides};
    const Operand m{mask.element(mask_layout.offset), mask_type, mask_layout.strides};
    const int64_t count = count_nonzero(shape, x);
    ASSERT_EQ(count, count_nonzero_ref(shape, x)) << "seed " << seed;
    const int64_t cols = std::max(shape.ndim, 1);
    std::vector<int64_t> coords(static_cast<size_t>(count * cols + 1), -7), want_coords = coords;
    nonzero(shape, x, coords.data(), cols, 1);
    nonzero_ref(shape, x, want_coords.data(), cols, 1);
    ASSERT_EQ(coords, want_coords) << "seed " << seed;
    const int64_t selected = count_nonzero_ref(shape, m);
    Buffer got(type, selected + 1);
    fill_random(got, rng, false);
    Buffer want = got;
    masked_select(shape, x, m, Operand{got.data(), type, unit1()});
    masked_select_ref(shape, x, m, Operand{want.data(), type, unit1()});
    ASSERT_TRUE(same_buffers(got, want)) << "seed " << seed << " " << describe(shape, in_layout.strides);
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace mlu::kernels
