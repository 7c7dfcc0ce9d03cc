// spmm_csr against its reference (spmm_csr_ref): the same products summed in
// the same order per output element, so the results are bit-equal, for every
// dtype it takes, empty rows, repeated columns, strided dense and output
// operands, complex alpha, and enough rows for several thread chunks.
#include "mlu_kernels/sparse.h"

#include <gtest/gtest.h>

#include <complex>
#include <cstring>
#include <random>
#include <vector>

using namespace mlu::kernels;

namespace {

template <class T>
T draw(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(u(rng));
  } else {
    using R = typename T::value_type;
    return T(static_cast<R>(u(rng)), static_cast<R>(u(rng)));
  }
}

template <class T>
void check(ScalarType type, int64_t rows, int64_t cols, int64_t n, bool strided, std::complex<double> alpha) {
  std::mt19937 rng(static_cast<unsigned>(rows * 31 + n));
  std::vector<int64_t> crow{0}, col;
  std::vector<T> values;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t entries = i % 5 == 3 ? 0 : static_cast<int64_t>(rng() % 6);  // some rows empty
    for (int64_t e = 0; e < entries; ++e) {
      col.push_back(e == 1 ? col.back() : static_cast<int64_t>(rng() % cols));  // repeated columns too
      values.push_back(draw<T>(rng));
    }
    crow.push_back(static_cast<int64_t>(col.size()));
  }
  const int64_t dense_stride1 = strided ? 2 : 1, out_stride1 = strided ? 3 : 1;
  std::vector<T> dense(cols * n * dense_stride1), out(rows * n * out_stride1);
  for (T& x : dense) x = draw<T>(rng);
  for (T& x : out) x = draw<T>(rng);
  std::vector<T> expected = out;
  SpmmArgs a{type, rows, n, crow.data(), col.data(), values.data(), dense.data(), n * dense_stride1,
             dense_stride1, out.data(), n * out_stride1, out_stride1, alpha};
  spmm_csr(a);
  a.out = expected.data();
  spmm_csr_ref(a);
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(T)), 0)
      << scalar_type_name(type) << " rows " << rows << " n " << n << (strided ? " strided" : "");
}

}  // namespace

TEST(Spmm, BitEqualToTheReference) {
  for (bool strided : {false, true}) {
    for (int64_t rows : {1, 7, 3000}) {
      check<float>(ScalarType::Float32, rows, 50, 33, strided, 1.5);
      check<double>(ScalarType::Float64, rows, 50, 17, strided, -0.25);
      check<std::complex<float>>(ScalarType::ComplexFloat, rows, 20, 9, strided, {0.5, -1.0});
      check<std::complex<double>>(ScalarType::ComplexDouble, rows, 20, 5, strided, {1.0, 2.0});
    }
  }
}

TEST(Spmm, TakesTheFloatingAndComplexTypes) {
  EXPECT_TRUE(spmm_takes(ScalarType::Float32));
  EXPECT_TRUE(spmm_takes(ScalarType::ComplexDouble));
  EXPECT_FALSE(spmm_takes(ScalarType::BFloat16));
  EXPECT_FALSE(spmm_takes(ScalarType::Int64));
}

TEST(Spmm, NothingToDo) {
  std::vector<int64_t> crow{0, 0};
  float out = 3.0f;
  SpmmArgs a{ScalarType::Float32, 1, 1, crow.data(), nullptr, nullptr, nullptr, 1, 1, &out, 1, 1, 1.0};
  spmm_csr(a);
  EXPECT_EQ(out, 3.0f);
}
