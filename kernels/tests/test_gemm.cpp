// gemm against gemm_ref on every ISA: random sizes around the register and
// cache blocks, every dtype, transposed / strided / column-major operands,
// alpha and beta (beta == 0 must not read C), batches with broadcast
// operands, and the thread splits.
#include "mlu_kernels/gemm.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

double epsilon(ScalarType type) {
  switch (type) {
    case ScalarType::Float64: return std::numeric_limits<double>::epsilon();
    case ScalarType::Float16: return 1.0 / 1024;
    case ScalarType::BFloat16: return 1.0 / 128;
    default: return std::numeric_limits<float>::epsilon();
  }
}

// A rows x cols matrix stored row-major, column-major or with padded rows,
// in a buffer of `count` matrices `batch_stride` apart (0: one, broadcast).
struct Stored {
  Buffer buffer;
  MatrixView view;
  int64_t batch_stride;
};

Stored random_matrix(Rng& rng, ScalarType type, int64_t rows, int64_t cols, int64_t count, bool broadcast) {
  const int layout = static_cast<int>(uniform(rng, 0, 2));
  const int64_t pad = uniform(rng, 0, 3);
  int64_t rs = cols + pad, cs = 1;
  if (layout == 1) {
    rs = 1;
    cs = rows + pad;
  }
  const int64_t span = layout == 1 ? cs * std::max<int64_t>(cols, 1) : rs * std::max<int64_t>(rows, 1);
  const int64_t stride = broadcast ? 0 : span;
  Stored s{Buffer(type, span * (broadcast ? 1 : count)), {nullptr, rs, cs}, stride};
  fill_normal(s.buffer, rng);
  s.view.data = s.buffer.data();
  return s;
}

// Our kernel on each ISA, and each library this build links (Note [Vendor
// BLAS], Note [oneDNN products]); a library runs with the detected ISA
// (it picks its own code path).
struct GemmConfig {
  Isa isa;
  GemmLibrary library;
};

class GemmTest : public ::testing::TestWithParam<GemmConfig> {
 protected:
  void SetUp() override {
    GemmConfig config = GetParam();
    if (config.library != GemmLibrary::Own) config.isa = detected_isa();
    if (config.isa > detected_isa()) GTEST_SKIP() << "CPU lacks " << isa_name(config.isa);
    if (!gemm_library_available(config.library)) GTEST_SKIP() << "built without " << gemm_library_name(config.library);
    saved_ = active_isa();
    saved_library_ = gemm_library();
    set_isa(config.isa);
    set_gemm_library(config.library);
  }
  void TearDown() override {
    set_isa(saved_);
    set_gemm_library(saved_library_);
  }
  Isa saved_ = Isa::Baseline;
  GemmLibrary saved_library_ = GemmLibrary::Own;
};

