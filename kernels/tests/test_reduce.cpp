// Reductions, arg-reductions and scans of every ISA against the references,
// over random shapes, strides, reduced-dim sets and dtypes.
#include "mlu_kernels/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using testutil::Buffer;
using testutil::Rng;

constexpr ScalarType kTypes[] = {ScalarType::Bool,    ScalarType::UInt8,    ScalarType::Int8,
                                 ScalarType::Int32,   ScalarType::Int64,    ScalarType::Float16,
                                 ScalarType::BFloat16, ScalarType::Float32, ScalarType::Float64};


// Summation order differs (partial accumulators), so floating results may
// differ in the last bits of a double; compare at the output's precision.
void expect_close(const Buffer& actual, const Buffer& expected, const std::string& what) {
  const ScalarType t = actual.type();
  const double rtol = t == ScalarType::Float64 ? 1e-12 : t == ScalarType::Float32 ? 1e-6 : 1e-2;
  for (int64_t i = 0; i < actual.count(); ++i) {
    const auto* a = const_cast<Buffer&>(actual).element(i);
    const auto* b = const_cast<Buffer&>(expected).element(i);
    if (testutil::same_element(t, a, b)) continue;
    const double x = testutil::element_value(t, a), y = testutil::element_value(t, b);
    ASSERT_TRUE(std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + 1e-300)
        << what << " element " << i << ": " << x << " vs " << y;
  }
}

class ReduceTest : public ::testing::TestWithParam<Isa> {};

TEST_P(ReduceTest, MatchesReferenceOnRandomViews) {
  set_isa(GetParam());
  Rng rng(99);
  const ReduceOp ops[] = {ReduceOp::Sum,   ReduceOp::Prod,  ReduceOp::Mean,  ReduceOp::Max,
                          ReduceOp::Min,   ReduceOp::AbsMax, ReduceOp::AbsMin, ReduceOp::Norm0,
                          ReduceOp::Norm1, ReduceOp::Norm2, ReduceOp::NormP, ReduceOp::All,
                          ReduceOp::Any};
  for (int iter = 0; iter < 400; ++iter) {
    const ReduceOp op = ops[iter % std::size(ops)];
    const ScalarType in_type = kTypes[testutil::uniform(rng, 0, std::size(kTypes) - 1)];
    const bool floating = in_type >= ScalarType::Float16;
    const ScalarType out_type = (op == ReduceOp::All || op == ReduceOp::Any) ? ScalarType::Bool
                                : floating                                 ? in_type
                                                                           : ScalarType::Int64;
    if (!floating && (op == ReduceOp::Mean || op == ReduceOp::Norm2 || op == ReduceOp::NormP)) continue;
    Shape shape = testutil::random_shape(rng);
    if (iter % 50 == 0) {  // long rows: partial accumulators and thread splits
      shape.ndim = 2;
      shape.sizes[0] = testutil::uniform(rng, 1, 3);
      shape.sizes[1] = 100000;
    }
    const auto in_layout = testutil::random_layout(shape, rng, /*allow_broadcast=*/false);
    Buffer in(in_type, in_layout.span);
    testutil::fill_random(in, rng, /*integer_safe=*/true);
    // Reduce a random subset of dims: out stride 0 there, contiguous elsewhere.
    Strides out_strides{};
    int64_t running = 1;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      if (testutil::chance(rng, 0.5)) {
        out_strides.v[d] = 0;
      } else {
        out_strides.v[d] = running;
        running *= std::max<int64_t>(shape.sizes[d], 1);
      }
    }
    Buffer actual(out_type, running), expected(out_type, running);
    const Operand input{in.element(in_layout.offset), in_type, in_layout.strides};
    const double p = 1.5;
    reduce(op, shape, Operand{actual.data(), out_type, out_strides}, input, p);
    reduce_ref(op, shape, Operand{expected.data(), out_type, out_strides}, input, p);
    expect_close(actual, expected, "reduce op " + std::to_string(static_cast<int>(op)) + " " +
                                       scalar_type_name(in_type));
  }
  set_isa(detected_isa());
}

