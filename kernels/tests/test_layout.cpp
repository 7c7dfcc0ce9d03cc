// numel and coalesce: hand cases, and a property check that coalescing keeps
// every operand's sequence of element offsets unchanged.
#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "mlu_kernels/layout.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using testutil::describe;

Shape make_shape(std::initializer_list<int64_t> sizes) {
  Shape shape;
  for (int64_t s : sizes) shape.sizes[shape.ndim++] = s;
  return shape;
}

Strides make_strides(std::initializer_list<int64_t> values) {
  Strides strides;
  int d = 0;
  for (int64_t v : values) strides.v[d++] = v;
  return strides;
}

// Offsets of all elements in row-major order (test-side, by plain counting).
std::vector<int64_t> offsets(const Shape& shape, const Strides& strides) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < numel(shape); ++i) {
    int64_t linear = i, offset = 0;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      offset += (linear % shape.sizes[d]) * strides.v[d];
      linear /= shape.sizes[d];
    }
    out.push_back(offset);
  }
  return out;
}

TEST(Layout, Numel) {
  EXPECT_EQ(numel(Shape{}), 1);
  EXPECT_EQ(numel(make_shape({2, 3, 4})), 24);
  EXPECT_EQ(numel(make_shape({2, 0, 4})), 0);
  EXPECT_EQ(numel(make_shape({1})), 1);
}

TEST(Layout, ContiguousCoalescesToOneDim) {
  Shape shape = make_shape({2, 3, 4});
  Strides s = make_strides({12, 4, 1});
  Strides* ops[] = {&s};
  coalesce(shape, ops, 1);
  ASSERT_EQ(shape.ndim, 1);
  EXPECT_EQ(shape.sizes[0], 24);
  EXPECT_EQ(s.v[0], 1);
}

TEST(Layout, SizeOneDimsAreDropped) {
  Shape shape = make_shape({1, 3, 1, 4, 1});
  Strides s = make_strides({99, 4, 7, 1, 5});
  Strides* ops[] = {&s};
  coalesce(shape, ops, 1);
  ASSERT_EQ(shape.ndim, 1);
  EXPECT_EQ(shape.sizes[0], 12);
  EXPECT_EQ(s.v[0], 1);
}

TEST(Layout, AllOnesBecomesZeroDim) {
  Shape shape = make_shape({1, 1, 1});
  Strides s = make_strides({5, 6, 7});
  Strides* ops[] = {&s};
  coalesce(shape, ops, 1);
  EXPECT_EQ(shape.ndim, 0);
  Shape scalar;
  coalesce(scalar, ops, 1);
  EXPECT_EQ(scalar.ndim, 0);
}

TEST(Layout, TransposedAndSlicedStayApart) {
  Shape shape = make_shape({3, 4});
  Strides transposed = make_strides({1, 3});
  Strides* ops[] = {&transposed};
  coalesce(shape, ops, 1);
  EXPECT_EQ(shape.ndim, 2);

  Shape sliced_shape = make_shape({3, 4});
  Strides sliced = make_strides({8, 1});  // every row of a [3, 8] tensor, first 4 columns
  Strides* sliced_ops[] = {&sliced};
  coalesce(sliced_shape, sliced_ops, 1);
  EXPECT_EQ(sliced_shape.ndim, 2);
}

TEST(Layout, MergesOnlyWhenEveryOperandAgrees) {
  Shape shape = make_shape({2, 3, 4});
  Strides dst = make_strides({12, 4, 1});
  Strides src = make_strides({0, 0, 1});  // broadcast over the two outer dims
  Strides* ops[] = {&dst, &src};
  coalesce(shape, ops, 2);
  ASSERT_EQ(shape.ndim, 2);
  EXPECT_EQ(shape.sizes[0], 6);
  EXPECT_EQ(shape.sizes[1], 4);
  EXPECT_EQ(dst.v[0], 4);
  EXPECT_EQ(src.v[0], 0);
  EXPECT_EQ(dst.v[1], 1);
  EXPECT_EQ(src.v[1], 1);
}

TEST(Layout, CoalescePreservesOffsets) {
  testutil::Rng rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    const Shape shape = testutil::random_shape(rng);
    Strides a = testutil::random_layout(shape, rng, true).strides;
    Strides b = testutil::random_layout(shape, rng, true).strides;
    const auto before_a = offsets(shape, a), before_b = offsets(shape, b);
    const std::string was = describe(shape, a) + " / " + describe(shape, b);
    Shape merged = shape;
    Strides* ops[] = {&a, &b};
    coalesce(merged, ops, 2);
    ASSERT_LE(merged.ndim, shape.ndim);
    ASSERT_EQ(offsets(merged, a), before_a) << was;
    ASSERT_EQ(offsets(merged, b), before_b) << was;
    for (int d = 0; d < merged.ndim; ++d) ASSERT_NE(merged.sizes[d], 1) << was;
  }
}

}  // namespace
}  // namespace mlu::kernels
