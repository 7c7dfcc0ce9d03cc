// Test helpers: random shapes, random strided views over fresh buffers (permuted,
// sliced, flipped, optionally broadcast), random element values per dtype, and
// an element-wise buffer comparison that treats any two NaNs as equal.
// Everything is seeded by the caller, so a failure reproduces exactly.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/float8.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// gtest prints test parameters through this (found by ADL).
inline void PrintTo(ScalarType type, std::ostream* os) { *os << scalar_type_name(type); }

}  // namespace mlu::kernels

namespace mlu::kernels::testutil {

using Rng = std::mt19937_64;

inline constexpr ScalarType kAllTypes[] = {
    ScalarType::Bool,    ScalarType::UInt8,        ScalarType::Int8,
    ScalarType::Int16,   ScalarType::Int32,        ScalarType::Int64,
    ScalarType::Float16, ScalarType::BFloat16,     ScalarType::Float32,
    ScalarType::Float64, ScalarType::ComplexFloat, ScalarType::ComplexDouble,
};

// The storage-only types (Note [Storage-only types]): copies and fills only.
inline constexpr ScalarType kFloat8Types[] = {
    ScalarType::Float8_e4m3fn,
    ScalarType::Float8_e5m2,
    ScalarType::Float8_e4m3fnuz,
    ScalarType::Float8_e5m2fnuz,
};

inline bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }

inline int64_t uniform(Rng& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// 0 to 6 dims of sizes 0..7 (0 and 1 on purpose, but rarely enough that most
// shapes are non-empty); sometimes one long dim to reach vector loop tails.
inline Shape random_shape(Rng& rng) {
  Shape shape;
  if (chance(rng, 0.1)) {
    shape.ndim = 1;
    shape.sizes[0] = uniform(rng, 0, 1000);
    return shape;
  }
  shape.ndim = static_cast<int>(uniform(rng, 0, 6));
  for (int d = 0; d < shape.ndim; ++d) {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng);
    shape.sizes[d] = r < 0.03 ? 0 : r < 0.18 ? 1 : uniform(rng, 2, 7);
  }
  return shape;
}

// A view over a buffer of `span` elements whose element [0,...,0] is at `offset`.
struct ViewLayout {
  Strides strides;
  int64_t offset = 0;
  int64_t span = 1;
};

// Nested (hence non-overlapping unless broadcast) layouts: a random dim order,
// gaps between elements and rows, negative strides, and stride-0 dims when
// allow_broadcast. About a third of the layouts are plain contiguous.
inline ViewLayout random_layout(const Shape& shape, Rng& rng, bool allow_broadcast) {
  ViewLayout layout;
  std::vector<int> order(static_cast<size_t>(shape.ndim));
  std::iota(order.begin(), order.end(), 0);
  const bool contiguous = chance(rng, 0.35);
  if (!contiguous) std::shuffle(order.begin(), order.end(), rng);
  int64_t running = 1;
  for (int j = shape.ndim - 1; j >= 0; --j) {
    const int d = order[static_cast<size_t>(j)];
    const int64_t step = contiguous || chance(rng, 0.6) ? 1 : uniform(rng, 2, 3);
    layout.strides.v[d] = running * step;
    running = layout.strides.v[d] * std::max<int64_t>(shape.sizes[d], 1) +
              (contiguous ? 0 : uniform(rng, 0, 1));
  }
  int64_t lowest = 0, highest = 0;
  for (int d = 0; d < shape.ndim && !contiguous; ++d) {
    if (chance(rng, 0.15)) layout.strides.v[d] = -layout.strides.v[d];
    if (allow_broadcast && chance(rng, 0.2)) layout.strides.v[d] = 0;
  }
  for (int d = 0; d < shape.ndim; ++d) {
    const int64_t extent = std::max<int64_t>(shape.sizes[d] - 1, 0) * layout.strides.v[d];
    (extent < 0 ? lowest : highest) += extent;
  }
  const int64_t pad = contiguous ? 0 : 2;
  layout.offset = -lowest + uniform(rng, 0, pad);
  layout.span = layout.offset + highest + 1 + uniform(rng, 0, pad);
  return layout;
}

// A zeroed byte buffer with 8-byte alignment (enough for every dtype).
class Buffer {
 public:
  Buffer(ScalarType type, int64_t count)
      : type_(type), count_(count),
        words_((static_cast<size_t>(count) * element_size(type) + 7) / 8) {}
  ScalarType type() const { return type_; }
  int64_t count() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(count_) * element_size(type_); }
  unsigned char* data() { return reinterpret_cast<unsigned char*>(words_.data()); }
  const unsigned char* data() const { return reinterpret_cast<const unsigned char*>(words_.data()); }
  unsigned char* element(int64_t i) { return data() + i * static_cast<int64_t>(element_size(type_)); }

 private:
  ScalarType type_;
  int64_t count_;
  std::vector<uint64_t> words_;
};

