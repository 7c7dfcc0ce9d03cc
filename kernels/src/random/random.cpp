#include "mlu_kernels/random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/philox.h"
#include "../common/strided_loop.h"
#include "../common/unravel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

using detail::convert;
using detail::widen;
using Block = std::array<uint32_t, 4>;

using detail::is_floating_v;
template <class T>
inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The accumulation type of a floating dtype.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Exact uniform draws in [0, 1): 24 bits as a float, 53 bits as a double.
inline float x24(uint32_t w) { return static_cast<float>(w >> 8) * 0x1.0p-24f; }
inline double x53(uint32_t a, uint32_t b) {
  return static_cast<double>(((static_cast<uint64_t>(a) << 32) | b) >> 11) * 0x1.0p-53;
}

// The element's first and second uniform draws in A (see random.h).
template <class A>
inline A first_draw(const Block& u) {
  if constexpr (std::is_same_v<A, double>) {
    return x53(u[0], u[1]);
  } else {
    return x24(u[0]);
  }
}
template <class A>
inline A second_draw(const Block& u) {
  if constexpr (std::is_same_v<A, double>) {
    return x53(u[2], u[3]);
  } else {
    return x24(u[1]);
  }
}

// The Bernoulli draw: all 32 bits of u[0], in double.
inline double bernoulli_draw(const Block& u) { return static_cast<double>(u[0]) * 0x1.0p-32; }

// Samplers: Sampler<T>(params...)(u) is the value of dtype T for the element
// whose Philox block is u. kSupported says which T the kernel accepts; the
// member functions are only instantiated for those.

template <class T>
struct Uniform {
  static constexpr bool kSupported = is_floating_v<T>;
  using A = Acc<T>;
  T from, to;
  A from_acc, range;
  Uniform(double from_in, double to_in)
      : from(convert<T>(from_in)),
        to(convert<T>(to_in)),
        from_acc(widen(from)),
        range(widen(convert<T>(widen(to) - widen(from)))) {}
  T operator()(const Block& u) const {
    const T value = convert<T>(first_draw<A>(u) * range + from_acc);
    return widen(value) == widen(to) ? from : value;
  }
};

template <class T, bool kLog>
struct BoxMuller {
  static constexpr bool kSupported = is_floating_v<T>;
  using A = Acc<T>;
  A mean, stddev;
  BoxMuller(double mean_in, double stddev_in)
      : mean(static_cast<A>(mean_in)), stddev(static_cast<A>(stddev_in)) {}
  T operator()(const Block& u) const {
    constexpr A kTwoPi = static_cast<A>(2 * std::numbers::pi);
    const A radius = std::sqrt(A(-2) * std::log(A(1) - first_draw<A>(u)));
    const A value = mean + stddev * (radius * std::cos(kTwoPi * second_draw<A>(u)));
    if constexpr (kLog) {
      return convert<T>(std::exp(value));
    } else {
      return convert<T>(value);
    }
  }
};
template <class T>
using Normal = BoxMuller<T, false>;
template <class T>
using LogNormal = BoxMuller<T, true>;

template <class T>
struct Exponential {
  static constexpr bool kSupported = is_floating_v<T>;
  using A = Acc<T>;
  A scale;
  explicit Exponential(double lambda) : scale(A(-1) / static_cast<A>(lambda)) {}
  T operator()(const Block& u) const { return convert<T>(scale * std::log1p(-first_draw<A>(u))); }
};

template <class T>
struct Cauchy {
  static constexpr bool kSupported = is_floating_v<T>;
  using A = Acc<T>;
  A median, sigma;
  Cauchy(double median_in, double sigma_in)
      : median(static_cast<A>(median_in)), sigma(static_cast<A>(sigma_in)) {}
  T operator()(const Block& u) const {
    return convert<T>(median + sigma * std::tan(std::numbers::pi_v<A> * (first_draw<A>(u) - A(0.5))));
  }
};

template <class T>
struct Geometric {
  static constexpr bool kSupported = is_floating_v<T> || is_integer_v<T>;
  double log_q;  // log(1 - p), negative
  explicit Geometric(double p) : log_q(std::log1p(-p)) {}
  T operator()(const Block& u) const {
    const double k = std::max(1.0, std::ceil(std::log1p(-x53(u[0], u[1])) / log_q));
    if constexpr (is_integer_v<T>) {
      constexpr T kMax = std::numeric_limits<T>::max();
      return k >= static_cast<double>(kMax) ? kMax : static_cast<T>(k);
    } else {
      return convert<T>(k);
    }
  }
};

