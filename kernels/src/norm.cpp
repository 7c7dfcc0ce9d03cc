#include "mlu_kernels/norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

constexpr int kLanes = 16;  // independent partial sums, so the loops vectorise

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

int64_t grain_rows(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

}  // namespace

void layer_norm(ScalarType type, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                double eps, void* y, void* mean, void* rstd) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    const A* W = static_cast<const A*>(weight);
    const A* B = static_cast<const A*>(bias);
    T* Y = static_cast<T*>(y);
    A* M = static_cast<A*>(mean);
    A* R = static_cast<A*>(rstd);
    parallel_for(0, rows, grain_rows(cols), [&](int64_t lo, int64_t hi) {
      std::vector<A> row(static_cast<size_t>(cols));
      for (int64_t r = lo; r < hi; ++r) {
        const T* xr = X + r * cols;
        for (int64_t j = 0; j < cols; ++j) row[j] = detail::convert<A>(xr[j]);
        const A mu = lane_sum<A>(cols, [&](int64_t j) { return row[j]; }) / static_cast<A>(cols);
        const A var = lane_sum<A>(cols, [&](int64_t j) { return (row[j] - mu) * (row[j] - mu); }) / static_cast<A>(cols);
        const A inv = A(1) / std::sqrt(var + static_cast<A>(eps));
        M[r] = mu;
        R[r] = inv;
        T* yr = Y + r * cols;
        for (int64_t j = 0; j < cols; ++j) {
          A v = (row[j] - mu) * inv;
          if (W != nullptr) v *= W[j];
          if (B != nullptr) v += B[j];
          yr[j] = detail::convert<T>(v);
        }
      }
    });
  });
}

void layer_norm_backward(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                         const void* mean, const void* rstd, const void* weight, void* grad_input, void* grad_weight,
                         void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* dY = static_cast<const T*>(grad_y);
    const T* X = static_cast<const T*>(x);
    const A* M = static_cast<const A*>(mean);
    const A* R = static_cast<const A*>(rstd);
    const A* W = static_cast<const A*>(weight);
    if (grad_input != nullptr) {
      T* dX = static_cast<T*>(grad_input);
      const A scale = A(1) / static_cast<A>(cols);
      parallel_for(0, rows, grain_rows(cols), [&](int64_t lo, int64_t hi) {
        std::vector<A> dyw(static_cast<size_t>(cols)), xs(static_cast<size_t>(cols));
        for (int64_t r = lo; r < hi; ++r) {
          const T* dyr = dY + r * cols;
          const T* xr = X + r * cols;
          for (int64_t j = 0; j < cols; ++j) {
            dyw[j] = detail::convert<A>(dyr[j]) * (W != nullptr ? W[j] : A(1));
            xs[j] = detail::convert<A>(xr[j]);
          }
          const A ds = lane_sum<A>(cols, [&](int64_t j) { return dyw[j] * xs[j]; });
          const A db = lane_sum<A>(cols, [&](int64_t j) { return dyw[j]; });
          const A a = R[r];
          const A b = (db * M[r] - ds) * a * a * a * scale;
          const A c = -b * M[r] - db * a * scale;
          T* dxr = dX + r * cols;
          for (int64_t j = 0; j < cols; ++j) dxr[j] = detail::convert<T>(a * dyw[j] + b * xs[j] + c);
        }
      });
    }
    if (grad_weight == nullptr && grad_bias == nullptr) return;
    A* dW = static_cast<A*>(grad_weight);
    A* dB = static_cast<A*>(grad_bias);
    // Threads take blocks of columns; each column sums over the rows in order.
    parallel_for(0, cols, std::max<int64_t>(16, 16384 / std::max<int64_t>(rows, 1)), [&](int64_t lo, int64_t hi) {
      const int64_t width = hi - lo;
      std::vector<A> sw(static_cast<size_t>(width), A(0)), sb(static_cast<size_t>(width), A(0));
      for (int64_t r = 0; r < rows; ++r) {
        const T* dyr = dY + r * cols + lo;
        const T* xr = X + r * cols + lo;
        const A mu = M[r], inv = R[r];
        for (int64_t j = 0; j < width; ++j) {
          const A dy = detail::convert<A>(dyr[j]);
          sw[j] += dy * (detail::convert<A>(xr[j]) - mu) * inv;
          sb[j] += dy;
        }
      }
      if (dW != nullptr) std::copy(sw.begin(), sw.end(), dW + lo);
      if (dB != nullptr) std::copy(sb.begin(), sb.end(), dB + lo);
    });
  });
}