// A float for a value that will be converted: with integer_safe, a value every
// integer dtype can hold after truncation, even once rounded to Half or
// BFloat16 (C++ leaves the rest undefined);
// otherwise anything, including NaN, inf, -0 and (half / float) subnormals.
inline double random_real(Rng& rng, bool integer_safe) {
  if (chance(rng, 0.15)) return 0.0;
  if (integer_safe) return std::uniform_real_distribution<double>(-127.0, 127.0)(rng);
  static constexpr double kSpecial[] = {
      -0.0, NAN, -NAN, INFINITY, -INFINITY, 1e-6, -3e-8, 1e-40, 0.5, 65504.0, 65520.0, 1e5, 3e38,
  };
  if (chance(rng, 0.2)) return kSpecial[uniform(rng, 0, static_cast<int64_t>(std::size(kSpecial)) - 1)];
  const double magnitude = std::pow(10.0, static_cast<double>(uniform(rng, -8, 8)));
  return std::uniform_real_distribution<double>(-1, 1)(rng) * magnitude;
}

// A rounded random_real, or (unless integer_safe) any bit pattern half the
// time: NaNs, infinities and subnormals included.
template <class T>
T random_float8(Rng& rng, bool integer_safe, int64_t bits) {
  if (integer_safe || chance(rng, 0.5)) {
    // Scaled so that rounding up (e5m2 spaces 96..128 by 16) stays inside int8.
    return float8_from_float<T>(static_cast<float>(random_real(rng, integer_safe) * 0.75));
  }
  return T{static_cast<uint8_t>(bits)};
}

// Writes one random value of `type` at out (see random_real for integer_safe).
inline void random_element(ScalarType type, Rng& rng, bool integer_safe, void* out) {
  auto put = [out](auto v) { std::memcpy(out, &v, sizeof(v)); };
  const int64_t bits = chance(rng, 0.15) ? 0 : static_cast<int64_t>(rng());
  switch (type) {
    case ScalarType::Bool: put(static_cast<uint8_t>(rng() & 1)); break;
    case ScalarType::UInt8: put(static_cast<uint8_t>(bits)); break;
    case ScalarType::Int8: put(static_cast<int8_t>(bits)); break;
    case ScalarType::Int16: put(static_cast<int16_t>(bits)); break;
    case ScalarType::Int32: put(static_cast<int32_t>(bits)); break;
    case ScalarType::Int64: put(bits); break;
    case ScalarType::Float16:
      put(integer_safe || chance(rng, 0.5) ? half_from_float(static_cast<float>(random_real(rng, integer_safe)))
                                           : Half{static_cast<uint16_t>(bits)});
      break;
    case ScalarType::BFloat16:
      put(integer_safe || chance(rng, 0.5) ? bfloat16_from_float(static_cast<float>(random_real(rng, integer_safe)))
                                           : BFloat16{static_cast<uint16_t>(bits)});
      break;
    case ScalarType::Float32: put(static_cast<float>(random_real(rng, integer_safe))); break;
    case ScalarType::Float64: put(random_real(rng, integer_safe)); break;
    case ScalarType::ComplexFloat:
      put(std::complex<float>(static_cast<float>(random_real(rng, integer_safe)),
                              static_cast<float>(random_real(rng, integer_safe))));
      break;
    case ScalarType::ComplexDouble:
      put(std::complex<double>(random_real(rng, integer_safe), random_real(rng, integer_safe)));
      break;
    case ScalarType::Float8_e4m3fn:
      put(random_float8<Float8_e4m3fn>(rng, integer_safe, bits));
      break;
    case ScalarType::Float8_e5m2:
      put(random_float8<Float8_e5m2>(rng, integer_safe, bits));
      break;
    case ScalarType::Float8_e4m3fnuz:
      put(random_float8<Float8_e4m3fnuz>(rng, integer_safe, bits));
      break;
    case ScalarType::Float8_e5m2fnuz:
      put(random_float8<Float8_e5m2fnuz>(rng, integer_safe, bits));
      break;
  }
}

inline void fill_random(Buffer& buffer, Rng& rng, bool integer_safe) {
  for (int64_t i = 0; i < buffer.count(); ++i) random_element(buffer.type(), rng, integer_safe, buffer.element(i));
}