template <class T>
struct BernoulliScalar {
  static constexpr bool kSupported = true;
  T one, zero;
  double p;
  explicit BernoulliScalar(double p_in) : one(convert<T>(true)), zero(convert<T>(false)), p(p_in) {}
  T operator()(const Block& u) const { return bernoulli_draw(u) < p ? one : zero; }
};

template <class T>
struct RandomFromTo {
  static constexpr bool kSupported = !detail::is_complex_v<T>;
  int64_t from;
  uint64_t range;
  RandomFromTo(int64_t from_in, uint64_t range_in) : from(from_in), range(range_in) {}
  T operator()(const Block& u) const {
    const uint64_t wide = (static_cast<uint64_t>(u[0]) << 32) | u[1];
    uint64_t r;
    if (range == 0) {
      r = wide;
    } else if (range < (UINT64_C(1) << 32)) {
      r = u[0] % range;
    } else {
      r = wide % range;
    }
    return convert<T>(static_cast<int64_t>(static_cast<uint64_t>(from) + r));
  }
};

// Optimised walk: calls element(i, offsets) for every element of the N views
// sharing `shape`, with i its row-major logical index in the ORIGINAL shape and
// offsets[k] its element offset in view k. Coalescing keeps that index (it only
// drops size-1 dims and merges dims without reordering), so a running counter
// per row gives it.
template <int N, class Element>
void walk(const Shape& shape, const Strides* const (&strides)[N], Element&& element) {
  Shape s = shape;
  Strides st[N];
  Strides* coalesced[N];
  const Strides* rows[N];
  for (int k = 0; k < N; ++k) {
    st[k] = *strides[k];
    coalesced[k] = &st[k];
    rows[k] = &st[k];
  }
  coalesce(s, coalesced, N);
  const int64_t n = numel(s);
  if (n == 0) return;
  int64_t at[N] = {};
  if (s.ndim == 0) {
    element(int64_t{0}, static_cast<const int64_t*>(at));
    return;
  }
  const int last = s.ndim - 1;
  int64_t step[N];
  bool contiguous = s.ndim == 1;
  for (int k = 0; k < N; ++k) {
    step[k] = st[k].v[last];
    contiguous = contiguous && step[k] == 1;
  }
  if (contiguous) {
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < N; ++k) at[k] = i;
      element(i, static_cast<const int64_t*>(at));
    }
    return;
  }
  const int64_t len = s.sizes[last];
  int64_t linear = 0;
  detail::for_each_row(s, rows, [&](const int64_t* row) {
    for (int64_t j = 0; j < len; ++j) {
      for (int k = 0; k < N; ++k) at[k] = row[k] + j * step[k];
      element(linear + j, static_cast<const int64_t*>(at));
    }
    linear += len;
  });
}

// Reference walk: every logical index in order, each unravelled by division.
template <int N, class Element>
void walk_ref(const Shape& shape, const Strides* const (&strides)[N], Element&& element) {
  const int64_t n = numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at[N];
    for (int k = 0; k < N; ++k) at[k] = detail::unravel_offset(i, shape, *strides[k]);
    element(i, static_cast<const int64_t*>(at));
  }
}

template <int N, class Element>
void visit(bool reference, const Shape& shape, const Strides* const (&strides)[N], Element&& element) {
  if (reference) {
    walk_ref(shape, strides, element);
  } else {
    walk(shape, strides, element);
  }
}

// dst[i] = Sampler<T>(params...)(philox4x32(seed, i, offset)) for dtype T.
template <template <class> class Sampler, class... Params>
void generate(bool reference, void* dst, ScalarType dtype, const Shape& shape,
              const Strides& strides, uint64_t seed, uint64_t offset, Params... params) {
  detail::dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Sampler<T>::kSupported) {
      const Sampler<T> sample(params...);
      T* out = static_cast<T*>(dst);
      const Strides* operands[1] = {&strides};
      visit(reference, shape, operands, [&](int64_t i, const int64_t* at) {
        out[at[0]] = sample(philox4x32(seed, static_cast<uint64_t>(i), offset));
      });
    }
  });
}

