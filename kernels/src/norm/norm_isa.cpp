// Layer and batch normalisation loops, compiled once per ISA (Note [Per-ISA
// variants]); norm.cpp splits calls over the compute threads. Sums run in
// kLanes independent partial sums so they vectorise; 16-bit elements are
// widened to float and rounded once on the way out.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "norm_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

using detail::compute_t;
using detail::convert;

constexpr int kLanes = 16;

template <class A, class F>
A lane_sum(int64_t n, F term) {
  A lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  }
  A tail = 0;
  for (; i < n; ++i) tail += term(i);
  for (int l = 0; l < kLanes; ++l) tail += lanes[l];
  return tail;
}

// Widens n elements of `from` into `to`.
template <class T, class A>
void widen_into(const T* from, int64_t n, A* to) {
  for (int64_t j = 0; j < n; ++j) to[j] = convert<A>(from[j]);
}

void layer_norm_rows(ScalarType type, int64_t lo, int64_t hi, int64_t cols, const void* x, const void* weight,
                     const void* bias, double eps, void* y, void* mean, void* rstd) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const T* X = static_cast<const T*>(x);
    const A* W = static_cast<const A*>(weight);
    const A* B = static_cast<const A*>(bias);
    vector<A> row(static_cast<size_t>(cols));
    A* rw = row.data();
    for (int64_t r = lo; r < hi; ++r) {
      widen_into(X + r * cols, cols, rw);
      const A mu = lane_sum<A>(cols, [&](int64_t j) { return rw[j]; }) / static_cast<A>(cols);
      const A var = lane_sum<A>(cols, [&](int64_t j) { return (rw[j] - mu) * (rw[j] - mu); }) / static_cast<A>(cols);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(eps));
      static_cast<A*>(mean)[r] = mu;
      static_cast<A*>(rstd)[r] = inv;
      T* yr = static_cast<T*>(y) + r * cols;
      if (W != nullptr && B != nullptr) {
        for (int64_t j = 0; j < cols; ++j) yr[j] = convert<T>((rw[j] - mu) * inv * W[j] + B[j]);
      } else {
        for (int64_t j = 0; j < cols; ++j) {
          A v = (rw[j] - mu) * inv;
          if (W != nullptr) v *= W[j];
          if (B != nullptr) v += B[j];
          yr[j] = convert<T>(v);
        }
      }
    }
  });
}

void layer_norm_grad_input_rows(ScalarType type, int64_t lo, int64_t hi, int64_t cols, const void* grad_y,
                                const void* x, const void* mean, const void* rstd, const void* weight,
                                void* grad_input) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const A* M = static_cast<const A*>(mean);
    const A* R = static_cast<const A*>(rstd);
    const A* W = static_cast<const A*>(weight);
    const A scale = A(1) / static_cast<A>(cols);
    vector<A> dyw_buffer(static_cast<size_t>(cols)), xs_buffer(static_cast<size_t>(cols));
    A *dyw = dyw_buffer.data(), *xs = xs_buffer.data();
    for (int64_t r = lo; r < hi; ++r) {
      widen_into(static_cast<const T*>(grad_y) + r * cols, cols, dyw);
      widen_into(static_cast<const T*>(x) + r * cols, cols, xs);
      if (W != nullptr) {
        for (int64_t j = 0; j < cols; ++j) dyw[j] *= W[j];
      }
      const A ds = lane_sum<A>(cols, [&](int64_t j) { return dyw[j] * xs[j]; });
      const A db = lane_sum<A>(cols, [&](int64_t j) { return dyw[j]; });
      const A a = R[r];
      const A b = (db * M[r] - ds) * a * a * a * scale;
      const A c = -b * M[r] - db * a * scale;
      T* dxr = static_cast<T*>(grad_input) + r * cols;
      for (int64_t j = 0; j < cols; ++j) dxr[j] = convert<T>(a * dyw[j] + b * xs[j] + c);
    }
  });
}

