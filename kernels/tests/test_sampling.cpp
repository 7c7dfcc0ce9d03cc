#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "mlu_kernels/sampling.h"

using namespace mlu::kernels;

TEST(Sampling, RandpermIsAPermutationAndDeterministic) {
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<int64_t> a(n), b(n), c(n);
    randperm(a.data(), n, 42, 3);
    randperm(b.data(), n, 42, 3);
    randperm(c.data(), n, 42, 4);
    EXPECT_EQ(a, b);
    std::vector<int64_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> expected(n);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(sorted, expected);
    if (n > 2) {
      EXPECT_NE(a, c) << "another offset gives another permutation";
    }
  }
}

TEST(Sampling, RandpermIsUniformOverPositions) {
  // Where element 0 lands, over many offsets, is close to uniform.
  constexpr int n = 5, trials = 20000;
  std::vector<int> counts(n, 0);
  std::vector<int64_t> p(n);
  for (int t = 0; t < trials; ++t) {
    randperm(p.data(), n, 7, t);
    counts[std::find(p.begin(), p.end(), 0) - p.begin()]++;
  }
  for (int c : counts) EXPECT_NEAR(c, trials / n, 300);
}

TEST(Sampling, MultinomialWithReplacementFollowsTheWeights) {
  std::vector<float> w = {1, 0, 3};
  constexpr int64_t samples = 40000;
  std::vector<int64_t> out(samples);
  ASSERT_EQ(multinomial(out.data(), w.data(), ScalarType::Float32, 1, 3, 3, 1, samples, true, 1, 0),
            MultinomialStatus::Ok);
  int64_t zeros = std::count(out.begin(), out.end(), 0), ones = std::count(out.begin(), out.end(), 1);
  EXPECT_EQ(ones, 0) << "a zero-weight category is never drawn";
  EXPECT_NEAR(static_cast<double>(zeros) / samples, 0.25, 0.01);
}

TEST(Sampling, MultinomialWithoutReplacementDrawsDistinctPositiveCategories) {
  std::vector<double> w = {0.5, 0, 2, 1, 4,  /* row 2 */ 1, 1, 1, 1, 1};
  std::vector<int64_t> out(2 * 3);
  ASSERT_EQ(multinomial(out.data(), w.data(), ScalarType::Float64, 2, 5, 5, 1, 3, false, 9, 2), MultinomialStatus::Ok);
  for (int r = 0; r < 2; ++r) {
    std::vector<int64_t> row(out.begin() + 3 * r, out.begin() + 3 * r + 3);
    std::sort(row.begin(), row.end());
    EXPECT_TRUE(std::adjacent_find(row.begin(), row.end()) == row.end());
    if (r == 0) {
      EXPECT_TRUE(std::find(row.begin(), row.end(), 1) == row.end());
    }
  }
  std::vector<int64_t> again(2 * 3);
  multinomial(again.data(), w.data(), ScalarType::Float64, 2, 5, 5, 1, 3, false, 9, 2);
  EXPECT_EQ(out, again);
}

TEST(Sampling, MultinomialReportsBadInput) {
  std::vector<float> negative = {1, -1}, zero = {0, 0}, one_positive = {1, 0};
  std::vector<int64_t> out(4);
  EXPECT_EQ(multinomial(out.data(), negative.data(), ScalarType::Float32, 1, 2, 2, 1, 1, true, 1, 0),
            MultinomialStatus::NegativeOrNonFinite);
  EXPECT_EQ(multinomial(out.data(), zero.data(), ScalarType::Float32, 1, 2, 2, 1, 1, true, 1, 0),
            MultinomialStatus::ZeroSum);
  EXPECT_EQ(multinomial(out.data(), one_positive.data(), ScalarType::Float32, 1, 2, 2, 1, 2, false, 1, 0),
            MultinomialStatus::NotEnoughCategories);
  EXPECT_EQ(multinomial(out.data(), one_positive.data(), ScalarType::Float32, 1, 2, 2, 1, 3, false, 1, 0),
            MultinomialStatus::NotEnoughCategories);
}
