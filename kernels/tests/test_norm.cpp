// layer_norm / batch_norm / group_norm kernels against their double references
// (norm_ref.cpp): empty and size-1 shapes, rows not a multiple of the
// 16-lane partial sums, enough rows / channels for several thread chunks,
// optional parameters and outputs, every floating dtype. Tolerances:
// ref_compare.h's per dtype (Float32 1e-5, Float64 1e-12, 16-bit one ulp
// relative), relative to the largest reference element for cancellation.
#include "mlu_kernels/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class NormTest : public ::testing::TestWithParam<ScalarType> {};

struct Rows {
  int64_t rows, cols;
};
// Empty, size 1, odd widths around the 16-lane sums, and 1100 x 33 (three
// chunks of 496 rows: the kernel's grain is 16384 / cols rows).
constexpr Rows kRowShapes[] = {{0, 5}, {3, 0}, {1, 1}, {4, 1}, {1, 17}, {5, 15}, {3, 16},
                               {7, 33}, {2, 64}, {6, 127}, {1100, 33}};

TEST_P(NormTest, LayerNormMatchesReference) {
  const ScalarType type = GetParam(), acc = acc_type(type);
  const ThreadCount threads(3);
  Rng rng(31 + static_cast<int>(type));
  for (const Rows shape : kRowShapes) {
    for (int variant = 0; variant < 4; ++variant) {
      const int64_t rows = shape.rows, cols = shape.cols;
      const bool with_weight = variant != 1, with_bias = variant != 2, with_grad_input = variant != 3;
      const std::string what = std::string(scalar_type_name(type)) + " " + std::to_string(rows) + "x" +
                               std::to_string(cols) + " variant " + std::to_string(variant);
      // Rows with a mean of 2 (the variance pass must not cancel badly).
      const Buffer x = normal_buffer(type, rows * cols, rng, 1.0, 2.0);
      const Buffer weight = normal_buffer(acc, cols, rng), bias = normal_buffer(acc, cols, rng);
      const Buffer dy = normal_buffer(type, rows * cols, rng);
      const void* w = with_weight ? weight.data() : nullptr;
      const void* b = with_bias ? bias.data() : nullptr;
      const double eps = 1e-5;

      Buffer y(type, rows * cols), y_ref(type, rows * cols);
      Buffer mean(acc, rows), mean_ref(acc, rows), rstd(acc, rows), rstd_ref(acc, rows);
      layer_norm(type, rows, cols, x.data(), w, b, eps, y.data(), mean.data(), rstd.data());
      layer_norm_ref(type, rows, cols, x.data(), w, b, eps, y_ref.data(), mean_ref.data(), rstd_ref.data());
      ASSERT_TRUE(near_buffers(mean, mean_ref, tolerance(acc, max_abs(x)))) << "mean " << what;
      ASSERT_TRUE(near_buffers(rstd, rstd_ref, tolerance(acc, 0))) << "rstd " << what;
      ASSERT_TRUE(near_buffers(y, y_ref, tolerance(type, max_abs(y_ref)))) << "y " << what;

      // The backward ops from the same (reference) statistics.
      Buffer dx(type, rows * cols), dx_ref(type, rows * cols);
      Buffer dw(acc, cols), dw_ref(acc, cols), db(acc, cols), db_ref(acc, cols);
      void* gi = with_grad_input ? dx.data() : nullptr;
      void* gi_ref = with_grad_input ? dx_ref.data() : nullptr;
      const bool with_dw = variant != 2, with_db = variant != 1;
      layer_norm_backward(type, rows, cols, dy.data(), x.data(), mean_ref.data(), rstd_ref.data(), w, gi,
                          with_dw ? dw.data() : nullptr, with_db ? db.data() : nullptr);
      layer_norm_backward_ref(type, rows, cols, dy.data(), x.data(), mean_ref.data(), rstd_ref.data(), w, gi_ref,
                              with_dw ? dw_ref.data() : nullptr, with_db ? db_ref.data() : nullptr);
      ASSERT_TRUE(near_buffers(dx, dx_ref, tolerance(type, max_abs(dx_ref)))) << "grad input " << what;
      ASSERT_TRUE(near_buffers(dw, dw_ref, tolerance(acc, max_abs(dw_ref)))) << "grad weight " << what;
      ASSERT_TRUE(near_buffers(db, db_ref, tolerance(acc, max_abs(db_ref)))) << "grad bias " << what;
    }
  }
}

