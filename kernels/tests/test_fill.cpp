// fill against fill_ref on random views for every dtype, plus known values.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "mlu_kernels/fill.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class FillTest : public ::testing::TestWithParam<ScalarType> {};

// A value of `type`: random bytes, or (often) all bytes equal to hit memset.
std::vector<unsigned char> random_value(ScalarType type, Rng& rng) {
  std::vector<unsigned char> value(element_size(type));
  if (type == ScalarType::Bool) {
    value[0] = static_cast<unsigned char>(rng() & 1);
  } else if (chance(rng, 0.3)) {
    const unsigned char byte = chance(rng, 0.5) ? 0 : static_cast<unsigned char>(rng());
    std::memset(value.data(), byte, value.size());
  } else {
    for (auto& b : value) b = static_cast<unsigned char>(rng());
  }
  return value;
}

TEST_P(FillTest, MatchesReferenceOnRandomViews) {
  const ScalarType type = GetParam();
  Rng rng(static_cast<uint64_t>(type) + 1);
  for (int trial = 0; trial < 300; ++trial) {
    const Shape shape = random_shape(rng);
    // Stride-0 dims are allowed here: every write stores the same value.
    const ViewLayout layout = random_layout(shape, rng, true);
    const std::vector<unsigned char> value = random_value(type, rng);
    Buffer actual(type, layout.span);
    fill_random(actual, rng, false);
    Buffer expected = actual;
    fill(actual.element(layout.offset), type, shape, layout.strides, value.data());
    fill_ref(expected.element(layout.offset), type, shape, layout.strides, value.data());
    ASSERT_TRUE(same_buffers(actual, expected)) << describe(shape, layout.strides);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, FillTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

TEST(Fill, ZeroDimWritesOneElement) {
  float data[2] = {0.0f, 0.0f};
  const float value = 1.5f;
  fill(data, ScalarType::Float32, Shape{}, Strides{}, &value);
  EXPECT_EQ(data[0], 1.5f);
  EXPECT_EQ(data[1], 0.0f);
}

TEST(Fill, EmptyWritesNothing) {
  int32_t data[4] = {7, 7, 7, 7};
  const int32_t value = 3;
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = 4;
  shape.sizes[1] = 0;
  const Strides strides{{0, 1}};
  fill(data, ScalarType::Int32, shape, strides, &value);
  for (int32_t v : data) EXPECT_EQ(v, 7);
}

TEST(Fill, StridedColumn) {
  double data[3][4] = {};
  const double value = -2.25;
  Shape shape;
  shape.ndim = 1;
  shape.sizes[0] = 3;
  const Strides strides{{4}};
  fill(&data[0][1], ScalarType::Float64, shape, strides, &value);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(data[r][c], c == 1 ? -2.25 : 0.0) << r << "," << c;
  }
}

}  // namespace
}  // namespace mlu::kernels