// Writes the double v at p as a floating `type` (rounded as the dtype's
// conversion does).
inline void put_real(ScalarType type, unsigned char* p, double v) {
  switch (type) {
    case ScalarType::Float64: std::memcpy(p, &v, 8); break;
    case ScalarType::Float32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case ScalarType::Float16: { const Half h = half_from_float(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    default: { const BFloat16 h = bfloat16_from_float(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
  }
}

// Normal(0, scale) values into a floating buffer.
inline void fill_normal(Buffer& b, Rng& rng, double scale = 1) {
  std::normal_distribution<double> normal(0, scale);
  for (int64_t i = 0; i < b.count(); ++i) put_real(b.type(), b.element(i), normal(rng));
}

// One element of `type` at p as a double (the real part of a complex).
inline double element_value(ScalarType type, const unsigned char* p) {
  auto load = [p](auto v) { std::memcpy(&v, p, sizeof(v)); return v; };
  switch (type) {
    case ScalarType::Bool: return load(uint8_t{});
    case ScalarType::UInt8: return load(uint8_t{});
    case ScalarType::Int8: return load(int8_t{});
    case ScalarType::Int16: return load(int16_t{});
    case ScalarType::Int32: return load(int32_t{});
    case ScalarType::Int64: return static_cast<double>(load(int64_t{}));
    case ScalarType::Float16: return to_float(load(Half{}));
    case ScalarType::BFloat16: return to_float(load(BFloat16{}));
    case ScalarType::Float32: return load(0.0f);
    case ScalarType::Float64: return load(0.0);
    case ScalarType::ComplexFloat: return load(std::complex<float>{}).real();
    case ScalarType::ComplexDouble: return load(std::complex<double>{}).real();
    case ScalarType::Float8_e4m3fn:
      return to_float(load(Float8_e4m3fn{}));
    case ScalarType::Float8_e5m2:
      return to_float(load(Float8_e5m2{}));
    case ScalarType::Float8_e4m3fnuz:
      return to_float(load(Float8_e4m3fnuz{}));
    case ScalarType::Float8_e5m2fnuz:
      return to_float(load(Float8_e5m2fnuz{}));
  }
  return 0;
}

// True for a floating element (or complex component) that is NaN.
inline bool is_nan_component(ScalarType type, const unsigned char* p) {
  auto load = [p](auto v) { std::memcpy(&v, p, sizeof(v)); return v; };
  switch (type) {
    case ScalarType::Float16: return std::isnan(to_float(load(Half{})));
    case ScalarType::BFloat16: return std::isnan(to_float(load(BFloat16{})));
    case ScalarType::Float32:
    case ScalarType::ComplexFloat: return std::isnan(load(0.0f));
    case ScalarType::Float64:
    case ScalarType::ComplexDouble: return std::isnan(load(0.0));
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fnuz:
    case ScalarType::Float8_e5m2fnuz:
      return std::isnan(element_value(type, p));
    default: return false;
  }
}

// Byte-equal, except that a NaN matches any NaN (per complex component).
inline bool same_element(ScalarType type, const unsigned char* a, const unsigned char* b) {
  const size_t size = element_size(type);
  if (std::memcmp(a, b, size) == 0) return true;
  const bool is_complex = type == ScalarType::ComplexFloat || type == ScalarType::ComplexDouble;
  const size_t part = is_complex ? size / 2 : size;
  for (size_t at = 0; at < size; at += part) {
    const bool equal = std::memcmp(a + at, b + at, part) == 0;
    if (!equal && !(is_nan_component(type, a + at) && is_nan_component(type, b + at))) return false;
  }
  return true;
}

inline std::string hex(const unsigned char* p, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = size; i-- > 0;) {  // little-endian: most significant byte first
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// Compares whole buffers, so writes outside the view are caught too.
inline ::testing::AssertionResult same_buffers(const Buffer& actual, const Buffer& expected) {
  const size_t size = element_size(actual.type());
  for (int64_t i = 0; i < actual.count(); ++i) {
    const unsigned char* a = actual.data() + i * static_cast<int64_t>(size);
    const unsigned char* e = expected.data() + i * static_cast<int64_t>(size);
    if (!same_element(actual.type(), a, e)) {
      return ::testing::AssertionFailure() << "element " << i << ": got 0x" << hex(a, size)
                                           << ", reference 0x" << hex(e, size);
    }
  }
  return ::testing::AssertionSuccess();
}

// Every element within rtol of the reference, relative to the element plus the
// largest reference element, or min_scale if larger (kernels whose sums are
// reordered; min_scale for results that cancel to near zero).
inline ::testing::AssertionResult close_to_max(const Buffer& got, const Buffer& want, double rtol,
                                               double min_scale = 1e-30) {
  double scale = min_scale;
  for (int64_t i = 0; i < want.count(); ++i) {
    scale = std::max(scale, std::abs(element_value(want.type(), want.data() + i * element_size(want.type()))));
  }
  for (int64_t i = 0; i < got.count(); ++i) {
    const double x = element_value(got.type(), got.data() + i * element_size(got.type()));
    const double y = element_value(want.type(), want.data() + i * element_size(want.type()));
    if (!(std::abs(x - y) <= rtol * (std::abs(y) + scale))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::string join(const int64_t* values, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::to_string(values[i]);
  }
  return s;
}

inline std::string describe(const Shape& shape, const Strides& strides) {
  return "sizes [" + join(shape.sizes, shape.ndim) + "] strides [" + join(strides.v, shape.ndim) + "]";
}

}  // namespace mlu::kernels::testutil