namespace {

// Calls f(plane) for the n planes (spatial elements each) of channel c.
template <class T, class F>
void for_each_plane(const T* base, int64_t n, int64_t channels, int64_t spatial, int64_t c, F f) {
  for (int64_t i = 0; i < n; ++i) f(base + (i * channels + c) * spatial, i);
}

int64_t grain_channels(int64_t n, int64_t spatial) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(n * spatial, 1));
}

}  // namespace

void batch_norm_statistics(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x, void* mean,
                           void* var) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    A* M = static_cast<A*>(mean);
    A* V = static_cast<A*>(var);
    const A count = static_cast<A>(n * spatial);
    parallel_for(0, channels, grain_channels(n, spatial), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        A sum = 0;
        for_each_plane(X, n, channels, spatial, c, [&](const T* p, int64_t) {
          sum += lane_sum<A>(spatial, [&](int64_t j) { return detail::convert<A>(p[j]); });
        });
        const A mu = sum / count;
        A squares = 0;
        for_each_plane(X, n, channels, spatial, c, [&](const T* p, int64_t) {
          squares += lane_sum<A>(spatial, [&](int64_t j) {
            const A d = detail::convert<A>(p[j]) - mu;
            return d * d;
          });
        });
        M[c] = mu;
        V[c] = squares / count;
      }
    });
  });
}

void batch_norm_apply(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x, const void* mean,
                      const void* invstd, const void* weight, const void* bias, void* y) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    const A *M = static_cast<const A*>(mean), *I = static_cast<const A*>(invstd);
    const A *W = static_cast<const A*>(weight), *B = static_cast<const A*>(bias);
    T* Y = static_cast<T*>(y);
    parallel_for(0, n * channels, grain_channels(1, spatial), [&](int64_t lo, int64_t hi) {
      for (int64_t plane = lo; plane < hi; ++plane) {
        const int64_t c = plane % channels;
        // y = x * scale + shift, as the CPU's batch_norm_cpu_transform_input does
        const A scale = I[c] * (W != nullptr ? W[c] : A(1));
        const A shift = (B != nullptr ? B[c] : A(0)) - M[c] * scale;
        const T* xp = X + plane * spatial;
        T* yp = Y + plane * spatial;
        for (int64_t j = 0; j < spatial; ++j) yp[j] = detail::convert<T>(detail::convert<A>(xp[j]) * scale + shift);
      }
    });
  });
}

void batch_norm_backward(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* grad_y,
                         const void* x, const void* mean, const void* invstd, const void* weight, bool training,
                         void* grad_input, void* grad_weight, void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T *dY = static_cast<const T*>(grad_y), *X = static_cast<const T*>(x);
    const A *M = static_cast<const A*>(mean), *I = static_cast<const A*>(invstd), *W = static_cast<const A*>(weight);
    T* dX = static_cast<T*>(grad_input);
    A *dW = static_cast<A*>(grad_weight), *dB = static_cast<A*>(grad_bias);
    const A count = static_cast<A>(n * spatial);
    parallel_for(0, channels, grain_channels(n, spatial), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        const A mu = M[c], inv = I[c], w = W != nullptr ? W[c] : A(1);
        A sum_dy = 0, dot = 0;  // sum(dy), sum(dy * (x - mean))
        for_each_plane(dY, n, channels, spatial, c, [&](const T* g, int64_t i) {
          const T* xp = X + (i * channels + c) * spatial;
          sum_dy += lane_sum<A>(spatial, [&](int64_t j) { return detail::convert<A>(g[j]); });
          dot += lane_sum<A>(spatial, [&](int64_t j) { return detail::convert<A>(g[j]) * (detail::convert<A>(xp[j]) - mu); });
        });
        if (dB != nullptr) dB[c] = sum_dy;
        if (dW != nullptr) dW[c] = dot * inv;
        if (dX == nullptr) continue;
        const A k = training ? dot * inv * inv / count : A(0);
        const A mean_dy = training ? sum_dy / count : A(0);
        for_each_plane(dY, n, channels, spatial, c, [&](const T* g, int64_t i) {
          const T* xp = X + (i * channels + c) * spatial;
          T* dxp = dX + (i * channels + c) * spatial;
          for (int64_t j = 0; j < spatial; ++j) {
            const A d = detail::convert<A>(g[j]) - (detail::convert<A>(xp[j]) - mu) * k - mean_dy;
            dxp[j] = detail::convert<T>(d * inv * w);
          }
        });
      }
    });
  });
}

}  // namespace mlu::kernels