void bernoulli_tensor_impl(bool reference, void* dst, ScalarType dtype, const Shape& shape,
                           const Strides& strides, uint64_t seed, uint64_t offset, const void* p,
                           ScalarType p_dtype, const Strides& p_strides) {
  detail::dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::dispatch(p_dtype, [&](auto p_tag) {
      using P = typename decltype(p_tag)::type;
      if constexpr (is_floating_v<P>) {
        const T one = convert<T>(true);
        const T zero = convert<T>(false);
        T* out = static_cast<T*>(dst);
        const P* probs = static_cast<const P*>(p);
        const Strides* operands[2] = {&strides, &p_strides};
        visit(reference, shape, operands, [&](int64_t i, const int64_t* at) {
          const double prob = static_cast<double>(widen(probs[at[1]]));
          const Block u = philox4x32(seed, static_cast<uint64_t>(i), offset);
          out[at[0]] = bernoulli_draw(u) < prob ? one : zero;
        });
      }
    });
  });
}

}  // namespace

void uniform(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
             uint64_t seed, uint64_t offset, double from, double to) {
  detail::VerboseCall call("uniform");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<Uniform>(false, dst, dtype, shape, strides, seed, offset, from, to);
}
void uniform_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                 uint64_t seed, uint64_t offset, double from, double to) {
  generate<Uniform>(true, dst, dtype, shape, strides, seed, offset, from, to);
}

void normal(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
            uint64_t seed, uint64_t offset, double mean, double std) {
  detail::VerboseCall call("normal");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<Normal>(false, dst, dtype, shape, strides, seed, offset, mean, std);
}
void normal_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double mean, double std) {
  generate<Normal>(true, dst, dtype, shape, strides, seed, offset, mean, std);
}

void log_normal(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double mean, double std) {
  detail::VerboseCall call("log_normal");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<LogNormal>(false, dst, dtype, shape, strides, seed, offset, mean, std);
}
void log_normal_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                    uint64_t seed, uint64_t offset, double mean, double std) {
  generate<LogNormal>(true, dst, dtype, shape, strides, seed, offset, mean, std);
}

void exponential(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                 uint64_t seed, uint64_t offset, double lambda) {
  detail::VerboseCall call("exponential");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<Exponential>(false, dst, dtype, shape, strides, seed, offset, lambda);
}
void exponential_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                     uint64_t seed, uint64_t offset, double lambda) {
  generate<Exponential>(true, dst, dtype, shape, strides, seed, offset, lambda);
}

void cauchy(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
            uint64_t seed, uint64_t offset, double median, double sigma) {
  detail::VerboseCall call("cauchy");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<Cauchy>(false, dst, dtype, shape, strides, seed, offset, median, sigma);
}
void cauchy_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                uint64_t seed, uint64_t offset, double median, double sigma) {
  generate<Cauchy>(true, dst, dtype, shape, strides, seed, offset, median, sigma);
}

void geometric(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
               uint64_t seed, uint64_t offset, double p) {
  detail::VerboseCall call("geometric");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<Geometric>(false, dst, dtype, shape, strides, seed, offset, p);
}
void geometric_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                   uint64_t seed, uint64_t offset, double p) {
  generate<Geometric>(true, dst, dtype, shape, strides, seed, offset, p);
}

void bernoulli_scalar(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                      uint64_t seed, uint64_t offset, double p) {
  detail::VerboseCall call("bernoulli_scalar");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<BernoulliScalar>(false, dst, dtype, shape, strides, seed, offset, p);
}
void bernoulli_scalar_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                          uint64_t seed, uint64_t offset, double p) {
  generate<BernoulliScalar>(true, dst, dtype, shape, strides, seed, offset, p);
}

void bernoulli_tensor(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                      uint64_t seed, uint64_t offset, const void* p, ScalarType p_dtype,
                      const Strides& p_strides) {
  detail::VerboseCall call("bernoulli_tensor");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  bernoulli_tensor_impl(false, dst, dtype, shape, strides, seed, offset, p, p_dtype, p_strides);
}
void bernoulli_tensor_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                          uint64_t seed, uint64_t offset, const void* p, ScalarType p_dtype,
                          const Strides& p_strides) {
  bernoulli_tensor_impl(true, dst, dtype, shape, strides, seed, offset, p, p_dtype, p_strides);
}

void random_from_to(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                    uint64_t seed, uint64_t offset, int64_t from, uint64_t range) {
  detail::VerboseCall call("random_from_to");
  if (call) call.describe(dtype, "n%lld", detail::lld(numel(shape)));
  generate<RandomFromTo>(false, dst, dtype, shape, strides, seed, offset, from, range);
}
void random_from_to_ref(void* dst, ScalarType dtype, const Shape& shape, const Strides& strides,
                        uint64_t seed, uint64_t offset, int64_t from, uint64_t range) {
  generate<RandomFromTo>(true, dst, dtype, shape, strides, seed, offset, from, range);
}

}  // namespace mlu::kernels
