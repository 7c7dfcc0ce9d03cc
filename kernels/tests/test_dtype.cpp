// ScalarType metadata: element sizes and names.
#include <gtest/gtest.h>

#include <complex>
#include <string>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/half.h"

namespace mlu::kernels {
namespace {

TEST(Dtype, ElementSizeMatchesCxxTypes) {
  EXPECT_EQ(element_size(ScalarType::Bool), sizeof(bool));
  EXPECT_EQ(element_size(ScalarType::UInt8), 1u);
  EXPECT_EQ(element_size(ScalarType::Int8), 1u);
  EXPECT_EQ(element_size(ScalarType::Int16), 2u);
  EXPECT_EQ(element_size(ScalarType::Int32), 4u);
  EXPECT_EQ(element_size(ScalarType::Int64), 8u);
  EXPECT_EQ(element_size(ScalarType::Float16), sizeof(Half));
  EXPECT_EQ(element_size(ScalarType::BFloat16), sizeof(BFloat16));
  EXPECT_EQ(element_size(ScalarType::Float32), 4u);
  EXPECT_EQ(element_size(ScalarType::Float64), 8u);
  EXPECT_EQ(element_size(ScalarType::ComplexFloat), sizeof(std::complex<float>));
  EXPECT_EQ(element_size(ScalarType::ComplexDouble), sizeof(std::complex<double>));
  for (ScalarType t :
       {ScalarType::Float8_e4m3fn, ScalarType::Float8_e5m2, ScalarType::Float8_e4m3fnuz, ScalarType::Float8_e5m2fnuz}) {
    EXPECT_EQ(element_size(t), 1u);
    EXPECT_TRUE(is_float8(t));
  }
  EXPECT_FALSE(is_float8(ScalarType::ComplexDouble));
}

TEST(Dtype, NamesAreTheEnumerators) {
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::Bool)), "Bool");
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::UInt8)), "UInt8");
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::Float16)), "Float16");
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::BFloat16)), "BFloat16");
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::ComplexDouble)), "ComplexDouble");
  EXPECT_EQ(std::string(scalar_type_name(ScalarType::Float8_e5m2fnuz)), "Float8_e5m2fnuz");
}

}  // namespace
}  // namespace mlu::kernels
