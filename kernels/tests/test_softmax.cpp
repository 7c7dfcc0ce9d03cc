// softmax / softmax_backward against their references on random shapes,
// dims, layouts and dtypes on every ISA; rows with NaN and -inf; in place.
#include "mlu_kernels/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

double tolerance(ScalarType t) {
  return t == ScalarType::Float64 ? 1e-12 : t == ScalarType::Float32 ? 2e-5 : 2e-2;
}

::testing::AssertionResult close_buffers(const Buffer& a, const Buffer& b, double rtol) {
  for (int64_t i = 0; i < a.count(); ++i) {
    const double x = element_value(a.type(), a.data() + i * element_size(a.type()));
    const double y = element_value(b.type(), b.data() + i * element_size(b.type()));
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + rtol)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

class SoftmaxTest : public ::testing::TestWithParam<Isa> {};

TEST_P(SoftmaxTest, MatchesReferenceOnRandomViews) {
  if (GetParam() > detected_isa()) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
  const Isa saved = active_isa();
  set_isa(GetParam());
  Rng rng(7);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16};
  for (int trial = 0; trial < 300; ++trial) {
    const Shape shape = random_shape(rng);
    const int dim = shape.ndim == 0 ? 0 : static_cast<int>(uniform(rng, 0, shape.ndim - 1));
    const ScalarType type = types[uniform(rng, 0, 3)];
    const ScalarType out_type = type == ScalarType::Float16 && chance(rng, 0.3) ? ScalarType::Float32 : type;
    const bool log = chance(rng, 0.5);
    const ViewLayout li = random_layout(shape, rng, false), lo = random_layout(shape, rng, false),
                     lg = random_layout(shape, rng, false);
    Buffer in(type, li.span), out(out_type, lo.span), ref(out_type, lo.span), grad(out_type, lg.span),
        gin(type, li.span), gin_ref(type, li.span);
    fill_normal(in, rng, 3);
    fill_normal(grad, rng, 1);
    if (chance(rng, 0.1) && in.count() > 0 && (type == ScalarType::Float32 || type == ScalarType::Float64)) {
      const double specials[] = {NAN, -INFINITY, INFINITY, 1e4};  // somewhere in the buffer
      const double v = specials[uniform(rng, 0, 3)];
      const float f = static_cast<float>(v);
      unsigned char* at = in.element(uniform(rng, 0, in.count() - 1));
      if (type == ScalarType::Float64) std::memcpy(at, &v, 8); else std::memcpy(at, &f, 4);
    }
    const Operand o{out.data() + lo.offset * element_size(out_type), out_type, lo.strides};
    const Operand r{ref.data() + lo.offset * element_size(out_type), out_type, lo.strides};
    const Operand x{in.data() + li.offset * element_size(type), type, li.strides};
    softmax(shape, dim, o, x, log);
    softmax_ref(shape, dim, r, x, log);
    ASSERT_TRUE(close_buffers(out, ref, tolerance(type))) << describe(shape, li.strides) << " dim " << dim
                                                          << " log " << log;
    const Operand g{grad.data() + lg.offset * element_size(out_type), out_type, lg.strides};
    const Operand gi{gin.data() + li.offset * element_size(type), type, li.strides};
    const Operand gr{gin_ref.data() + li.offset * element_size(type), type, li.strides};
    softmax_backward(shape, dim, gi, g, r, log);
    softmax_backward_ref(shape, dim, gr, g, r, log);
    ASSERT_TRUE(close_buffers(gin, gin_ref, tolerance(type) * 10)) << "backward " << describe(shape, li.strides)
                                                                   << " dim " << dim << " log " << log;
  }
  set_isa(saved);
}

