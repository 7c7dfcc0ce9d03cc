// MLU_KERNELS_VERBOSE: one line per kernel call naming the path taken, the
// active ISA, the dtype and the sizes; nothing when logging is off.
#include "mlu_kernels/verbose.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/softmax.h"

namespace mlu::kernels {
namespace {

// Softmax of a [rows, len] float32 matrix along `dim`, contiguous.
void run_softmax(int64_t rows, int64_t len, int dim) {
  std::vector<float> in(static_cast<size_t>(rows * len), 1.0f), out(in.size());
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = rows;
  shape.sizes[1] = len;
  Strides strides{};
  strides.v[0] = len;
  strides.v[1] = 1;
  softmax(shape, dim, Operand{out.data(), ScalarType::Float32, strides},
          Operand{in.data(), ScalarType::Float32, strides}, false);
}

// The log lines a call printed.
template <class F>
std::vector<std::string> lines_of(F&& call) {
  ::testing::internal::CaptureStderr();
  call();
  const std::string text = ::testing::internal::GetCapturedStderr();
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    lines.push_back(text.substr(begin, end - begin));
  }
  return lines;
}

class VerboseTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = verbose(); }
  void TearDown() override { set_verbose(saved_); }
  bool saved_ = false;
};

TEST_F(VerboseTest, NamesThePathTheKernelTook) {
  set_verbose(true);
  const std::string isa = isa_name(active_isa());
  const auto rows = lines_of([] { run_softmax(4, 64, 1); });
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rfind("mlu_kernels_verbose,exec,softmax," + isa + ",rows,Float32,rows4 len64,", 0), 0u)
      << rows[0];
  // Along dim 0 of a row-major matrix: blocks of columns (Note [Softmax by columns]).
  const auto columns = lines_of([] { run_softmax(64, 256, 0); });
  ASSERT_EQ(columns.size(), 1u);
  EXPECT_NE(columns[0].find(",softmax," + isa + ",columns,Float32,rows256 len64,"), std::string::npos)
      << columns[0];
}

TEST_F(VerboseTest, SaysNothingWhenOff) {
  set_verbose(false);
  EXPECT_TRUE(lines_of([] { run_softmax(4, 64, 1); }).empty());
}

TEST_F(VerboseTest, ReportsTheCappedIsa) {
  set_verbose(true);
  const Isa saved = active_isa();
  set_isa(Isa::Baseline);
  const auto lines = lines_of([] { run_softmax(2, 8, 1); });
  set_isa(saved);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(",softmax,baseline,"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace mlu::kernels