struct Planes {
  int64_t n, channels, spatial;
};
// Empty batch / spatial, size-1 dims, odd planes, and 4 x 9 x 1000 (three
// chunks of channels: the grain is 16384 / (n * spatial) = 4 channels).
constexpr Planes kPlaneShapes[] = {{0, 3, 4}, {2, 3, 0}, {1, 1, 1}, {1, 4, 1}, {2, 1, 33}, {3, 5, 17},
                                   {5, 2, 16}, {2, 3, 49}, {4, 9, 1000}};

TEST_P(NormTest, BatchNormMatchesReference) {
  const ScalarType type = GetParam(), acc = acc_type(type);
  const ThreadCount threads(3);
  Rng rng(47 + static_cast<int>(type));
  for (const Planes shape : kPlaneShapes) {
    for (int variant = 0; variant < 4; ++variant) {
      const int64_t n = shape.n, c = shape.channels, sp = shape.spatial, count = n * c * sp;
      const bool training = variant % 2 == 0, with_params = variant < 2;
      const std::string what = std::string(scalar_type_name(type)) + " " + std::to_string(n) + "x" +
                               std::to_string(c) + "x" + std::to_string(sp) + " variant " + std::to_string(variant);
      const Buffer x = normal_buffer(type, count, rng, 1.5, -1.0), dy = normal_buffer(type, count, rng);
      const Buffer weight = normal_buffer(acc, c, rng), bias = normal_buffer(acc, c, rng);
      const void* w = with_params ? weight.data() : nullptr;
      const void* b = with_params ? bias.data() : nullptr;

      Buffer mean(acc, c), mean_ref(acc, c), batch_invstd(acc, c), batch_invstd_ref(acc, c), var_ref(acc, c);
      batch_norm_training_statistics(type, n, c, sp, x.data(), 1e-5, 0.1, mean.data(), batch_invstd.data(), nullptr,
                                     nullptr);
      batch_norm_statistics_ref(type, n, c, sp, x.data(), mean_ref.data(), var_ref.data());
      for (int64_t k = 0; k < c; ++k) put_real(acc, batch_invstd_ref.element(k), 1 / std::sqrt(value(var_ref, k) + 1e-5));
      ASSERT_TRUE(near_buffers(mean, mean_ref, tolerance(acc, max_abs(x)))) << "mean " << what;
      ASSERT_TRUE(near_buffers(batch_invstd, batch_invstd_ref, tolerance(acc, max_abs(batch_invstd_ref))))
          << "invstd " << what;

      // Training: the batch statistics; eval: running statistics. An empty
      // batch's statistics are NaN, and the kernel's grad_weight is then
      // NaN * 0 (it factors invstd out of the empty sum) where the definition
      // gives 0; the glue never calls it on an empty batch (it zeroes the
      // gradients itself), so empty batches get finite statistics here.
      const bool batch_stats = training && n * sp > 0;
      Buffer stat_mean = batch_stats ? clone(mean_ref) : normal_buffer(acc, c, rng);
      Buffer invstd(acc, c);
      for (int64_t k = 0; k < c; ++k) {
        const double v = batch_stats ? value(var_ref, k) : std::abs(std::normal_distribution<>()(rng));
        put_real(acc, invstd.element(k), 1 / std::sqrt(v + 1e-5));
      }

      Buffer y(type, count), y_ref(type, count);
      batch_norm_apply(type, n, c, sp, x.data(), stat_mean.data(), invstd.data(), w, b, y.data());
      batch_norm_apply_ref(type, n, c, sp, x.data(), stat_mean.data(), invstd.data(), w, b, y_ref.data());
      // The kernel computes x * scale + (bias - mean * scale) (the CPU's
      // order), which cancels when invstd is large (var 0 for one element
      // per channel): the tolerance is relative to the terms' size.
      double terms = 0;
      for (int64_t k = 0; k < c; ++k) {
        const double scale = value(invstd, k) * (with_params ? value(weight, k) : 1.0);
        terms = std::max(terms, std::abs(scale) * (max_abs(x) + std::abs(value(stat_mean, k))));
      }
      ASSERT_TRUE(near_buffers(y, y_ref, tolerance(type, std::max(terms, max_abs(y_ref))))) << "apply " << what;

      Buffer dx(type, count), dx_ref(type, count), dw(acc, c), dw_ref(acc, c), db(acc, c), db_ref(acc, c);
      const bool with_dx = variant != 3;
      batch_norm_backward(type, n, c, sp, dy.data(), x.data(), stat_mean.data(), invstd.data(), w, training,
                          with_dx ? dx.data() : nullptr, dw.data(), variant == 1 ? nullptr : db.data());
      batch_norm_backward_ref(type, n, c, sp, dy.data(), x.data(), stat_mean.data(), invstd.data(), w, training,
                              with_dx ? dx_ref.data() : nullptr, dw_ref.data(), variant == 1 ? nullptr : db_ref.data());
      ASSERT_TRUE(near_buffers(dx, dx_ref, tolerance(type, max_abs(dx_ref)))) << "grad input " << what;
      ASSERT_TRUE(near_buffers(dw, dw_ref, tolerance(acc, max_abs(dw_ref)))) << "grad weight " << what;
      ASSERT_TRUE(near_buffers(db, db_ref, tolerance(acc, max_abs(db_ref)))) << "grad bias " << what;
    }
  }
}

