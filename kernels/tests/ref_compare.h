// Test helpers for kernels whose scalar reference sums in double while the
// kernel sums in its accumulation type: an element-wise tolerance
// |got - want| <= rtol * |want| + atol, with rtol / atol chosen per dtype.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels::testutil {

struct Tolerance {
  double rtol = 0, atol = 0;
};

// The default tolerance of a result whose terms are about `scale` in size:
//   Float64: 1e-12 (double sums in another order: n * 2^-53 for n ~ 1e3);
//   Float32: 1e-5 (float sums of up to ~100 terms: n * 2^-24 = 6e-6);
//   Float16 / BFloat16: one ulp of the result relative (2^-10 / 2^-7): the
//   kernel's float result and the reference's double one round to the same
//   16-bit value or to neighbours; plus the float term for cancellation.
inline Tolerance tolerance(ScalarType type, double scale) {
  switch (type) {
    case ScalarType::Float64: return {1e-12, 1e-12 * scale};
    case ScalarType::Float32: return {1e-5, 1e-5 * scale};
    case ScalarType::Float16: return {std::ldexp(1.0, -10), 1e-5 * scale + 6e-8};
    default: return {std::ldexp(1.0, -7), 1e-5 * scale + 1e-38};
  }
}

// Element i of a floating buffer as a double.
inline double value(const Buffer& b, int64_t i) {
  return element_value(b.type(), b.data() + i * static_cast<int64_t>(element_size(b.type())));
}

// The largest finite |element| of a floating buffer (0 for an empty one).
inline double max_abs(const Buffer& b) {
  double m = 0;
  for (int64_t i = 0; i < b.count(); ++i) {
    const double v = std::abs(value(b, i));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

// Element-wise within tol; NaN matches NaN and an infinity the same infinity.
// got and want may have different dtypes (e.g. statistics in float).
inline ::testing::AssertionResult near_buffers(const Buffer& got, const Buffer& want, Tolerance tol) {
  if (got.count() != want.count()) return ::testing::AssertionFailure() << "sizes differ";
  for (int64_t i = 0; i < got.count(); ++i) {
    const double x = value(got, i), y = value(want, i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;  // equal infinities
    if (!(std::abs(x - y) <= tol.rtol * std::abs(y) + tol.atol)) {
      return ::testing::AssertionFailure() << "element " << i << " of " << got.count() << ": got " << x
                                           << ", reference " << y << " (rtol " << tol.rtol << ", atol " << tol.atol
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// The unit roundoff of a floating dtype (half its ulp at 1).
inline double unit_roundoff(ScalarType type) {
  switch (type) {
    case ScalarType::Float64: return std::ldexp(1.0, -53);
    case ScalarType::Float32: return std::ldexp(1.0, -24);
    case ScalarType::Float16: return std::ldexp(1.0, -11);
    default: return std::ldexp(1.0, -8);
  }
}

// For sums rounded to the dtype after every addition (m additions into an
// element): |got - want| <= (m + 1) * u * magnitude[i], where magnitude is
// the reference run on |inputs| (each element's sum of |terms|) and u the
// dtype's unit roundoff (plus the smallest subnormal steps).
inline ::testing::AssertionResult near_rounded_sums(const Buffer& got, const Buffer& want, const Buffer& magnitude,
                                                    double m) {
  const double rel = (m + 1) * unit_roundoff(got.type());
  for (int64_t i = 0; i < got.count(); ++i) {
    const double x = value(got, i), y = value(want, i), bound = rel * value(magnitude, i) + 1e-7 * rel;
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::abs(x - y) <= bound)) {
      return ::testing::AssertionFailure() << "element " << i << " of " << got.count() << ": got " << x
                                           << ", reference " << y << " (bound " << bound << ", m " << m << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// A copy of a floating buffer with every element replaced by its |value|.
inline Buffer abs_buffer(const Buffer& b) {
  Buffer out(b.type(), b.count());
  for (int64_t i = 0; i < b.count(); ++i) put_real(b.type(), out.element(i), std::abs(value(b, i)));
  return out;
}

// A floating buffer of `count` Normal(mean, sd) values.
inline Buffer normal_buffer(ScalarType type, int64_t count, Rng& rng, double sd = 1, double mean = 0) {
  Buffer b(type, count);
  std::normal_distribution<double> normal(mean, sd);
  for (int64_t i = 0; i < count; ++i) put_real(type, b.element(i), normal(rng));
  return b;
}

// A copy of b converted to another floating dtype (e.g. parameters in the
// accumulation type).
inline Buffer as_type(const Buffer& b, ScalarType type) {
  Buffer out(type, b.count());
  for (int64_t i = 0; i < b.count(); ++i) {
    put_real(type, out.element(i), value(b, i));
  }
  return out;
}

// A copy of b, so in-place kernels and their references get the same inputs.
inline Buffer clone(const Buffer& b) {
  Buffer out(b.type(), b.count());
  if (b.bytes() != 0) std::memcpy(out.data(), b.data(), b.bytes());
  return out;
}

// The accumulation dtype of a floating dtype: Float64 for Float64, else Float32.
inline ScalarType acc_type(ScalarType type) {
  return type == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
}

// Sets the compute-thread count for a scope (an odd count, so chunks do not
// line up with powers of two), restoring the previous one.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

inline constexpr ScalarType kFloatingTypes[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16,
                                                ScalarType::BFloat16};

}  // namespace mlu::kernels::testutil