void layer_norm_param_grads(ScalarType type, int64_t lo, int64_t hi, int64_t rows, int64_t cols,
                            const void* grad_y, const void* x, const void* mean, const void* rstd, void* grad_weight,
                            void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const int64_t width = hi - lo;
    vector<A> sw_buffer(static_cast<size_t>(width), A(0)), sb_buffer(static_cast<size_t>(width), A(0));
    A *sw = sw_buffer.data(), *sb = sb_buffer.data();
    for (int64_t r = 0; r < rows; ++r) {
      const T* dyr = static_cast<const T*>(grad_y) + r * cols + lo;
      const T* xr = static_cast<const T*>(x) + r * cols + lo;
      const A mu = static_cast<const A*>(mean)[r], inv = static_cast<const A*>(rstd)[r];
      for (int64_t j = 0; j < width; ++j) {
        const A dy = convert<A>(dyr[j]);
        sw[j] += dy * (convert<A>(xr[j]) - mu) * inv;
        sb[j] += dy;
      }
    }
    if (grad_weight != nullptr) std::copy(sw, sw + width, static_cast<A*>(grad_weight) + lo);
    if (grad_bias != nullptr) std::copy(sb, sb + width, static_cast<A*>(grad_bias) + lo);
  });
}

// Note [16-bit batch statistics as the CPU keeps them]
// When a Float16 / BFloat16 input's parameters share its type, the CPU's
// batch_norm_cpu_collect_stats_contiguous_internal<scalar_t, scalar_t> sums
// each channel in float vectors of W lanes: every plane in steps of 2W
// elements (two vectors), its tail serially into a scalar, and at the end
// the scalar plus a tree of the lanes (vec_reduce_all). The sum of squares
// is taken about the unrounded mean. Then, by the CPU's rules (measured
// against torch 2.13 on op_db's samples and random planes, all bit-equal):
// - save_mean = r(mean) and save_invstd = r(1 / sqrt(var + eps)), in float,
//   and the output is computed from these rounded values;
// - Float16 updates the running statistics in float from the unrounded
//   mean and the sum of squares: m * stat + (1 - m) * running, m =
//   float(momentum), the unbiased variance squares / (count - 1);
// - BFloat16 keeps the sum of squares as r(squares) and divides in BFloat16
//   arithmetic: var = r(r(squares) / r(count)); its running statistics are
//   updated in it, with m = r(momentum): r(r(m * mean) + r(r(1 - m) *
//   running_mean)) and r(m * r(r(squares) / r(count - 1)) + r(r(1 - m) *
//   running_var)), where m times a float is a float product.
// With float parameters (mixed types) the CPU's sums differ again; the
// kernel keeps its own order there (within float rounding of the CPU's).
// r() rounds a float to the 16-bit type.
template <class T>
float round_16bit(float v) {
  return convert<float>(convert<T>(v));
}

// One channel's sum of term(x) over its n planes in the CPU's order (Note
// [16-bit batch statistics as the CPU keeps them]) with W lanes; W is a
// constant so the steps vectorise.
template <int W, class T, class F>
float cpu_channel_sum(const T* first_plane, int64_t plane_stride, int64_t n, int64_t spatial, F term) {
  float lane[W] = {};
  float tail = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T* p = first_plane + i * plane_stride;
    int64_t j = 0;
    for (; j + 2 * W <= spatial; j += 2 * W) {
      for (int l = 0; l < W; ++l) lane[l] += term(convert<float>(p[j + l]));
      for (int l = 0; l < W; ++l) lane[l] += term(convert<float>(p[j + W + l]));
    }
    for (; j < spatial; ++j) tail += term(convert<float>(p[j]));
  }
  for (int step = W / 2; step >= 1; step /= 2) {
    float next[W];
    for (int l = 0; l < W; ++l) next[l] = lane[l] + lane[l ^ step];
    std::copy(next, next + W, lane);
  }
  return tail + lane[0];
}

template <class T, class F>
float cpu_channel_sum(const T* first_plane, int64_t plane_stride, int64_t n, int64_t spatial, int lanes, F term) {
  return lanes == 16 ? cpu_channel_sum<16>(first_plane, plane_stride, n, spatial, term)
                     : cpu_channel_sum<8>(first_plane, plane_stride, n, spatial, term);
}

