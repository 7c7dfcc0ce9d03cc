#include "mlu_kernels/index.h"

#include <gtest/gtest.h>

#include <vector>

#include "mlu_kernels/parallel.h"

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

}  // namespace
}  // namespace mlu::kernels
