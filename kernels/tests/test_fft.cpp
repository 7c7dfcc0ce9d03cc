// FFT plans against a direct O(n^2) DFT, in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

#include "mlu_kernels/fft.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

using cd = std::complex<double>;

std::vector<cd> dft(const std::vector<cd>& x, bool forward) {
  const size_t n = x.size();
  std::vector<cd> y(n);
  const double sign = forward ? -1.0 : 1.0;
  for (size_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < n; ++j) {
      y[k] += x[j] * std::polar(1.0, sign * 2 * std::numbers::pi * double(k * j % n) / double(n));
    }
  }
  return y;
}

std::vector<cd> random_signal(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  std::vector<cd> x(n);
  for (auto& v : x) v = {d(gen), d(gen)};
  return x;
}

FftSpec one_dim(FftKind kind, int64_t n, int64_t batch, int64_t in_distance, int64_t out_distance) {
  FftSpec s;
  s.real_type = ScalarType::Float64;
  s.kind = kind;
  s.forward = kind != FftKind::C2R;
  s.sizes[0] = n;
  s.in_strides[0] = 1;
  s.out_strides[0] = 1;
  s.batch = batch;
  s.in_distance = in_distance;
  s.out_distance = out_distance;
  return s;
}

TEST(Fft, C2CBatchSplitOverThreadsMatchesTheDft) {
  if (!fft_available()) GTEST_SKIP() << "no oneMKL DFTI in this process";
  const int64_t n = 48, batch = 2000;  // enough work for several parts
  auto spec = one_dim(FftKind::C2C, n, batch, n, n);
  spec.scale = 1.0 / n;
  std::string error;
  const auto plan = FftPlan::create(spec, 4, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_GT(plan->parts(), 1);
  std::vector<cd> in(n * batch), out(n * batch);
  for (int64_t b = 0; b < batch; ++b) {
    const auto x = random_signal(n, static_cast<unsigned>(b));
    std::copy(x.begin(), x.end(), in.begin() + b * n);
  }
  ASSERT_EQ(plan->execute(in.data(), out.data()), "");
  for (int64_t b : {int64_t{0}, batch / 2, batch - 1}) {
    const auto want = dft({in.begin() + b * n, in.begin() + (b + 1) * n}, true);
    for (int64_t k = 0; k < n; ++k) EXPECT_NEAR(std::abs(out[b * n + k] - want[k] / double(n)), 0.0, 1e-12);
  }
}

TEST(Fft, RealToComplexAndBackRoundTrips) {
  if (!fft_available()) GTEST_SKIP() << "no oneMKL DFTI in this process";
  const int64_t n = 10, half = n / 2 + 1, batch = 3;
  std::vector<double> x(n * batch);
  std::mt19937 gen(7);
  std::normal_distribution<double> d;
  for (auto& v : x) v = d(gen);
  std::string error;
  const auto r2c = FftPlan::create(one_dim(FftKind::R2C, n, batch, n, half), 2, &error);
  ASSERT_TRUE(r2c) << error;
  std::vector<cd> spectrum(half * batch);
  ASSERT_EQ(r2c->execute(x.data(), spectrum.data()), "");
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<cd> signal(x.begin() + b * n, x.begin() + (b + 1) * n);
    const auto want = dft(signal, true);
    for (int64_t k = 0; k < half; ++k) EXPECT_NEAR(std::abs(spectrum[b * half + k] - want[k]), 0.0, 1e-12);
  }
  auto back_spec = one_dim(FftKind::C2R, n, batch, half, n);
  back_spec.scale = 1.0 / n;
  const auto c2r = FftPlan::create(back_spec, 2, &error);
  ASSERT_TRUE(c2r) << error;
  std::vector<double> y(n * batch);
  ASSERT_EQ(c2r->execute(spectrum.data(), y.data()), "");
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-12);
}

TEST(Fft, RefusedLayoutReportsTheLibrarysMessage) {
  if (!fft_available()) GTEST_SKIP() << "no oneMKL DFTI in this process";
  std::string error;
  EXPECT_FALSE(FftPlan::create(one_dim(FftKind::C2C, 0, 1, 1, 1), 1, &error));
  EXPECT_NE(error.find("DFTI"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(FftPlan::create(one_dim(FftKind::C2C, 8, 0, 8, 8), 4, &error));  // an empty batch
  EXPECT_NE(error.find("DFTI"), std::string::npos) << error;
}

}  // namespace
}  // namespace mlu::kernels