template <class T>
void cpu_16bit_training_statistics(int64_t lo, int64_t hi, int64_t n, int64_t channels, int64_t spatial, const T* x,
                                   float* mean, float* invstd, const detail::TrainingStatistics& finish) {
  constexpr bool in_bfloat16 = std::is_same_v<T, BFloat16>;
  const auto r = [](float v) { return round_16bit<T>(v); };
  const auto r_if = [&](bool round, float v) { return round ? r(v) : v; };
  const int64_t count = n * spatial;
  const int lanes = finish.cpu_lanes_16bit;
  const float eps = static_cast<float>(finish.eps);
  const float m = r_if(in_bfloat16, static_cast<float>(finish.momentum));
  const float keep = r_if(in_bfloat16, 1 - m);
  for (int64_t c = lo; c < hi; ++c) {
    const T* planes = x + c * spatial;
    const float mu = cpu_channel_sum(planes, channels * spatial, n, spatial, lanes, [](float v) { return v; }) /
                     static_cast<float>(count);
    const float squares = r_if(in_bfloat16, cpu_channel_sum(planes, channels * spatial, n, spatial, lanes,
                                                            [mu](float v) { return (v - mu) * (v - mu); }));
    const float var = in_bfloat16 ? r(squares / r(static_cast<float>(count))) : squares / static_cast<float>(count);
    mean[c] = r(mu);
    invstd[c] = r(var == 0 && eps == 0 ? 0.0f : 1 / std::sqrt(var + eps));
    // count - 1 is 0 for a single value: NaN, as on the CPU.
    const float others = r_if(in_bfloat16, static_cast<float>(count - 1));
    if (finish.running_mean != nullptr) {
      float& run = static_cast<float*>(finish.running_mean)[c];
      run = in_bfloat16 ? r(r(m * mean[c]) + r(keep * run)) : m * mu + keep * run;
    }
    if (finish.running_var != nullptr) {
      float& run = static_cast<float*>(finish.running_var)[c];
      run = in_bfloat16 ? r(m * r(squares / others) + r(keep * run)) : m * (squares / others) + keep * run;
    }
  }
}

void batch_norm_training_statistics_channels(ScalarType type, int64_t lo, int64_t hi, int64_t n, int64_t channels,
                                             int64_t spatial, const void* x, void* mean, void* invstd,
                                             const detail::TrainingStatistics& finish) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (!std::is_same_v<T, A>) {
      if (finish.cpu_lanes_16bit > 0) {
        cpu_16bit_training_statistics(lo, hi, n, channels, spatial, static_cast<const T*>(x),
                                      static_cast<float*>(mean), static_cast<float*>(invstd), finish);
        return;
      }
    }
    const T* X = static_cast<const T*>(x);
    const A count = static_cast<A>(n * spatial);
    // 16-bit planes are widened into a float buffer first: the sums then
    // vectorise as they do for float.
    vector<A> widened(std::is_same_v<T, A> ? 0 : static_cast<size_t>(spatial));
    const auto plane = [&](int64_t i, int64_t c) -> const A* {
      const T* p = X + (i * channels + c) * spatial;
      if constexpr (std::is_same_v<T, A>) {
        return p;
      } else {
        widen_into(p, spatial, widened.data());
        return widened.data();
      }
    };
    for (int64_t c = lo; c < hi; ++c) {
      A sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const A* p = plane(i, c);
        sum += lane_sum<A>(spatial, [&](int64_t j) { return p[j]; });
      }
      const A mu = sum / count;
      A squares = 0;
      for (int64_t i = 0; i < n; ++i) {
        const A* p = plane(i, c);
        squares += lane_sum<A>(spatial, [&](int64_t j) { return (p[j] - mu) * (p[j] - mu); });
      }
      static_cast<A*>(mean)[c] = mu;
      const A biased = squares / count;
      // As the CPU's InvStd: in double, 0 for a zero variance and eps.
      static_cast<A*>(invstd)[c] =
          biased == 0 && finish.eps == 0 ? A(0) : static_cast<A>(1 / std::sqrt(biased + finish.eps));
      const double m = finish.momentum;
      if (finish.running_mean != nullptr) {
        A& r = static_cast<A*>(finish.running_mean)[c];
        r = static_cast<A>(m * mu + (1 - m) * r);
      }
      if (finish.running_var != nullptr) {
        A& r = static_cast<A*>(finish.running_var)[c];
        const A unbiased = squares / (count - 1);  // 0 / 0 for a single value: NaN, as on the CPU
        r = static_cast<A>(m * unbiased + (1 - m) * r);
      }
    }
  });
}

