#include "mlu_kernels/index.h"
#include "mlu_kernels/half.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

Shape shape2(int64_t a, int64_t b) {
  Shape s;
  s.ndim = 2;
  s.sizes[0] = a;
  s.sizes[1] = b;
  return s;
}

Strides strides2(int64_t a, int64_t b) {
  Strides s{};
  s.v[0] = a;
  s.v[1] = b;
  return s;
}

// gather along dim 1 of a 3x4 input with a 3x2 index, against a loop.
TEST(Index, GatherAlongEitherDim) {
  std::vector<float> in(12);
  for (int i = 0; i < 12; ++i) in[i] = static_cast<float>(i);
  std::vector<int64_t> index = {3, 0, 1, 1, 2, 3};
  std::vector<float> out(6, -1);
  auto check = gather(shape2(3, 2), 1, Operand{out.data(), ScalarType::Float32, strides2(2, 1)},
                      Operand{in.data(), ScalarType::Float32, strides2(4, 1)}, 4,
                      Operand{index.data(), ScalarType::Int64, strides2(2, 1)});
  ASSERT_TRUE(check.ok);
  EXPECT_EQ(out, (std::vector<float>{3, 0, 5, 5, 10, 11}));
  // dim 0: out[i][j] = in[index[i][j]][j]
  std::vector<int32_t> index0 = {2, 0, 1, 0};
  std::vector<float> out0(4);
  check = gather(shape2(2, 2), 0, Operand{out0.data(), ScalarType::Float32, strides2(2, 1)},
                 Operand{in.data(), ScalarType::Float32, strides2(4, 1)}, 3,
                 Operand{index0.data(), ScalarType::Int32, strides2(2, 1)});
  ASSERT_TRUE(check.ok);
  EXPECT_EQ(out0, (std::vector<float>{8, 1, 4, 1}));
}

TEST(Index, OutOfRangeIsReportedAndSkipped) {
  std::vector<double> in = {1, 2, 3};
  std::vector<int64_t> index = {0, 5, -1};
  std::vector<double> out(3, 0);
  Shape s;
  s.ndim = 1;
  s.sizes[0] = 3;
  Strides unit{};
  unit.v[0] = 1;
  auto check = gather(s, 0, Operand{out.data(), ScalarType::Float64, unit}, Operand{in.data(), ScalarType::Float64, unit},
                      3, Operand{index.data(), ScalarType::Int64, unit});
  EXPECT_FALSE(check.ok);
  EXPECT_TRUE(check.bad_index == 5 || check.bad_index == -1);
  EXPECT_EQ(out[0], 1);
}

// Note [Vector gathers]: contiguous rows of 2-, 4- and 8-byte elements with
// int32 and int64 indices, rows not a multiple of 8 long, an index past the
// end and a negative one: on every ISA the result is the loop's (a bad element
// reads element 0 of its row) and a bad value is reported.
template <class T, class I>
void check_contiguous_gather_rows(ScalarType dtype, ScalarType index_dtype) {
  const int64_t rows = 70, len = 37, in_len = 29;  // 70 rows: the rows split over the threads
  std::vector<T> in(rows * in_len);
  for (size_t k = 0; k < in.size(); ++k) {
    const uint64_t bits = 0x9E3779B97F4A7C15ull * (k + 1);
    std::memcpy(&in[k], &bits, sizeof(T));
  }
  std::vector<I> index(rows * len);
  for (size_t k = 0; k < index.size(); ++k) index[k] = static_cast<I>((k * 7 + k / len) % in_len);
  index[40 * len + 11] = static_cast<I>(in_len);  // out of range
  index[10 * len + 20] = static_cast<I>(-3);
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    const Isa saved = active_isa();
    set_isa(isa);
    std::vector<T> out(rows * len);
    const IndexCheck check = gather(shape2(rows, len), 1, Operand{out.data(), dtype, strides2(len, 1)},
                                    Operand{in.data(), dtype, strides2(in_len, 1)}, in_len,
                                    Operand{index.data(), index_dtype, strides2(len, 1)});
    set_isa(saved);
    EXPECT_FALSE(check.ok);
    EXPECT_TRUE(check.bad_index == in_len || check.bad_index == -3) << check.bad_index;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < len; ++j) {
        const bool bad = (r == 40 && j == 11) || (r == 10 && j == 20);
        const int64_t i = bad ? 0 : static_cast<int64_t>(index[r * len + j]);
        ASSERT_EQ(std::memcmp(&out[r * len + j], &in[r * in_len + i], sizeof(T)), 0)
            << isa_name(isa) << " row " << r << " element " << j;
      }
    }
  }
}