// batch_norm_training_statistics: the statistics of batch_norm_statistics_ref,
// invstd from them, and the running statistics updated in place.
TEST_P(NormTest, TrainingStatisticsUpdateRunningStatistics) {
  const ScalarType type = GetParam(), acc = acc_type(type);
  const ThreadCount threads(3);
  Rng rng(53 + static_cast<int>(type));
  const int64_t n = 4, c = 37, sp = 29, count = n * c * sp;
  const Buffer x = normal_buffer(type, count, rng, 1.5, -1.0);
  Buffer mean(acc, c), invstd(acc, c), mean_ref(acc, c), var_ref(acc, c);
  Buffer running_mean = normal_buffer(acc, c, rng), running_var = normal_buffer(acc, c, rng, 0.1, 1.0);
  const Buffer old_mean = clone(running_mean), old_var = clone(running_var);
  batch_norm_training_statistics(type, n, c, sp, x.data(), 1e-5, 0.25, mean.data(), invstd.data(),
                                 running_mean.data(), running_var.data());
  batch_norm_statistics_ref(type, n, c, sp, x.data(), mean_ref.data(), var_ref.data());
  ASSERT_TRUE(near_buffers(mean, mean_ref, tolerance(acc, max_abs(x))));
  Buffer invstd_ref(acc, c), running_mean_ref(acc, c), running_var_ref(acc, c);
  const double m = static_cast<double>(n * sp);
  for (int64_t k = 0; k < c; ++k) {
    put_real(acc, invstd_ref.element(k), 1 / std::sqrt(value(var_ref, k) + 1e-5));
    put_real(acc, running_mean_ref.element(k), 0.25 * value(mean_ref, k) + 0.75 * value(old_mean, k));
    put_real(acc, running_var_ref.element(k), 0.25 * value(var_ref, k) * m / (m - 1) + 0.75 * value(old_var, k));
  }
  EXPECT_TRUE(near_buffers(invstd, invstd_ref, tolerance(acc, max_abs(invstd_ref))));
  EXPECT_TRUE(near_buffers(running_mean, running_mean_ref, tolerance(acc, max_abs(x))));
  EXPECT_TRUE(near_buffers(running_var, running_var_ref, tolerance(acc, max_abs(running_var_ref))));
}