// Softmax over a dim that is not the innermost, on layouts whose innermost
// dim is contiguous (the column blocks, Note [Softmax by columns]): widths
// around the block size, every dtype, converted outputs, in place.
TEST_P(SoftmaxTest, ColumnBlocksMatchReference) {
  if (GetParam() > detected_isa()) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
  const Isa saved = active_isa();
  set_isa(GetParam());
  Rng rng(11);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16};
  const int64_t widths[] = {16, 17, 63, 64, 65, 130, 300};
  for (int trial = 0; trial < 60; ++trial) {
    Shape shape;
    shape.ndim = chance(rng, 0.5) ? 2 : 3;
    for (int d = 0; d < shape.ndim - 1; ++d) shape.sizes[d] = uniform(rng, 1, 40);
    shape.sizes[shape.ndim - 1] = widths[uniform(rng, 0, 6)];
    const int dim = static_cast<int>(uniform(rng, 0, shape.ndim - 2));
    const ScalarType type = types[uniform(rng, 0, 3)];
    const ScalarType out_type = type == ScalarType::Float16 && chance(rng, 0.3) ? ScalarType::Float32 : type;
    const bool log = chance(rng, 0.5), in_place = out_type == type && chance(rng, 0.3);
    Strides dense{};
    for (int d = shape.ndim - 1, running = 1; d >= 0; running *= static_cast<int>(shape.sizes[d]), --d) {
      dense.v[d] = running;
    }
    const int64_t n = numel(shape);
    Buffer in(type, n), out(out_type, n), ref(out_type, n), grad(out_type, n), gin(type, n), gin_ref(type, n);
    fill_normal(in, rng, 3);
    fill_normal(grad, rng, 1);
    if (type == ScalarType::Float32 && chance(rng, 0.3)) {
      const float nan = NAN;  // one column becomes NaN
      std::memcpy(in.element(uniform(rng, 0, n - 1)), &nan, 4);
    }
    const Operand x{in.data(), type, dense}, r{ref.data(), out_type, dense};
    softmax_ref(shape, dim, r, x, log);
    if (in_place) {
      Buffer self = in;
      const Operand z{self.data(), type, dense};
      softmax(shape, dim, z, z, log);
      ASSERT_TRUE(close_buffers(self, ref, tolerance(type))) << "in place " << describe(shape, dense) << " dim " << dim;
    } else {
      softmax(shape, dim, Operand{out.data(), out_type, dense}, x, log);
      ASSERT_TRUE(close_buffers(out, ref, tolerance(type))) << describe(shape, dense) << " dim " << dim << " log "
                                                            << log;
    }
    const Operand g{grad.data(), out_type, dense};
    softmax_backward(shape, dim, Operand{gin.data(), type, dense}, g, r, log);
    softmax_backward_ref(shape, dim, Operand{gin_ref.data(), type, dense}, g, r, log);
    ASSERT_TRUE(close_buffers(gin, gin_ref, tolerance(type) * 10)) << "backward " << describe(shape, dense)
                                                                   << " dim " << dim << " log " << log;
  }
  set_isa(saved);
}