// |C - ref| <= (k + 2) * eps(compute) * sum |alpha a b| + |beta c| terms,
// plus half an ulp of C's dtype for the final rounding.
::testing::AssertionResult close_to_reference(const GemmArgs& args, const Stored& a, const Stored& b,
                                              const Buffer& c_before, const Buffer& got, const Buffer& want) {
  const ScalarType t = args.dtype;
  const double eps = t == ScalarType::Float64 ? epsilon(t) : epsilon(ScalarType::Float32);
  const int64_t es = static_cast<int64_t>(element_size(t));
  for (int64_t bt = 0; bt < args.batch; ++bt) {
    for (int64_t i = 0; i < args.m; ++i) {
      for (int64_t j = 0; j < args.n; ++j) {
        double magnitude = 0;
        for (int64_t p = 0; p < args.k; ++p) {
          const int64_t ai = bt * a.batch_stride + i * a.view.row_stride + p * a.view.col_stride;
          const int64_t bi = bt * b.batch_stride + p * b.view.row_stride + j * b.view.col_stride;
          magnitude += std::abs(element_value(t, a.buffer.data() + ai * es) * element_value(t, b.buffer.data() + bi * es));
        }
        const int64_t ci = bt * args.batch_stride_c + i * args.c.row_stride + j * args.c.col_stride;
        const double old = args.beta == 0 ? 0 : std::abs(args.beta * element_value(t, c_before.data() + ci * es));
        const double x = element_value(t, got.data() + ci * es), y = element_value(t, want.data() + ci * es);
        const double bound = (args.k + 2) * eps * (std::abs(args.alpha) * magnitude + old) +
                             epsilon(t) * std::abs(y) + 1e-300;
        if (!(std::abs(x - y) <= bound)) {
          return ::testing::AssertionFailure() << "batch " << bt << " element (" << i << ", " << j << "): " << x
                                               << " vs " << y << " (bound " << bound << ")";
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs gemm(args) on c's buffer and gemm_ref on a copy; compares them.
::testing::AssertionResult gemm_matches_reference(const GemmArgs& args, const Stored& a, const Stored& b,
                                                  Stored& c) {
  const Buffer before = c.buffer;
  Buffer want = c.buffer;
  GemmArgs ref = args;
  ref.c.data = want.data();
  gemm_ref(ref);
  gemm(args);
  return close_to_reference(args, a, b, before, c.buffer, want);
}

TEST_P(GemmTest, MatchesReferenceOnRandomProblems) {
  Rng rng(5);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16};
  // Around the register blocks (4/6/12 rows, 8..64 columns) and the depth block (256).
  const int64_t sizes[] = {0, 1, 2, 5, 11, 12, 13, 17, 31, 33, 64, 97, 130};
  const int64_t depths[] = {0, 1, 3, 16, 255, 256, 257, 300};
  for (int trial = 0; trial < 80; ++trial) {
    GemmArgs args{};
    args.dtype = types[uniform(rng, 0, 3)];
    args.m = sizes[uniform(rng, 0, 12)];
    args.n = sizes[uniform(rng, 0, 12)];
    args.k = depths[uniform(rng, 0, 7)];
    args.batch = chance(rng, 0.3) ? uniform(rng, 2, 5) : 1;
    const double alphas[] = {1, -0.5, 2, 0};
    const double betas[] = {0, 1, 0.25};
    args.alpha = alphas[uniform(rng, 0, 3)];
    args.beta = betas[uniform(rng, 0, 2)];
    Stored a = random_matrix(rng, args.dtype, args.m, args.k, args.batch, chance(rng, 0.2));
    Stored b = random_matrix(rng, args.dtype, args.k, args.n, args.batch, chance(rng, 0.2));
    Stored c = random_matrix(rng, args.dtype, args.m, args.n, args.batch, false);
    if (args.beta == 0) {  // must not be read
      for (int64_t i = 0; i < c.buffer.count(); ++i) put_real(args.dtype, c.buffer.element(i), NAN);
    }
    args.a = a.view;
    args.b = b.view;
    args.c = c.view;
    args.batch_stride_a = a.batch_stride;
    args.batch_stride_b = b.batch_stride;
    args.batch_stride_c = c.batch_stride;
    ASSERT_TRUE(gemm_matches_reference(args, a, b, c))
        << scalar_type_name(args.dtype) << " m " << args.m << " n " << args.n << " k " << args.k << " batch "
        << args.batch << " alpha " << args.alpha << " beta " << args.beta << " A strides " << a.view.row_stride
        << "," << a.view.col_stride << " B strides " << b.view.row_stride << "," << b.view.col_stride
        << " C strides " << c.view.row_stride << "," << c.view.col_stride;
  }
}

// Large enough for several cache blocks in every direction and both thread
// splits (row blocks; B panels when there are fewer row blocks than threads).
TEST_P(GemmTest, ManyBlocksAndThreadSplits) {
  Rng rng(6);
  const int saved_threads = num_threads();
  const int64_t shapes[][3] = {{200, 1100, 300}, {7, 2100, 40}, {300, 24, 520}};
  for (const auto& s : shapes) {
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      GemmArgs args{};
      args.dtype = ScalarType::Float32;
      args.m = s[0];
      args.n = s[1];
      args.k = s[2];
      args.alpha = 1.5;
      args.beta = 0.5;
      Stored a = random_matrix(rng, args.dtype, args.m, args.k, 1, false);
      Stored b = random_matrix(rng, args.dtype, args.k, args.n, 1, false);
      Stored c = random_matrix(rng, args.dtype, args.m, args.n, 1, false);
      args.a = a.view;
      args.b = b.view;
      args.c = c.view;
      ASSERT_TRUE(gemm_matches_reference(args, a, b, c))
          << "m " << args.m << " n " << args.n << " k " << args.k << " threads " << threads;
    }
  }
  set_num_threads(saved_threads);
}

// Small single-threaded products of row-major operands skip packing (Note
// [Unpacked small products]): every row count around the register block,
// padded rows, batches split over threads.
TEST_P(GemmTest, UnpackedSmallProducts) {
  Rng rng(7);
  for (int64_t m : {1, 4, 11, 12, 13, 25}) {
    for (int64_t n : {64, 128}) {
      for (int64_t k : {1, 7, 64, 300}) {
        for (int64_t batch : {1, 6}) {
          GemmArgs args{};
          args.dtype = ScalarType::Float32;
          args.m = m;
          args.n = n;
          args.k = k;
          args.alpha = -1.5;
          args.beta = batch == 1 ? 0.0 : 2.0;
          args.batch = batch;
          const int64_t lda = k + 3, ldb = n + 5, ldc = n + 1;
          Stored a{Buffer(args.dtype, batch * m * lda), {nullptr, lda, 1}, m * lda};
          Stored b{Buffer(args.dtype, batch * k * ldb), {nullptr, ldb, 1}, k * ldb};
          Stored c{Buffer(args.dtype, batch * m * ldc), {nullptr, ldc, 1}, m * ldc};
          for (Stored* s : {&a, &b, &c}) {
            fill_normal(s->buffer, rng);
            s->view.data = s->buffer.data();
          }
          args.a = a.view;
          args.b = b.view;
          args.c = c.view;
          args.batch_stride_a = a.batch_stride;
          args.batch_stride_b = b.batch_stride;
          args.batch_stride_c = c.batch_stride;
          ASSERT_TRUE(gemm_matches_reference(args, a, b, c))
              << "m " << m << " n " << n << " k " << k << " batch " << batch;
        }
      }
    }
  }
}

// BFloat16 shapes for the AMX path (Note [AMX tiles]; the other ISAs take
// them too): row-major A with whole 32-row, 32-deep panels is tile-loaded in
// place, other A is packed; depths over one 512-deep slice; beta and alpha.
TEST_P(GemmTest, BFloat16TilePanels) {
  Rng rng(8);
  // Also an odd depth (Note [BFloat16 dot products] pads the last pair) and
  // a transposed B (a linear layer's weight: pairs adjacent in memory).
  const int64_t shapes[][3] = {{64, 48, 64}, {96, 100, 544}, {32, 32, 1056}, {70, 40, 96}, {64, 33, 40}, {50, 70, 333}};
  for (const auto& s : shapes) {
    for (bool transposed_a : {false, true}) {
      for (double beta : {0.0, 0.5}) {
        const bool transposed_b = beta != 0;
        GemmArgs args{};
        args.dtype = ScalarType::BFloat16;
        args.m = s[0];
        args.n = s[1];
        args.k = s[2];
        args.alpha = beta == 0 ? 1.0 : 2.0;
        args.beta = beta;
        const int64_t lda = transposed_a ? args.m : args.k;
        Stored a{Buffer(args.dtype, args.m * args.k), {nullptr, transposed_a ? 1 : lda, transposed_a ? lda : 1}, 0};
        Stored b{Buffer(args.dtype, args.k * args.n),
                 {nullptr, transposed_b ? 1 : args.n, transposed_b ? args.k : 1}, 0};
        Stored c{Buffer(args.dtype, args.m * args.n), {nullptr, args.n, 1}, 0};
        for (Stored* st : {&a, &b, &c}) {
          fill_normal(st->buffer, rng);
          st->view.data = st->buffer.data();
        }
        args.a = a.view;
        args.b = b.view;
        args.c = c.view;
        ASSERT_TRUE(gemm_matches_reference(args, a, b, c))
            << "m " << args.m << " n " << args.n << " k " << args.k << " transposed A " << transposed_a << " beta "
            << beta << " transposed B " << transposed_b;
      }
    }
  }
}

// 16-bit products big enough for a library to take (Note [oneDNN products]):
// row and column cuts over 1-3 threads, a transposed B (a linear layer's
// weight), float and 16-bit C, batches.
TEST_P(GemmTest, HalfProductsAtModelShapes) {
  Rng rng(13);
  const int saved_threads = num_threads();
  const int64_t shapes[][4] = {{300, 200, 64, 1}, {24, 700, 96, 1}, {128, 128, 128, 2}};
  for (ScalarType type : {ScalarType::BFloat16, ScalarType::Float16}) {
    for (const auto& s : shapes) {
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        const bool transposed_b = threads != 2, float_c = threads == 3;
        GemmArgs args{};
        args.dtype = type;
        args.float_c = float_c;
        args.m = s[0];
        args.n = s[1];
        args.k = s[2];
        args.batch = s[3];
        args.alpha = 1;
        args.beta = 0;
        Stored a = random_matrix(rng, type, args.m, args.k, args.batch, false);
        Stored b{Buffer(type, args.k * args.n * args.batch),
                 {nullptr, transposed_b ? 1 : args.n, transposed_b ? args.k : 1}, args.k * args.n};
        fill_normal(b.buffer, rng);
        b.view.data = b.buffer.data();
        const ScalarType c_type = float_c ? ScalarType::Float32 : type;
        Stored c = random_matrix(rng, c_type, args.m, args.n, args.batch, false);
        args.a = a.view;
        args.b = b.view;
        args.c = c.view;
        args.batch_stride_a = a.batch_stride;
        args.batch_stride_b = b.batch_stride;
        args.batch_stride_c = c.batch_stride;
        Buffer want = c.buffer;
        GemmArgs ref = args;
        ref.c.data = want.data();
        gemm_ref(ref);
        gemm(args);
        const double tol = float_c ? 1e-4 : type == ScalarType::BFloat16 ? 1e-2 : 2e-3;
        for (int64_t i = 0; i < c.buffer.count(); ++i) {
          const double got = element_value(c_type, c.buffer.element(i)), expect = element_value(c_type, want.element(i));
          ASSERT_NEAR(got, expect, tol * (1 + std::abs(expect)))
              << scalar_type_name(type) << " m " << args.m << " n " << args.n << " k " << args.k << " threads "
              << threads << " element " << i;
        }
      }
    }
  }
  set_num_threads(saved_threads);
}

// float_c: Float16/BFloat16 operands, float results (not rounded to 16 bits).
TEST_P(GemmTest, FloatResultsOfHalfOperands) {
  Rng rng(10);
  for (ScalarType type : {ScalarType::BFloat16, ScalarType::Float16}) {
    for (const auto& s : {std::array<int64_t, 3>{64, 64, 96}, std::array<int64_t, 3>{13, 70, 300},
                          std::array<int64_t, 3>{1, 50, 20}, std::array<int64_t, 3>{40, 1, 33}}) {
      GemmArgs args{};
      args.dtype = type;
      args.float_c = true;
      args.m = s[0];
      args.n = s[1];
      args.k = s[2];
      args.alpha = 1;
      args.beta = 0.5;
      Stored a = random_matrix(rng, type, args.m, args.k, 1, false);
      Stored b = random_matrix(rng, type, args.k, args.n, 1, false);
      Stored c = random_matrix(rng, ScalarType::Float32, args.m, args.n, 1, false);
      args.a = a.view;
      args.b = b.view;
      args.c = c.view;
      Buffer want = c.buffer;
      GemmArgs ref = args;
      ref.c.data = want.data();
      gemm_ref(ref);
      gemm(args);
      for (int64_t i = 0; i < args.m; ++i) {
        for (int64_t j = 0; j < args.n; ++j) {
          const int64_t at = i * c.view.row_stride + j * c.view.col_stride;
          const double x = element_value(ScalarType::Float32, c.buffer.data() + at * 4);
          const double y = element_value(ScalarType::Float32, want.data() + at * 4);
          ASSERT_NEAR(x, y, 1e-4 * (1 + std::abs(y))) << scalar_type_name(type) << " m " << args.m << " n " << args.n;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmTest,
                         ::testing::Values(GemmConfig{Isa::Baseline, GemmLibrary::Own},
                                           GemmConfig{Isa::Avx2, GemmLibrary::Own},
                                           GemmConfig{Isa::Avx512, GemmLibrary::Own},
                                           GemmConfig{Isa::Avx512Bf16, GemmLibrary::Own},
                                           GemmConfig{Isa::Baseline, GemmLibrary::Mkl},
                                           GemmConfig{Isa::Baseline, GemmLibrary::Dnnl}),
                         [](const auto& info) {
                           return info.param.library == GemmLibrary::Own
                                      ? std::string(isa_name(info.param.isa))
                                      : std::string(gemm_library_name(info.param.library));
                         });

// BLAS's rules: beta == 0 does not read C, alpha == 0 does not read A and B.
// Note [GEMM bias row]: a bias row takes C's place in the beta term, C (NaN
// here) is never read, on every path: the workspace store (16-bit C), the
// rows written into C first (float C, gemv shapes, k == 0, alpha == 0),
// strided and broadcast (stride 0) biases.
TEST(Gemm, BiasRowTakesTheBetaTerm) {
  Rng rng(11);
  const ScalarType types[] = {ScalarType::BFloat16, ScalarType::Float16, ScalarType::Float32, ScalarType::Float64};
  const int64_t shapes[][3] = {{37, 70, 45}, {1, 40, 30}, {20, 1, 30}, {16, 24, 0}, {64, 96, 600}};
  for (ScalarType type : types) {
    for (const auto& sh : shapes) {
      for (int64_t stride : {1, 2, 0}) {
        for (double alpha : {1.0, -0.5, 0.0}) {
          GemmArgs args{};
          args.dtype = type;
          args.m = sh[0];
          args.n = sh[1];
          args.k = sh[2];
          args.alpha = alpha;
          args.beta = 0.75;
          Stored a = random_matrix(rng, type, args.m, args.k, 1, false);
          Stored b = random_matrix(rng, type, args.k, args.n, 1, false);
          Stored c{Buffer(type, args.m * args.n), {nullptr, args.n, 1}, 0};
          for (int64_t i = 0; i < c.buffer.count(); ++i) put_real(type, c.buffer.element(i), NAN);
          c.view.data = c.buffer.data();
          Buffer bias(type, std::max<int64_t>(1, args.n * std::max<int64_t>(stride, 1)));
          fill_normal(bias, rng);
          Buffer expanded(type, args.m * args.n);  // the bias rows, as the C the bound reads
          const int64_t es = static_cast<int64_t>(element_size(type));
          for (int64_t i = 0; i < args.m; ++i) {
            for (int64_t j = 0; j < args.n; ++j) {
              std::memcpy(expanded.element(i * args.n + j), bias.data() + j * stride * es, static_cast<size_t>(es));
            }
          }
          args.a = a.view;
          args.b = b.view;
          args.c = c.view;
          args.bias = bias.data();
          args.bias_stride = stride;
          Buffer want = c.buffer;
          GemmArgs ref = args;
          ref.c.data = want.data();
          gemm_ref(ref);
          gemm(args);
          ASSERT_TRUE(close_to_reference(args, a, b, expanded, c.buffer, want))
              << scalar_type_name(type) << " m " << args.m << " n " << args.n << " k " << args.k << " bias stride "
              << stride << " alpha " << alpha;
        }
      }
    }
  }
}

TEST(Gemm, ZeroScalarsDoNotReadOperands) {
  const float nan = NAN;
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, nan);
  GemmArgs args{ScalarType::Float32, 2, 2, 3, 1.0, 0.0, {a.data(), 3, 1}, {b.data(), 2, 1}, {c.data(), 2, 1}};
  gemm(args);
  for (float v : c) EXPECT_EQ(v, 3.0f);
  a[0] = nan;
  args.alpha = 0;
  args.beta = 2;
  gemm(args);
  for (float v : c) EXPECT_EQ(v, 6.0f);
  args.beta = 0;
  gemm(args);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// Note [Integer products]: every integer dtype over its whole range (sums and
// products overflow), a transposed B, a batch with a broadcast A, alpha and
// beta (beta == 0 must not read C): equal to a loop in 64-bit modular
// arithmetic truncated to the type.
template <class T>
void check_integer_gemm(ScalarType dtype) {
  const int64_t batch = 3, m = 7, n = 13, k = 29;
  std::mt19937_64 gen(11);
  auto fill = [&](std::vector<T>& v) {
    for (T& x : v) x = static_cast<T>(gen());
  };
  std::vector<T> a(m * k), b(batch * n * k), c(batch * m * n);
  fill(a);
  fill(b);
  for (double beta : {0.0, -3.0}) {
    fill(c);
    const std::vector<T> c0 = c;
    GemmArgs args{dtype, m, n, k, 5.0, beta, {a.data(), k, 1}, {b.data(), 1, k}, {c.data(), n, 1}};  // B = Bt^T
    args.batch = batch;
    args.batch_stride_a = 0;  // broadcast A
    args.batch_stride_b = n * k;
    args.batch_stride_c = m * n;
    gemm(args);
    for (int64_t t = 0; t < batch; ++t) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            acc += static_cast<uint64_t>(static_cast<int64_t>(a[i * k + p])) *
                   static_cast<uint64_t>(static_cast<int64_t>(b[t * n * k + j * k + p]));
          }
          uint64_t want = 5 * acc;
          if (beta != 0) {
            want += static_cast<uint64_t>(-3) * static_cast<uint64_t>(static_cast<int64_t>(c0[t * m * n + i * n + j]));
          }
          ASSERT_EQ(c[t * m * n + i * n + j], static_cast<T>(want))
              << scalar_type_name(dtype) << " beta " << beta << " at " << t << ", " << i << ", " << j;
        }
      }
    }
  }
}

TEST(Gemm, IntegerProductsWrapLikeTheCpu) {
  set_num_threads(2);
  check_integer_gemm<uint8_t>(ScalarType::UInt8);
  check_integer_gemm<int8_t>(ScalarType::Int8);
  check_integer_gemm<int16_t>(ScalarType::Int16);
  check_integer_gemm<int32_t>(ScalarType::Int32);
  check_integer_gemm<int64_t>(ScalarType::Int64);
  EXPECT_FALSE(gemm_supports(ScalarType::Bool));
}

}  // namespace
}  // namespace mlu::kernels