TEST(Index, ContiguousGatherRowsOnEveryIsa) {
  set_num_threads(2);
  check_contiguous_gather_rows<float, int64_t>(ScalarType::Float32, ScalarType::Int64);
  check_contiguous_gather_rows<float, int32_t>(ScalarType::Float32, ScalarType::Int32);
  check_contiguous_gather_rows<double, int64_t>(ScalarType::Float64, ScalarType::Int64);
  check_contiguous_gather_rows<int64_t, int32_t>(ScalarType::Int64, ScalarType::Int32);
  check_contiguous_gather_rows<BFloat16, int64_t>(ScalarType::BFloat16, ScalarType::Int64);
}

TEST(Index, ScatterAddAccumulatesDuplicatesInOrder) {
  set_num_threads(2);
  const int64_t rows = 5000, cols = 7;
  std::vector<float> self(rows * 3, 0), src(rows * cols);
  std::vector<int64_t> index(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      src[r * cols + c] = static_cast<float>(c + 1);
      index[r * cols + c] = c % 3;
    }
  }
  auto check = scatter(ScatterOp::Add, shape2(rows, cols), 1, Operand{self.data(), ScalarType::Float32, strides2(3, 1)}, 3,
                       Operand{src.data(), ScalarType::Float32, strides2(cols, 1)},
                       Operand{index.data(), ScalarType::Int64, strides2(cols, 1)}, 2.0);
  ASSERT_TRUE(check.ok);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(self[r * 3 + 0], 2 * (1 + 4 + 7));
    EXPECT_EQ(self[r * 3 + 1], 2 * (2 + 5));
    EXPECT_EQ(self[r * 3 + 2], 2 * (3 + 6));
  }
}

// index_add / index_reduce(prod) style slices (the index varies along the
// scattered dim only) of float32 and float64: repeated positions update in
// index order, Add scales by alpha, Mul multiplies; exactly the scalar loop.
template <class T>
void check_slice_scatter(ScalarType dtype, ScatterOp op) {
  set_num_threads(2);
  const int64_t len = 6, cols = 700, dim_size = 4;
  const int64_t positions[len] = {2, 0, 2, 3, 1, 2};
  std::vector<T> self(dim_size * cols), src(len * cols);
  for (size_t k = 0; k < self.size(); ++k) self[k] = static_cast<T>(0.25 * static_cast<double>(k % 13) + 1);
  for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<T>(0.125 * static_cast<double>(k % 11) - 0.5);
  std::vector<T> expected = self;
  const T alpha = static_cast<T>(0.75);
  for (int64_t j = 0; j < len; ++j) {
    for (int64_t c = 0; c < cols; ++c) {
      T& d = expected[positions[j] * cols + c];
      const T v = src[j * cols + c];
      d = op == ScatterOp::Add ? static_cast<T>(d + alpha * v) : static_cast<T>(d * v);
    }
  }
  const auto check = scatter(op, shape2(len, cols), 0, Operand{self.data(), dtype, strides2(cols, 1)}, dim_size,
                             Operand{src.data(), dtype, strides2(cols, 1)},
                             Operand{const_cast<int64_t*>(positions), ScalarType::Int64, strides2(1, 0)}, 0.75);
  ASSERT_TRUE(check.ok);
  for (size_t k = 0; k < self.size(); ++k) ASSERT_EQ(self[k], expected[k]) << k;
}

TEST(Index, SliceScattersOfFullPrecisionFloats) {
  check_slice_scatter<float>(ScalarType::Float32, ScatterOp::Add);
  check_slice_scatter<float>(ScalarType::Float32, ScatterOp::Mul);
  check_slice_scatter<double>(ScalarType::Float64, ScatterOp::Add);
  check_slice_scatter<double>(ScalarType::Float64, ScatterOp::Mul);
}