TEST_P(NormTest, GroupNormMatchesReference) {
  const ScalarType type = GetParam(), acc = acc_type(type);
  const ThreadCount threads(3);
  Rng rng(59 + static_cast<int>(type));
  struct Shape {
    int64_t n, channels, spatial, groups;
  };
  // Groups of one channel and of all, spatial sizes around the 16-lane sums,
  // and enough rows for several thread chunks.
  for (const Shape s : {Shape{2, 6, 5, 3}, Shape{3, 8, 17, 2}, Shape{1, 4, 1, 4}, Shape{2, 5, 33, 1},
                        Shape{4, 32, 40, 8}}) {
    for (const bool with_params : {true, false}) {
      const int64_t count = s.n * s.channels * s.spatial, rows = s.n * s.groups;
      const std::string what = std::string(scalar_type_name(type)) + " " + std::to_string(s.n) + "x" +
                               std::to_string(s.channels) + "x" + std::to_string(s.spatial) + " groups " +
                               std::to_string(s.groups);
      const Buffer x = normal_buffer(type, count, rng, 1.5, -1.0), dy = normal_buffer(type, count, rng);
      const Buffer weight = normal_buffer(acc, s.channels, rng), bias = normal_buffer(acc, s.channels, rng);
      const void* w = with_params ? weight.data() : nullptr;
      const void* b = with_params ? bias.data() : nullptr;
      Buffer y(type, count), y_ref(type, count), mean(acc, rows), mean_ref(acc, rows), rstd(acc, rows),
          rstd_ref(acc, rows);
      group_norm(type, s.n, s.channels, s.spatial, s.groups, x.data(), w, b, 1e-5, y.data(), mean.data(), rstd.data());
      group_norm_ref(type, s.n, s.channels, s.spatial, s.groups, x.data(), w, b, 1e-5, y_ref.data(), mean_ref.data(),
                     rstd_ref.data());
      ASSERT_TRUE(near_buffers(mean, mean_ref, tolerance(acc, max_abs(x)))) << "mean " << what;
      ASSERT_TRUE(near_buffers(rstd, rstd_ref, tolerance(acc, max_abs(rstd_ref)))) << "rstd " << what;
      // x * scale + shift cancels like batch norm's: relative to the terms.
      const double terms = max_abs(rstd_ref) * (with_params ? max_abs(weight) : 1.0) * (max_abs(x) + max_abs(mean_ref));
      ASSERT_TRUE(near_buffers(y, y_ref, tolerance(type, std::max(terms, max_abs(y_ref))))) << "forward " << what;

      Buffer dx(type, count), dx_ref(type, count), dw(acc, s.channels), dw_ref(acc, s.channels),
          db(acc, s.channels), db_ref(acc, s.channels);
      group_norm_backward(type, s.n, s.channels, s.spatial, s.groups, dy.data(), x.data(), mean_ref.data(),
                          rstd_ref.data(), w, dx.data(), dw.data(), db.data());
      group_norm_backward_ref(type, s.n, s.channels, s.spatial, s.groups, dy.data(), x.data(), mean_ref.data(),
                              rstd_ref.data(), w, dx_ref.data(), dw_ref.data(), db_ref.data());
      const double dx_terms = max_abs(rstd_ref) * (with_params ? max_abs(weight) : 1.0) * max_abs(dy);
      ASSERT_TRUE(near_buffers(dx, dx_ref, tolerance(type, std::max(dx_terms, max_abs(dx_ref))))) << "grad input " << what;
      ASSERT_TRUE(near_buffers(dw, dw_ref, tolerance(acc, max_abs(dw_ref)))) << "grad weight " << what;
      ASSERT_TRUE(near_buffers(db, db_ref, tolerance(acc, max_abs(db_ref)))) << "grad bias " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NormTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