TEST_P(ReduceTest, ArgReduceAndScanMatchReference) {
  set_isa(GetParam());
  Rng rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    const ScalarType type = kTypes[testutil::uniform(rng, 1, std::size(kTypes) - 1)];
    Shape shape = testutil::random_shape(rng);
    if (shape.ndim == 0) continue;
    if (shape.sizes[shape.ndim - 1] == 0) shape.sizes[shape.ndim - 1] = 3;
    const auto in_layout = testutil::random_layout(shape, rng, false);
    Buffer in(type, in_layout.span);
    testutil::fill_random(in, rng, /*integer_safe=*/iter % 2 == 0);
    const Operand input{in.element(in_layout.offset), type, in_layout.strides};
    // Row outputs: contiguous over the outer dims, stride 0 along the row.
    Strides row_strides{};
    int64_t rows = 1;
    for (int d = shape.ndim - 2; d >= 0; --d) {
      row_strides.v[d] = rows;
      rows *= shape.sizes[d];
    }
    Buffer vals(type, rows), vals_ref(type, rows), idx(ScalarType::Int64, rows), idx_ref(ScalarType::Int64, rows);
    const bool is_max = iter % 3 != 0;
    arg_reduce(is_max, shape, Operand{vals.data(), type, row_strides}, Operand{idx.data(), ScalarType::Int64, row_strides}, input);
    arg_reduce_ref(is_max, shape, Operand{vals_ref.data(), type, row_strides},
                   Operand{idx_ref.data(), ScalarType::Int64, row_strides}, input);
    expect_close(idx, idx_ref, "arg_reduce indices");
    expect_close(vals, vals_ref, "arg_reduce values");
    // Scan into a contiguous output of the accumulation-friendly dtype.
    const auto out_layout = testutil::random_layout(shape, rng, false);
    const ScalarType out_type = type >= ScalarType::Float16 ? type : ScalarType::Int64;
    Buffer out(out_type, out_layout.span), out_ref(out_type, out_layout.span);
    const ScanOp op = iter % 2 ? ScanOp::Sum : ScanOp::Prod;
    scan(op, shape, Operand{out.element(out_layout.offset), out_type, out_layout.strides}, input);
    scan_ref(op, shape, Operand{out_ref.element(out_layout.offset), out_type, out_layout.strides}, input);
    expect_close(out, out_ref, "scan");
  }
  set_isa(detected_isa());
}

std::vector<Isa> isas() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) v.push_back(isa);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ReduceTest, ::testing::ValuesIn(isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(Reduce, EmptyReductionsGiveIdentities) {
  float in[1] = {0};
  float out[1] = {-1};
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = 0;
  Strides zero{};
  reduce(ReduceOp::Sum, shape, Operand{out, ScalarType::Float32, zero}, Operand{in, ScalarType::Float32, zero});
  EXPECT_EQ(out[0], 0.0f);
  reduce(ReduceOp::Prod, shape, Operand{out, ScalarType::Float32, zero}, Operand{in, ScalarType::Float32, zero});
  EXPECT_EQ(out[0], 1.0f);
  reduce(ReduceOp::Mean, shape, Operand{out, ScalarType::Float32, zero}, Operand{in, ScalarType::Float32, zero});
  EXPECT_TRUE(std::isnan(out[0]));
}

// Note [Float chunks in sums]: float sums fold in float only 16 steps per
// accumulator before widening to double. Every element is 1 + 2^-20: a sum of
// up to 16 of them is exact in float, so the result is exact (n + n * 2^-20,
// a float here); an accumulator that stayed float for longer would drop the
// 2^-20 parts once it passed 16 (n / 64 steps per lane: 16 ulp off at 2^20).
TEST_P(ReduceTest, FloatSumsWidenEvery16Steps) {
  set_isa(GetParam());
  constexpr float kOne = 1.0f + 0x1.0p-20f;
  // A row along the contiguous dim (inner mode) and columns (outer mode).
  for (const auto& [rows, cols, reduced_dim] : {std::tuple<int64_t, int64_t, int>{1, int64_t{1} << 20, 1},
                                               std::tuple<int64_t, int64_t, int>{int64_t{1} << 16, 16, 0}}) {
    std::vector<float> in(static_cast<size_t>(rows * cols), kOne);
    const int64_t n = reduced_dim == 1 ? cols : rows;
    const int64_t outputs = reduced_dim == 1 ? rows : cols;
    std::vector<float> out(static_cast<size_t>(outputs), -1.0f);
    Shape shape;
    shape.ndim = 2;
    shape.sizes[0] = rows;
    shape.sizes[1] = cols;
    Strides out_strides{};
    out_strides.v[1 - reduced_dim] = 1;
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Norm1, ReduceOp::Mean}) {
      reduce(op, shape, Operand{out.data(), ScalarType::Float32, out_strides},
             Operand{in.data(), ScalarType::Float32, Strides{{cols, 1}}});
      const double exact = static_cast<double>(n) * kOne;
      const float expected = static_cast<float>(op == ReduceOp::Mean ? exact / static_cast<double>(n) : exact);
      EXPECT_EQ(std::count(out.begin(), out.end(), expected), outputs)
          << "op " << static_cast<int>(op) << ", dim " << reduced_dim << ": " << out[0] << " vs " << expected;
    }
  }
  set_isa(detected_isa());
}