// Note [Scatter accumulation in float]: BFloat16 sums hit by several indices
// round once (11.9375 - 1.09375 - 12.1875: -1.34375; step by step -1.3125),
// through index_add-style slices (values hit once, twice and three times,
// with a bad index) and through full-index scatters; round_each_update
// restores the step-by-step rounding.
TEST(Index, ReducedPrecisionSumsRoundOnce) {
  const auto bf = [](float v) { return bfloat16_from_float(v); };
  const int64_t cols = 40;
  const float row_values[5] = {-1.09375f, -12.1875f, 0.5f, 2.0f, 3.0f};
  const int64_t index[5] = {0, 0, 2, 7, 1};  // 7 is out of range
  for (bool round_each_update : {false, true}) {
    std::vector<BFloat16> self(3 * cols, bf(11.9375f)), src(5 * cols);
    for (int64_t r = 0; r < 5; ++r) {
      for (int64_t c = 0; c < cols; ++c) src[r * cols + c] = bf(row_values[r]);
    }
    Strides index_strides{};
    index_strides.v[0] = 1;  // the 1-D index along dim 0, broadcast along dim 1
    const IndexCheck check = scatter(ScatterOp::Add, shape2(5, cols), 0,
                                     Operand{self.data(), ScalarType::BFloat16, strides2(cols, 1)}, 3,
                                     Operand{src.data(), ScalarType::BFloat16, strides2(cols, 1)},
                                     Operand{const_cast<int64_t*>(index), ScalarType::Int64, index_strides}, 1.0,
                                     round_each_update);
    EXPECT_FALSE(check.ok);
    EXPECT_EQ(check.bad_index, 7);
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(to_float(self[c]), round_each_update ? -1.3125f : -1.34375f) << c;
      ASSERT_EQ(to_float(self[cols + c]), to_float(bf(11.9375f + 3.0f)));        // hit once
      ASSERT_EQ(to_float(self[2 * cols + c]), to_float(bf(11.9375f + 0.5f)));    // hit once
    }
  }
  // A full index along dim 1: every row sums two updates into element 0;
  // element 2, never indexed, keeps its bits (a signaling NaN) through the
  // whole-row conversion.
  std::vector<BFloat16> self(4 * 3, bf(11.9375f)), src(4 * 2);
  std::vector<int64_t> full(4 * 2, 0);
  for (int64_t r = 0; r < 4; ++r) {
    src[r * 2] = bf(-1.09375f);
    src[r * 2 + 1] = bf(-12.1875f);
    self[r * 3 + 2] = BFloat16{0x7F81};
  }
  ASSERT_TRUE(scatter(ScatterOp::Add, shape2(4, 2), 1, Operand{self.data(), ScalarType::BFloat16, strides2(3, 1)}, 3,
                      Operand{src.data(), ScalarType::BFloat16, strides2(2, 1)},
                      Operand{full.data(), ScalarType::Int64, strides2(2, 1)})
                  .ok);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(to_float(self[r * 3]), -1.34375f) << r;
    EXPECT_EQ(to_float(self[r * 3 + 1]), 11.9375f) << r;
    EXPECT_EQ(self[r * 3 + 2].x, 0x7F81) << r;
  }
}

// A full-index BFloat16 scatter_add (accumulated in float, whole rows
// converted) with an index past the end and a negative one: both are
// reported and skipped, the row's other updates land.
TEST(Index, ReducedPrecisionScatterSkipsBadIndices) {
  auto bf = [](float f) { return bfloat16_from_float(f); };
  const int64_t rows = 3, len = 5, dim_size = 4;
  // One bad value per run, in the middle row only: that row's check must
  // see it (dim_size is the first value out of range, -1 the last below).
  for (const int64_t bad : {dim_size, int64_t{-1}}) {
    std::vector<BFloat16> self(rows * dim_size, bf(1.0f)), src(rows * len, bf(2.0f));
    std::vector<int64_t> index = {0, 1, 2, 3, 0, 1, bad, 1, 2, 2, 3, 3, 3, 3, 3};
    const IndexCheck check = scatter(ScatterOp::Add, shape2(rows, len), 1,
                                     Operand{self.data(), ScalarType::BFloat16, strides2(dim_size, 1)}, dim_size,
                                     Operand{src.data(), ScalarType::BFloat16, strides2(len, 1)},
                                     Operand{index.data(), ScalarType::Int64, strides2(len, 1)});
    EXPECT_FALSE(check.ok);
    EXPECT_EQ(check.bad_index, bad);
    const float expected[rows][dim_size] = {{5, 3, 3, 3}, {1, 5, 5, 1}, {1, 1, 1, 11}};
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < dim_size; ++k) EXPECT_EQ(to_float(self[r * dim_size + k]), expected[r][k]) << r << k;
    }
  }
}

