// The quantized products against their references on every ISA: random
// decode-size and prefill-size row counts (the two paths of
// quantized_gemm.cpp), widths with short last blocks, every weight-only
// dtype, every int4 layout and group size; the int4 layouts' bytes; int8 x
// int8 -> int32 with strided and transposed operands.
#include "mlu_kernels/quantized_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mlu_kernels/gemm.h"
#include "mlu_kernels/isa.h"
#include "random_views.h"
#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class QuantizedGemmTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > detected_isa()) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
    saved_ = active_isa();
    set_isa(GetParam());
  }
  void TearDown() override { set_isa(saved_); }
  Isa saved_ = Isa::Baseline;
};

constexpr ScalarType kDtypes[] = {ScalarType::Float32, ScalarType::Float16, ScalarType::BFloat16};
// Decode sizes (the ISA bodies), row tiles with remainders, two AMX row tiles, and past kDecodeRows (the panels).
constexpr int64_t kRows[] = {1, 2, 3, 4, 5, 7, 16, 20, 33};

// |got - want| within the float sums' rounding over k terms of `magnitude`
// (each element's sum of |terms|) plus one rounding of the result's dtype.
::testing::AssertionResult near(const Buffer& got, const Buffer& want, const std::vector<double>& magnitude,
                                int64_t k) {
  for (int64_t i = 0; i < got.count(); ++i) {
    const double x = value(got, i), y = value(want, i);
    const double bound = 2.0 * static_cast<double>(k + 2) * std::ldexp(1.0, -24) * magnitude[static_cast<size_t>(i)] +
                         2 * unit_roundoff(got.type()) * std::abs(y) + 1e-30;
    if (!(std::abs(x - y) <= bound)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << x << ", reference " << y << " (bound " << bound << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(QuantizedGemmTest, Int8WeightMatchesReference) {
  Rng rng(11);
  for (ScalarType dtype : kDtypes) {
    for (int64_t m : kRows) {
      // k of whole 32-deep steps (the AMX body's) and not; n with a short last 16 columns or none.
      const int64_t n = chance(rng, 0.5) ? 16 * uniform(rng, 1, 9) : uniform(rng, 1, 150);
      const int64_t k = chance(rng, 0.4)   ? 32 * uniform(rng, 1, 40)
                        : chance(rng, 0.5) ? uniform(rng, 1, 80)
                                           : uniform(rng, 500, 1300);
      const int64_t lda = k + uniform(rng, 0, 3);
      Buffer a = normal_buffer(dtype, m * lda, rng);
      std::vector<int8_t> w(static_cast<size_t>(n * k));
      for (auto& v : w) v = static_cast<int8_t>(uniform(rng, -128, 127));
      Buffer scales = normal_buffer(dtype, n, rng, 0.01);
      Buffer c(dtype, m * n), c_ref(dtype, m * n);
      Int8WeightGemmArgs args{dtype, m, n, k, a.data(), lda, w.data(), scales.data(), c.data(), n};
      int8_weight_gemm(args);
      args.c = c_ref.data();
      int8_weight_gemm_ref(args);
      std::vector<double> magnitude(static_cast<size_t>(m * n));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p) sum += std::abs(value(a, i * lda + p) * w[static_cast<size_t>(j * k + p)]);
          magnitude[static_cast<size_t>(i * n + j)] = sum * std::abs(value(scales, j));
        }
      }
      ASSERT_TRUE(near(c, c_ref, magnitude, k)) << scalar_type_name(dtype) << " m" << m << " n" << n << " k" << k;
    }
  }
}

constexpr Int4Layout kLayouts[] = {Int4Layout::Pairs, Int4Layout::Halves32, Int4Layout::Halves64};

TEST_P(QuantizedGemmTest, Int4WeightMatchesReference) {
  Rng rng(12);
  for (Int4Layout layout : kLayouts) {
    for (ScalarType dtype : kDtypes) {
      for (int64_t m : kRows) {
        const int64_t group = int64_t{32} << uniform(rng, 0, 3);
        const int64_t n = 16 * uniform(rng, 1, 9), k = group * uniform(rng, 1, chance(rng, 0.5) ? 2 : 9);
        const int64_t lda = k + uniform(rng, 0, 3);
        Buffer a = normal_buffer(dtype, m * lda, rng);
        std::vector<int32_t> q(static_cast<size_t>(n * k));
        for (auto& v : q) v = static_cast<int32_t>(uniform(rng, 0, 15));
        std::vector<uint8_t> packed(static_cast<size_t>(n * k / 2));
        int4_pack(q.data(), n, k, layout, packed.data());
        Buffer sz = normal_buffer(dtype, k / group * n * 2, rng, 0.05);
        Buffer c(dtype, m * n), c_ref(dtype, m * n);
        Int4WeightGemmArgs args{dtype, m, n, k, a.data(), lda, packed.data(), layout, group, sz.data(), c.data(), n};
        int4_weight_gemm(args);
        args.c = c_ref.data();
        int4_weight_gemm_ref(args);
        std::vector<double> magnitude(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p) {
              const int64_t at = ((p / group) * n + j) * 2;
              const double w = (q[static_cast<size_t>(j * k + p)] - 8) * value(sz, at) + value(sz, at + 1);
              // The decode bodies' terms: A times (q - 8) s and A times z, summed apart.
              sum += std::abs(value(a, i * lda + p)) *
                     (std::abs(w) + std::abs((q[static_cast<size_t>(j * k + p)] - 8) * value(sz, at)) +
                      std::abs(value(sz, at + 1)));
            }
            magnitude[static_cast<size_t>(i * n + j)] = sum;
          }
        }
        ASSERT_TRUE(near(c, c_ref, magnitude, k)) << scalar_type_name(dtype) << " layout " << static_cast<int>(layout)
                                                  << " m" << m << " n" << n << " k" << k << " group " << group;
      }
    }
  }
}