// Note [Scans by columns]: scans whose rows are neighbours in memory in the
// input or the output (reduce_isa.cpp scan_typed), the other operand dense
// the same way or transposed (its rows contiguous, far apart): against the
// reference for widths around the block size, lengths around the tile's 16
// steps, several dtypes.
TEST_P(ReduceTest, ScanByColumnsMatchesReference) {
  set_isa(GetParam());
  Rng rng(9);
  for (ScalarType type : {ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float64, ScalarType::Int32}) {
    for (int64_t width : {16, 63, 64, 65, 130}) {
      for (int layout = 0; layout < 3; ++layout) {  // both by columns, input transposed, output transposed
        // [3, width, len], scanned along the last dim (as the glue's Rows
        // move it); "by columns": width is the innermost dim in memory.
        const int64_t len = layout == 0 ? testutil::uniform(rng, 2, 12) : std::vector<int64_t>{5, 16, 17, 40}[
                                                                              testutil::uniform(rng, 0, 3)];
        Shape moved;
        moved.ndim = 3;
        moved.sizes[0] = 3;
        moved.sizes[1] = width;
        moved.sizes[2] = len;
        Strides by_columns{}, transposed{};
        by_columns.v[0] = transposed.v[0] = width * len;
        by_columns.v[1] = 1;
        by_columns.v[2] = width;
        transposed.v[1] = len;
        transposed.v[2] = 1;
        const Strides in_strides = layout == 1 ? transposed : by_columns;
        const Strides out_strides = layout == 2 ? transposed : by_columns;
        const int64_t n = numel(moved);
        Buffer in(type, n), out(type, n), ref(type, n);
        testutil::fill_random(in, rng, /*integer_safe=*/true);
        // Products of up to 12 values up to 127 stay finite in float and in int64.
        for (ScanOp op : {ScanOp::Sum, ScanOp::Prod}) {
          if (op == ScanOp::Prod && len > 12) continue;
          scan(op, moved, Operand{out.data(), type, out_strides}, Operand{in.data(), type, in_strides});
          scan_ref(op, moved, Operand{ref.data(), type, out_strides}, Operand{in.data(), type, in_strides});
          expect_close(out, ref, "scan by columns, width " + std::to_string(width) + ", length " +
                                     std::to_string(len) + ", layout " + std::to_string(layout));
        }
      }
    }
  }
  set_isa(detected_isa());
}