TEST(Index, ScatterAssignMaxMinWithBroadcastScalar) {
  std::vector<int32_t> self = {5, 5, 5, 5};
  int32_t value = 9;
  std::vector<int64_t> index = {1, 3};
  Shape s;
  s.ndim = 1;
  s.sizes[0] = 2;
  Strides unit{}, zero{};
  unit.v[0] = 1;
  auto check = scatter(ScatterOp::Assign, s, 0, Operand{self.data(), ScalarType::Int32, unit}, 4,
                       Operand{&value, ScalarType::Int32, zero}, Operand{index.data(), ScalarType::Int64, unit});
  ASSERT_TRUE(check.ok);
  EXPECT_EQ(self, (std::vector<int32_t>{5, 9, 5, 9}));
  value = 1;
  scatter(ScatterOp::Min, s, 0, Operand{self.data(), ScalarType::Int32, unit}, 4, Operand{&value, ScalarType::Int32, zero},
          Operand{index.data(), ScalarType::Int64, unit});
  EXPECT_EQ(self, (std::vector<int32_t>{5, 1, 5, 1}));
}

// gather against gather_ref on random views and dims, every dtype, both index
// types, on every ISA the CPU has: byte for byte, the whole output buffer.
TEST(Index, GatherMatchesReferenceOnRandomViews) {
  using namespace testutil;
  const int saved_threads = num_threads();
  const Isa saved_isa = active_isa();
  set_num_threads(3);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng(seed);
    Shape shape = random_shape(rng);
    if (shape.ndim == 0) {
      shape.ndim = 1;
      shape.sizes[0] = uniform(rng, 1, 9);
    }
    const int dim = static_cast<int>(uniform(rng, 0, shape.ndim - 1));
    const int64_t dim_size = uniform(rng, 1, 9);
    Shape in_shape = shape;
    in_shape.sizes[dim] = dim_size;
    const ScalarType type = kAllTypes[uniform(rng, 0, std::size(kAllTypes) - 1)];
    const ScalarType index_type = chance(rng, 0.5) ? ScalarType::Int64 : ScalarType::Int32;
    const ViewLayout in_layout = random_layout(in_shape, rng, false), out_layout = random_layout(shape, rng, false);
    const ViewLayout index_layout = random_layout(shape, rng, true);
    Buffer in(type, in_layout.span), index(index_type, index_layout.span), want(type, out_layout.span);
    fill_random(in, rng, false);
    fill_random(want, rng, false);
    for (int64_t k = 0; k < index.count(); ++k) {
      const int64_t v = uniform(rng, 0, dim_size - 1);
      if (index_type == ScalarType::Int64) {
        std::memcpy(index.element(k), &v, 8);
      } else {
        const auto v32 = static_cast<int32_t>(v);
        std::memcpy(index.element(k), &v32, 4);
      }
    }
    const Operand src{in.element(in_layout.offset), type, in_layout.strides};
    const Operand idx{index.element(index_layout.offset), index_type, index_layout.strides};
    const Buffer before = want;
    ASSERT_TRUE(
        gather_ref(shape, dim, Operand{want.element(out_layout.offset), type, out_layout.strides}, src, dim_size, idx)
            .ok);
    for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
      if (static_cast<int>(isa) > static_cast<int>(detected_isa())) break;
      set_isa(isa);
      Buffer got = before;
      ASSERT_TRUE(
          gather(shape, dim, Operand{got.element(out_layout.offset), type, out_layout.strides}, src, dim_size, idx).ok);
      ASSERT_TRUE(same_buffers(got, want)) << "seed " << seed << " isa " << isa_name(isa) << " dim " << dim << " "
                                           << describe(shape, out_layout.strides);
    }
  }
  set_isa(saved_isa);
  set_num_threads(saved_threads);
}

}  // namespace
}  // namespace mlu::kernels