// Note [Short rows by columns]: rows of 2 to 15 elements, many of them,
// contiguous (softmax over the last dim) or one row apart (a transposed
// view, the rows along dim 0), in place or not, every dtype, forward and
// backward, against the reference.
TEST_P(SoftmaxTest, ShortRowsMatchReference) {
  if (GetParam() > detected_isa()) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
  const Isa saved = active_isa();
  set_isa(GetParam());
  Rng rng(13);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16};
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t len = uniform(rng, 2, 15), rows = uniform(rng, 16, 700);
    const bool transposed = chance(rng, 0.5), log = chance(rng, 0.5);
    const ScalarType type = types[uniform(rng, 0, 3)];
    const bool in_place = chance(rng, 0.3);
    // Memory holds [rows, len] densely; the view is [rows, len] along dim 1,
    // or its transpose [len, rows] along dim 0.
    Shape shape;
    shape.ndim = 2;
    Strides strides{};
    int dim;
    if (transposed) {
      shape.sizes[0] = len;
      shape.sizes[1] = rows;
      strides.v[0] = 1;
      strides.v[1] = len;
      dim = 0;
    } else {
      shape.sizes[0] = rows;
      shape.sizes[1] = len;
      strides.v[0] = len;
      strides.v[1] = 1;
      dim = 1;
    }
    const int64_t n = rows * len;
    Buffer in(type, n), out(type, n), ref(type, n), grad(type, n), gin(type, n), gin_ref(type, n);
    fill_normal(in, rng, 3);
    fill_normal(grad, rng, 1);
    const Operand x{in.data(), type, strides}, r{ref.data(), type, strides};
    softmax_ref(shape, dim, r, x, log);
    Buffer self = in;
    const Operand o{in_place ? self.data() : out.data(), type, strides};
    softmax(shape, dim, o, in_place ? o : x, log);
    ASSERT_TRUE(close_buffers(in_place ? self : out, ref, tolerance(type)))
        << describe(shape, strides) << " dim " << dim << " log " << log << " in place " << in_place;
    const Operand g{grad.data(), type, strides};
    softmax_backward(shape, dim, Operand{gin.data(), type, strides}, g, r, log);
    softmax_backward_ref(shape, dim, Operand{gin_ref.data(), type, strides}, g, r, log);
    ASSERT_TRUE(close_buffers(gin, gin_ref, tolerance(type) * 10)) << "backward " << describe(shape, strides)
                                                                   << " dim " << dim << " log " << log;
  }
  set_isa(saved);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SoftmaxTest, ::testing::Values(Isa::Baseline, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

Shape shape_1d(int64_t n) {
  Shape s;
  s.ndim = 1;
  s.sizes[0] = n;
  return s;
}

// The row maximum must see every position (its accumulators interleave):
// one large value per row, at each position in turn, would overflow exp() in
// float if it were missed. Every ISA, rows of 300 float32.
TEST(Softmax, RowMaxFindsASpikeAnywhere) {
  constexpr int64_t kLen = 300;
  Shape s;
  s.ndim = 2;
  s.sizes[0] = kLen;
  s.sizes[1] = kLen;
  std::vector<float> x(kLen * kLen), y(x.size()), ref(x.size());
  for (int64_t r = 0; r < kLen; ++r) {
    for (int64_t j = 0; j < kLen; ++j) x[r * kLen + j] = static_cast<float>((r * 7 + j * 13) % 17) * 0.1f;
    x[r * kLen + r] = 200.0f;
  }
  Strides st{};
  st.v[0] = kLen;
  st.v[1] = 1;
  const Operand in{x.data(), ScalarType::Float32, st};
  softmax_ref(s, 1, Operand{ref.data(), ScalarType::Float32, st}, in, false);
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512}) {
    if (isa > detected_isa()) continue;
    set_isa(isa);
    for (bool log : {false, true}) {
      softmax(s, 1, Operand{y.data(), ScalarType::Float32, st}, in, log);
      if (log) softmax_ref(s, 1, Operand{ref.data(), ScalarType::Float32, st}, in, true);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], ref[i], 1e-5 + 1e-5 * std::abs(ref[i])) << isa_name(isa) << " log " << log << " at " << i;
      }
    }
    softmax_ref(s, 1, Operand{ref.data(), ScalarType::Float32, st}, in, false);
  }
  set_isa(saved);
}

// Long rows, split over threads by rows, in place; special rows.
TEST(Softmax, LongRowsInPlaceAndSpecialRows) {
  const int saved = num_threads();
  set_num_threads(3);
  Shape s;
  s.ndim = 2;
  s.sizes[0] = 6;
  s.sizes[1] = 100003;
  Strides dense{};
  dense.v[0] = 100003;
  dense.v[1] = 1;
  std::vector<float> x(6 * 100003), y(x.size()), ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(i * 0.37) * 20);
  x[100003 + 5] = NAN;                                        // row 1: all NaN
  for (int64_t j = 0; j < 100003; ++j) x[2 * 100003 + j] = -INFINITY;  // row 2: all -inf: NaN (0 / 0)
  x[3 * 100003 + 7] = INFINITY;                               // row 3: inf: NaN except nothing finite
  for (bool log : {false, true}) {
    const Operand in{x.data(), ScalarType::Float32, dense};
    softmax(s, 1, Operand{y.data(), ScalarType::Float32, dense}, in, log);
    softmax_ref(s, 1, Operand{ref.data(), ScalarType::Float32, dense}, in, log);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(ref[i])) {
        ASSERT_TRUE(std::isnan(y[i])) << i;
      } else {
        ASSERT_NEAR(y[i], ref[i], 2e-5 * std::abs(ref[i]) + 1e-9) << i;
      }
    }
    EXPECT_TRUE(std::isnan(y[100003 + 11]));
    std::vector<float> self = x;  // in place
    const Operand z{self.data(), ScalarType::Float32, dense};
    softmax(s, 1, z, z, log);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(self[i] == y[i] || (std::isnan(self[i]) && std::isnan(y[i])));
  }
  // Empty rows and an empty tensor do nothing.
  float one = 5;
  softmax(shape_1d(0), 0, Operand{&one, ScalarType::Float32, {}}, Operand{&one, ScalarType::Float32, {}}, false);
  EXPECT_EQ(one, 5);
  set_num_threads(saved);
}

}  // namespace
}  // namespace mlu::kernels