// Writes v at p as a floating `type`.
void put_floating(ScalarType type, unsigned char* p, double v) {
  switch (type) {
    case ScalarType::Float64: std::memcpy(p, &v, 8); break;
    case ScalarType::Float32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case ScalarType::Float16: { const Half h = half_from_float(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    default: { const BFloat16 h = bfloat16_from_float(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
  }
}

// Arg-reductions over a dim that is not the innermost, with a contiguous
// innermost dim, go by blocks of columns: ties, signed zeros, infinities and
// NaN must give the reference's first index; outputs strided.
TEST_P(ReduceTest, ArgReduceByColumnsKeepsTheFirstExtreme) {
  set_isa(GetParam());
  Rng rng(4);
  const float pool[] = {1.5f, -2.0f, 0.0f, -0.0f, 7.0f, 7.0f, -INFINITY, INFINITY, NAN, -9.0f};
  for (ScalarType type : {ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float64, ScalarType::Int32}) {
    for (int64_t width : {16, 64, 65, 130}) {
      const int64_t len = testutil::uniform(rng, 1, 40);
      Shape moved;  // rows: the columns of a len x width matrix
      moved.ndim = 2;
      moved.sizes[0] = width;
      moved.sizes[1] = len;
      Strides in_strides{}, out_strides{};
      in_strides.v[0] = 1;
      in_strides.v[1] = width;
      out_strides.v[0] = 2;  // every other element
      Buffer in(type, len * width);
      const int specials = testutil::uniform(rng, 0, 9);
      for (int64_t i = 0; i < in.count(); ++i) {
        const double v = pool[testutil::uniform(rng, 0, specials)];
        if (type == ScalarType::Int32) {
          const int32_t k = std::isfinite(v) ? static_cast<int32_t>(v) : 3;
          std::memcpy(in.element(i), &k, 4);
        } else {
          put_floating(type, in.element(i), v);
        }
      }
      for (bool is_max : {true, false}) {
        Buffer vals(type, 2 * width), vals_ref(type, 2 * width);
        Buffer idx(ScalarType::Int64, 2 * width), idx_ref(ScalarType::Int64, 2 * width);
        std::memset(vals.data(), 0, vals.bytes());
        std::memset(vals_ref.data(), 0, vals_ref.bytes());
        std::memset(idx.data(), 0, idx.bytes());
        std::memset(idx_ref.data(), 0, idx_ref.bytes());
        const Operand input{in.data(), type, in_strides};
        arg_reduce(is_max, moved, Operand{vals.data(), type, out_strides},
                   Operand{idx.data(), ScalarType::Int64, out_strides}, input);
        arg_reduce_ref(is_max, moved, Operand{vals_ref.data(), type, out_strides},
                       Operand{idx_ref.data(), ScalarType::Int64, out_strides}, input);
        ASSERT_EQ(std::memcmp(idx.data(), idx_ref.data(), idx.bytes()), 0) << "width " << width << " max " << is_max;
        ASSERT_EQ(std::memcmp(vals.data(), vals_ref.data(), vals.bytes()), 0) << "width " << width;
      }
    }
  }
  set_isa(detected_isa());
}

// Contiguous floating rows of 16 and more take the vectorised search
// (reduce_isa.cpp first_extreme): ties, signed zeros, infinities and NaN
// must give the sequential scan's first index, on every ISA.
TEST_P(ReduceTest, ArgReduceOfLongRowsKeepsTheFirstExtreme) {
  set_isa(GetParam());
  Rng rng(3);
  const float pool[] = {1.5f, -2.0f, 0.0f, -0.0f, 7.0f, 7.0f, -INFINITY, INFINITY, NAN, -9.0f};
  for (ScalarType type : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16, ScalarType::Float16}) {
    for (int iter = 0; iter < 60; ++iter) {
      Shape shape;
      shape.ndim = 2;
      shape.sizes[0] = testutil::uniform(rng, 1, 5);
      shape.sizes[1] = testutil::uniform(rng, 16, 300);
      Strides dense{}, rows{};
      dense.v[0] = shape.sizes[1];
      dense.v[1] = 1;
      rows.v[0] = 1;
      Buffer in(type, shape.sizes[0] * shape.sizes[1]);
      const int specials = testutil::uniform(rng, 0, 9);  // values drawn from pool[0..specials]
      for (int64_t i = 0; i < in.count(); ++i) {
        const double v = pool[testutil::uniform(rng, 0, specials)];
        put_floating(type, in.element(i), v);
      }
      for (bool is_max : {true, false}) {
        Buffer vals(type, shape.sizes[0]), vals_ref(type, shape.sizes[0]);
        Buffer idx(ScalarType::Int64, shape.sizes[0]), idx_ref(ScalarType::Int64, shape.sizes[0]);
        const Operand input{in.data(), type, dense};
        arg_reduce(is_max, shape, Operand{vals.data(), type, rows}, Operand{idx.data(), ScalarType::Int64, rows},
                   input);
        arg_reduce_ref(is_max, shape, Operand{vals_ref.data(), type, rows},
                       Operand{idx_ref.data(), ScalarType::Int64, rows}, input);
        ASSERT_EQ(std::memcmp(idx.data(), idx_ref.data(), idx.bytes()), 0) << "indices, max " << is_max;
        ASSERT_EQ(std::memcmp(vals.data(), vals_ref.data(), vals.bytes()), 0) << "values, max " << is_max;
      }
    }
  }
  set_isa(detected_isa());
}

TEST(Reduce, NanPropagatesThroughMaxAndArgmax) {
  float in[4] = {1, NAN, 3, NAN};
  float out[1];
  int64_t index[1];
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = 4;
  Strides unit{}, zero{};
  unit.v[0] = 1;
  reduce(ReduceOp::Max, shape, Operand{out, ScalarType::Float32, zero}, Operand{in, ScalarType::Float32, unit});
  EXPECT_TRUE(std::isnan(out[0]));
  arg_reduce(false, shape, Operand{out, ScalarType::Float32, zero}, Operand{index, ScalarType::Int64, zero},
             Operand{in, ScalarType::Float32, unit});
  EXPECT_EQ(index[0], 1);
}

// One-pass statistics of spans (and of differences of two) against the
// element-by-element reference: every floating dtype, lengths around the
// lanes and the chunks, special values; the bits independent of threads.
TEST_P(ReduceTest, StatisticsMatchReferenceAndIgnoreTheThreadCount) {
  set_isa(GetParam());
  Rng rng(7);
  std::uniform_real_distribution<double> value(-3, 5);
  const ScalarType types[] = {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32, ScalarType::Float64};
  for (ScalarType type : types) {
    const auto size = static_cast<int64_t>(element_size(type));
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{100}, int64_t{16384}, int64_t{40001}}) {
      for (int special = 0; special < 4; ++special) {  // none, NaN, +Inf, +Inf and -Inf
        std::vector<unsigned char> a(static_cast<size_t>(n * size)), b(a.size());
        for (int64_t i = 0; i < n; ++i) {
          put_floating(type, a.data() + i * size, value(rng));
          put_floating(type, b.data() + i * size, value(rng));
        }
        if (special == 1) put_floating(type, a.data() + (n / 2) * size, NAN);
        if (special >= 2) put_floating(type, a.data() + (n - 1) * size, INFINITY);
        if (special == 3) put_floating(type, a.data(), -INFINITY);
        for (bool difference : {false, true}) {
          const StatisticsSpan span{a.data(), difference ? b.data() : nullptr, type, n};
          double got[kStatistics], want[kStatistics], serial[kStatistics];
          statistics(&span, 1, got);
          statistics_ref(&span, 1, want);
          const int threads = num_threads();
          set_num_threads(1);
          statistics(&span, 1, serial);
          set_num_threads(threads);
          const std::string what = std::string(scalar_type_name(type)) + " n" + std::to_string(n) + " special" +
                                   std::to_string(special) + (difference ? " difference" : "");
          for (int k = 0; k < kStatistics; ++k) {
            EXPECT_EQ(std::memcmp(&got[k], &serial[k], sizeof(double)), 0) << what << " statistic " << k;
            if (std::isnan(want[k]) || std::isinf(want[k])) {
              EXPECT_TRUE(std::isnan(want[k]) ? std::isnan(got[k]) : got[k] == want[k])
                  << what << " statistic " << k << ": " << got[k] << " vs " << want[k];
            } else {
              // 16- and 32-bit floats fold in float within a block (the reference in double).
              const double rtol = type == ScalarType::Float64 ? 1e-12 : 1e-6;
              const double scale = std::max({1.0, std::abs(want[k]), k == 1 ? want[2] : 0.0});
              EXPECT_NEAR(got[k], want[k], rtol * scale) << what << " statistic " << k;
            }
          }
          if (special == 1) {
            EXPECT_TRUE(std::isnan(got[5]) && std::isnan(got[3]) && std::isnan(got[4])) << what;
          }
          if (special == 2) {
            EXPECT_TRUE(std::isinf(got[5]) && got[4] == INFINITY) << what;
          }
        }
      }
    }
  }
  set_isa(detected_isa());
}

TEST(Reduce, StatisticsOfKnownValues) {
  const float in[4] = {1, 2, 3, 6};
  const float minus[4] = {1, 1, 1, 1};
  const StatisticsSpan spans[2] = {{in, nullptr, ScalarType::Float32, 4}, {in, minus, ScalarType::Float32, 4}};
  double out[2 * kStatistics];
  statistics(spans, 2, out);
  const double want[2 * kStatistics] = {4, 3, std::sqrt(3.5), 1, 6, std::sqrt(50.0),
                                        4, 2, std::sqrt(3.5), 0, 5, std::sqrt(30.0)};
  for (int k = 0; k < 2 * kStatistics; ++k) EXPECT_DOUBLE_EQ(out[k], want[k]) << "statistic " << k;
}

}  // namespace
}  // namespace mlu::kernels