// The bytes PyTorch's CPU packing writes (int4mm_kernel.cpp's
// weight_to_int4pack_kernel): halves within full blocks, pairs in a short
// last block and in the vector-less layout.
TEST(Int4Layouts, PackLikeTheCpu) {
  const int64_t n = 80, k = 4;  // one block of 64 and a short one of 16 (Halves64); 2 and a half of 32
  std::vector<int32_t> q(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) q[static_cast<size_t>(j * k + p)] = static_cast<int32_t>((j * 7 + p * 3) % 16);
  }
  const auto at = [&](int64_t j, int64_t p) { return static_cast<uint8_t>(q[static_cast<size_t>(j * k + p)]); };
  std::vector<uint8_t> got(static_cast<size_t>(n * k / 2)), want(got.size());
  const auto pairs = [&](int64_t j0, int64_t width, uint8_t* dst) {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t d = 0; d < width / 2; ++d) {
        dst[p * width / 2 + d] = static_cast<uint8_t>(at(j0 + 2 * d + 1, p) << 4 | at(j0 + 2 * d, p));
      }
    }
  };
  const auto halves = [&](int64_t j0, int64_t width, uint8_t* dst) {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t d = 0; d < width / 2; ++d) {
        dst[p * width / 2 + d] = static_cast<uint8_t>(at(j0 + d + width / 2, p) << 4 | at(j0 + d, p));
      }
    }
  };
  halves(0, 64, want.data());
  pairs(64, 16, want.data() + 64 * k / 2);
  int4_pack(q.data(), n, k, Int4Layout::Halves64, got.data());
  EXPECT_EQ(got, want);
  halves(0, 32, want.data());
  halves(32, 32, want.data() + 32 * k / 2);
  pairs(64, 16, want.data() + 64 * k / 2);
  int4_pack(q.data(), n, k, Int4Layout::Halves32, got.data());
  EXPECT_EQ(got, want);
  pairs(0, 32, want.data());
  pairs(32, 32, want.data() + 32 * k / 2);
  pairs(64, 16, want.data() + 64 * k / 2);
  int4_pack(q.data(), n, k, Int4Layout::Pairs, got.data());
  EXPECT_EQ(got, want);
  for (Int4Layout layout : kLayouts) {
    int4_pack(q.data(), n, k, layout, got.data());
    std::vector<int32_t> back(q.size());
    int4_unpack(got.data(), n, k, layout, back.data());
    EXPECT_EQ(back, q) << static_cast<int>(layout);
  }
}

// On our kernel, and on oneDNN where the build links it (Note [int8 products on oneDNN]).
TEST_P(QuantizedGemmTest, Int8ProductsAreExact) {
  Rng rng(13);
  const GemmLibrary saved = gemm_library();
  for (GemmLibrary library : {GemmLibrary::Own, GemmLibrary::Dnnl}) {
    if (!gemm_library_available(library)) continue;
    set_gemm_library(library);
    for (ScalarType a_dtype : {ScalarType::Int8, ScalarType::UInt8}) {
      for (int rep = 0; rep < 12; ++rep) {
        const int64_t m = uniform(rng, 1, 40), n = uniform(rng, 1, 600), k = uniform(rng, 1, 300);
        const bool a_t = chance(rng, 0.3), b_t = chance(rng, 0.3);
        std::vector<uint8_t> a(static_cast<size_t>(m * k));
        std::vector<int8_t> b(static_cast<size_t>(k * n));
        for (auto& v : a) v = static_cast<uint8_t>(uniform(rng, 0, 255));
        for (auto& v : b) v = static_cast<int8_t>(uniform(rng, -128, 127));
        std::vector<int32_t> c(static_cast<size_t>(m * n)), c_ref(c.size());
        Int8GemmArgs args{a_dtype,     m,        n,           k,           a.data(), a_t ? 1 : k,
                          a_t ? m : 1, b.data(), b_t ? 1 : n, b_t ? k : 1, c.data(), n};
        int8_gemm(args);
        args.c = c_ref.data();
        int8_gemm_ref(args);
        ASSERT_EQ(c, c_ref) << gemm_library_name(library) << " m" << m << " n" << n << " k" << k;
      }
    }
  }
  set_gemm_library(saved);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, QuantizedGemmTest,
                         ::testing::Values(Isa::Baseline, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