void batch_norm_apply_planes(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial,
                             const void* x, const void* mean, const void* invstd, const void* weight,
                             const void* bias, void* y, bool rounded_shift) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const A *M = static_cast<const A*>(mean), *I = static_cast<const A*>(invstd);
    const A *W = static_cast<const A*>(weight), *B = static_cast<const A*>(bias);
    for (int64_t plane = lo; plane < hi; ++plane) {
      const int64_t c = plane % channels;
      // The CPU's kernel is compiled with FMA contraction: explicit fma
      // gives its bits on every ISA.
      const A scale = I[c] * (W != nullptr ? W[c] : A(1));
      const A b = B != nullptr ? B[c] : A(0);
      const A shift = rounded_shift ? b - M[c] * scale : std::fma(-M[c], scale, b);
      const T* xp = static_cast<const T*>(x) + plane * spatial;
      T* yp = static_cast<T*>(y) + plane * spatial;
      for (int64_t j = 0; j < spatial; ++j) yp[j] = convert<T>(std::fma(convert<A>(xp[j]), scale, shift));
    }
  });
}

void batch_norm_backward_channels(ScalarType type, int64_t lo, int64_t hi, int64_t n, int64_t channels,
                                  int64_t spatial, const void* grad_y, const void* x, const void* mean,
                                  const void* invstd, const void* weight, bool training, void* grad_input,
                                  void* grad_weight, void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const T *dY = static_cast<const T*>(grad_y), *X = static_cast<const T*>(x);
    const A *M = static_cast<const A*>(mean), *I = static_cast<const A*>(invstd), *W = static_cast<const A*>(weight);
    T* dX = static_cast<T*>(grad_input);
    A *dW = static_cast<A*>(grad_weight), *dB = static_cast<A*>(grad_bias);
    const A count = static_cast<A>(n * spatial);
    // 16-bit planes widened first, as in the statistics.
    constexpr bool kWiden = !std::is_same_v<T, A>;
    vector<A> g_buffer(kWiden ? static_cast<size_t>(spatial) : 0), x_buffer(kWiden ? static_cast<size_t>(spatial) : 0);
    const auto plane = [&](const T* base, int64_t i, int64_t c, vector<A>& buffer) -> const A* {
      const T* p = base + (i * channels + c) * spatial;
      if constexpr (kWiden) {
        widen_into(p, spatial, buffer.data());
        return buffer.data();
      } else {
        return p;
      }
    };
    for (int64_t c = lo; c < hi; ++c) {
      const A mu = M[c], inv = I[c], w = W != nullptr ? W[c] : A(1);
      A sum_dy = 0, dot = 0;  // sum(dy), sum(dy * (x - mean))
      for (int64_t i = 0; i < n; ++i) {
        const A* g = plane(dY, i, c, g_buffer);
        const A* xp = plane(X, i, c, x_buffer);
        sum_dy += lane_sum<A>(spatial, [&](int64_t j) { return g[j]; });
        dot += lane_sum<A>(spatial, [&](int64_t j) { return g[j] * (xp[j] - mu); });
      }
      if (dB != nullptr) dB[c] = sum_dy;
      if (dW != nullptr) dW[c] = dot * inv;
      if (dX == nullptr) continue;
      const A k = training ? dot * inv * inv / count : A(0);
      const A mean_dy = training ? sum_dy / count : A(0);
      for (int64_t i = 0; i < n; ++i) {
        const A* g = plane(dY, i, c, g_buffer);
        const A* xp = plane(X, i, c, x_buffer);
        T* dxp = dX + (i * channels + c) * spatial;
        for (int64_t j = 0; j < spatial; ++j) {
          const A d = g[j] - (xp[j] - mu) * k - mean_dy;
          dxp[j] = convert<T>(d * inv * w);
        }
      }
    }
  });
}

// Row r's elements as A: the input itself, or widened into `buffer`.
template <class T, class A>
const A* as_compute(const T* p, int64_t count, vector<A>& buffer) {
  if constexpr (std::is_same_v<T, A>) {
    return p;
  } else {
    if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
    widen_into(p, count, buffer.data());
    return buffer.data();
  }
}

