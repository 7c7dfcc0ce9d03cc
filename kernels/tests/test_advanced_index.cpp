#include "mlu_kernels/advanced_index.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mlu_kernels/half.h"

namespace mlu::kernels {
namespace {

Shape shape_of(std::initializer_list<int64_t> sizes) {
  Shape s;
  s.ndim = static_cast<int>(sizes.size());
  int d = 0;
  for (int64_t v : sizes) s.sizes[d++] = v;
  return s;
}

Strides strides_of(std::initializer_list<int64_t> values) {
  Strides s{};
  int d = 0;
  for (int64_t v : values) s.v[d++] = v;
  return s;
}

// x[i0, :, i1] for x of shape (A, B, C): PyTorch's layout puts the broadcast
// index dim first, then B; the restrided x has stride 0 on the index dim.
struct NonAdjacentCase {
  int64_t A, B, C, N;
  std::vector<float> x;
  std::vector<int64_t> i0;
  std::vector<int32_t> i1;
  IndexedDims dims;

  NonAdjacentCase(int64_t a, int64_t b, int64_t c, int64_t n, unsigned seed) : A(a), B(b), C(c), N(n) {
    std::mt19937 gen(seed);
    x.resize(static_cast<size_t>(A * B * C));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    for (int64_t k = 0; k < N; ++k) {
      i0.push_back(std::uniform_int_distribution<int64_t>(-A, A - 1)(gen));
      i1.push_back(std::uniform_int_distribution<int32_t>(static_cast<int32_t>(-C), static_cast<int32_t>(C - 1))(gen));
    }
    dims.count = 2;
    dims.sizes[0] = A;
    dims.sizes[1] = C;
    dims.strides[0] = B * C;
    dims.strides[1] = 1;
  }
  float expected(int64_t n, int64_t b) const {
    const int64_t a = i0[n] < 0 ? i0[n] + A : i0[n];
    const int64_t c = i1[n] < 0 ? i1[n] + C : i1[n];
    return x[static_cast<size_t>((a * B + b) * C + c)];
  }
};

TEST(AdvancedIndex, GatherNonAdjacentWithNegativeAndMixedIndexTypes) {
  NonAdjacentCase t(4, 5, 6, 3, 1);
  std::vector<float> out(static_cast<size_t>(t.N * t.B), -1);
  Operand indices[2] = {{t.i0.data(), ScalarType::Int64, strides_of({1, 0})},
                        {t.i1.data(), ScalarType::Int32, strides_of({1, 0})}};
  auto check = index_gather(shape_of({t.N, t.B}), Operand{out.data(), ScalarType::Float32, strides_of({t.B, 1})},
                            Operand{t.x.data(), ScalarType::Float32, strides_of({0, t.C})}, indices, t.dims);
  ASSERT_TRUE(check.ok);
  for (int64_t n = 0; n < t.N; ++n)
    for (int64_t b = 0; b < t.B; ++b) EXPECT_EQ(out[static_cast<size_t>(n * t.B + b)], t.expected(n, b));
}

// The index varies along the innermost dim (element-by-element path), over
// enough rows to split across threads.
TEST(AdvancedIndex, GatherIndexAlongInnerDimAcrossThreads) {
  NonAdjacentCase t(30, 7, 40, 20000, 2);
  std::vector<float> out(static_cast<size_t>(t.N * t.B), -1);
  // Iterate (B, N) with out stored (N, B): the index strides are inner.
  Operand indices[2] = {{t.i0.data(), ScalarType::Int64, strides_of({0, 1})},
                        {t.i1.data(), ScalarType::Int32, strides_of({0, 1})}};
  auto check = index_gather(shape_of({t.B, t.N}), Operand{out.data(), ScalarType::Float32, strides_of({1, t.B})},
                            Operand{t.x.data(), ScalarType::Float32, strides_of({t.C, 0})}, indices, t.dims);
  ASSERT_TRUE(check.ok);
  for (int64_t n = 0; n < t.N; ++n)
    for (int64_t b = 0; b < t.B; ++b) ASSERT_EQ(out[static_cast<size_t>(n * t.B + b)], t.expected(n, b));
}

TEST(AdvancedIndex, OutOfRangeIsReportedWithItsIndexTensor) {
  NonAdjacentCase t(4, 5, 6, 3, 3);
  t.i1[1] = 6;  // C == 6: one past the end
  std::vector<float> out(static_cast<size_t>(t.N * t.B), -1);
  Operand indices[2] = {{t.i0.data(), ScalarType::Int64, strides_of({1, 0})},
                        {t.i1.data(), ScalarType::Int32, strides_of({1, 0})}};
  auto check = index_gather(shape_of({t.N, t.B}), Operand{out.data(), ScalarType::Float32, strides_of({t.B, 1})},
                            Operand{t.x.data(), ScalarType::Float32, strides_of({0, t.C})}, indices, t.dims);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.dim, 1);
  EXPECT_EQ(check.bad_index, 6);
  EXPECT_EQ(out[0], t.expected(0, 0));  // the good rows are still written
}

TEST(AdvancedIndex, PutAccumulatesRepeatedPositionsInOrder) {
  std::vector<BFloat16> self(5, bfloat16_from_float(0.0f));
  std::vector<BFloat16> values = {bfloat16_from_float(10.0f), bfloat16_from_float(20.0f), bfloat16_from_float(30.0f)};
  std::vector<int64_t> index = {1, 1, -2};
  IndexedDims dims;
  dims.count = 1;
  dims.sizes[0] = 5;
  dims.strides[0] = 1;
  Operand indices[1] = {{index.data(), ScalarType::Int64, strides_of({1})}};
  auto check = index_put(shape_of({3}), Operand{self.data(), ScalarType::BFloat16, strides_of({0})},
                         Operand{values.data(), ScalarType::BFloat16, strides_of({1})}, indices, dims, true);
  ASSERT_TRUE(check.ok);
  std::vector<float> got;
  for (BFloat16 v : self) got.push_back(to_float(v));
  EXPECT_EQ(got, (std::vector<float>{0, 30, 0, 30, 0}));
}

TEST(AdvancedIndex, PutAssignsRowsWithBroadcastValue) {
  // x[[2, 0], :] = 7 for x of shape (3, 4).
  std::vector<int16_t> self(12, 1);
  int16_t seven = 7;
  std::vector<int64_t> index = {2, 0};
  IndexedDims dims;
  dims.count = 1;
  dims.sizes[0] = 3;
  dims.strides[0] = 4;
  Operand indices[1] = {{index.data(), ScalarType::Int64, strides_of({1, 0})}};
  auto check = index_put(shape_of({2, 4}), Operand{self.data(), ScalarType::Int16, strides_of({0, 1})},
                         Operand{&seven, ScalarType::Int16, strides_of({0, 0})}, indices, dims, false);
  ASSERT_TRUE(check.ok);
  EXPECT_EQ(self, (std::vector<int16_t>{7, 7, 7, 7, 1, 1, 1, 1, 7, 7, 7, 7}));
}

// x[i0, i1] with index tensors of one dtype (the element-by-element path's
// fast loop): negative values wrap, and a value below -size is reported with
// its index tensor while the other points are still written.
template <class I>
void check_points(ScalarType index_dtype) {
  const int64_t A = 37, C = 53, N = 40000;
  std::vector<float> x(static_cast<size_t>(A * C));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::mt19937 gen(7);
  std::vector<I> i0(N), i1(N);
  for (int64_t n = 0; n < N; ++n) {
    i0[n] = static_cast<I>(std::uniform_int_distribution<int64_t>(-A, A - 1)(gen));
    i1[n] = static_cast<I>(std::uniform_int_distribution<int64_t>(-C, C - 1)(gen));
  }
  i0[12345] = static_cast<I>(-A - 1);
  IndexedDims dims;
  dims.count = 2;
  dims.sizes[0] = A;
  dims.sizes[1] = C;
  dims.strides[0] = C;
  dims.strides[1] = 1;
  std::vector<float> out(N, -1);
  Operand indices[2] = {{i0.data(), index_dtype, strides_of({1})}, {i1.data(), index_dtype, strides_of({1})}};
  auto check = index_gather(shape_of({N}), Operand{out.data(), ScalarType::Float32, strides_of({1})},
                            Operand{x.data(), ScalarType::Float32, strides_of({0})}, indices, dims);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.dim, 0);
  EXPECT_EQ(check.bad_index, -A - 1);
  for (int64_t n = 0; n < N; ++n) {
    if (n == 12345) continue;
    const int64_t a = i0[n] < 0 ? i0[n] + A : i0[n], c = i1[n] < 0 ? i1[n] + C : i1[n];
    ASSERT_EQ(out[n], x[static_cast<size_t>(a * C + c)]) << "point " << n;
  }
}

TEST(AdvancedIndex, PointsWithOneIndexDtype) {
  check_points<int64_t>(ScalarType::Int64);
  check_points<int32_t>(ScalarType::Int32);
}

}  // namespace
}  // namespace mlu::kernels