void group_norm_rows(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial, int64_t groups,
                     const void* x, const void* weight, const void* bias, double eps, void* y, void* mean,
                     void* rstd) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const A* W = static_cast<const A*>(weight);
    const A* B = static_cast<const A*>(bias);
    const int64_t d = channels / groups, count = d * spatial;
    vector<A> buffer;
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t first = (r / groups) * channels + (r % groups) * d;  // the row's first plane
      const A* p = as_compute(static_cast<const T*>(x) + first * spatial, count, buffer);
      const A mu = lane_sum<A>(count, [&](int64_t j) { return p[j]; }) / static_cast<A>(count);
      const A var = lane_sum<A>(count, [&](int64_t j) { return (p[j] - mu) * (p[j] - mu); }) / static_cast<A>(count);
      const A inv = A(1) / std::sqrt(var + static_cast<A>(eps));
      static_cast<A*>(mean)[r] = mu;
      static_cast<A*>(rstd)[r] = inv;
      for (int64_t c = 0; c < d; ++c) {
        const int64_t ch = (r % groups) * d + c;
        const A scale = inv * (W != nullptr ? W[ch] : A(1));
        const A shift = (B != nullptr ? B[ch] : A(0)) - mu * scale;
        const A* pc = p + c * spatial;
        T* yc = static_cast<T*>(y) + (first + c) * spatial;
        for (int64_t j = 0; j < spatial; ++j) yc[j] = convert<T>(pc[j] * scale + shift);
      }
    }
  });
}

void group_norm_backward_rows(ScalarType type, int64_t lo, int64_t hi, int64_t channels, int64_t spatial,
                              int64_t groups, const void* grad_y, const void* x, const void* mean, const void* rstd,
                              const void* weight, void* grad_input, void* ds_out, void* db_out) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    const A* W = static_cast<const A*>(weight);
    A* DS = static_cast<A*>(ds_out);
    A* DB = static_cast<A*>(db_out);
    const int64_t d = channels / groups;
    const A scale = A(1) / static_cast<A>(d * spatial);
    vector<A> g_buffer, x_buffer;
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t first = (r / groups) * channels + (r % groups) * d;
      A ds_gamma = 0, db_gamma = 0;
      for (int64_t c = 0; c < d; ++c) {
        const int64_t plane = first + c;
        const A* g = as_compute(static_cast<const T*>(grad_y) + plane * spatial, spatial, g_buffer);
        const A* xp = as_compute(static_cast<const T*>(x) + plane * spatial, spatial, x_buffer);
        const A ds = lane_sum<A>(spatial, [&](int64_t j) { return g[j] * xp[j]; });
        const A db = lane_sum<A>(spatial, [&](int64_t j) { return g[j]; });
        DS[plane] = ds;
        DB[plane] = db;
        const A gamma = W != nullptr ? W[(r % groups) * d + c] : A(1);
        ds_gamma += ds * gamma;
        db_gamma += db * gamma;
      }
      if (grad_input == nullptr) continue;
      const A mu = static_cast<const A*>(mean)[r], rs = static_cast<const A*>(rstd)[r];
      const A c2 = (db_gamma * mu - ds_gamma) * rs * rs * rs * scale;
      const A c3 = -c2 * mu - db_gamma * rs * scale;
      for (int64_t c = 0; c < d; ++c) {
        const int64_t plane = first + c;
        const A c1 = rs * (W != nullptr ? W[(r % groups) * d + c] : A(1));
        const A* g = as_compute(static_cast<const T*>(grad_y) + plane * spatial, spatial, g_buffer);
        const A* xp = as_compute(static_cast<const T*>(x) + plane * spatial, spatial, x_buffer);
        T* dx = static_cast<T*>(grad_input) + plane * spatial;
        for (int64_t j = 0; j < spatial; ++j) dx[j] = convert<T>(c1 * g[j] + c2 * xp[j] + c3);
      }
    }
  });
}

}  // namespace

const detail::NormFns& norm_fns() {
  static const detail::NormFns fns{layer_norm_rows,         layer_norm_grad_input_rows,     layer_norm_param_grads,
                                   batch_norm_training_statistics_channels, batch_norm_apply_planes,
                                   batch_norm_backward_channels,  group_norm_rows,
                                   group_norm_backward_rows};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
