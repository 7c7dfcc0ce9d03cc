// The scalar references of norm.h: straight from the formulas in the header,
// one row / channel at a time, every sum in double (the kernels sum in the
// accumulation type A, float for Float32 / Float16 / BFloat16), each result
// rounded once to its dtype. Statistics and parameters are read and written
// in A, as the kernels do.
#include <cmath>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/norm.h"

namespace mlu::kernels {
namespace {

template <class T>
double wide(T v) {
  return static_cast<double>(detail::widen(v));
}

// Parameter j of an optional A array, `absent` when there is none.
template <class A>
double param(const void* p, int64_t j, double absent) {
  return p == nullptr ? absent : static_cast<double>(static_cast<const A*>(p)[j]);
}

}  // namespace

void layer_norm_ref(ScalarType type, int64_t rows, int64_t cols, const void* x, const void* weight,
                    const void* bias, double eps, void* y, void* mean, void* rstd) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    T* Y = static_cast<T*>(y);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = X + r * cols;
      double sum = 0;
      for (int64_t j = 0; j < cols; ++j) sum += wide(xr[j]);
      const double mu = sum / static_cast<double>(cols);
      double squares = 0;
      for (int64_t j = 0; j < cols; ++j) squares += (wide(xr[j]) - mu) * (wide(xr[j]) - mu);
      const double inv = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
      static_cast<A*>(mean)[r] = static_cast<A>(mu);
      static_cast<A*>(rstd)[r] = static_cast<A>(inv);
      for (int64_t j = 0; j < cols; ++j) {
        Y[r * cols + j] =
            detail::convert<T>((wide(xr[j]) - mu) * inv * param<A>(weight, j, 1.0) + param<A>(bias, j, 0.0));
      }
    }
  });
}

void layer_norm_backward_ref(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                             const void* mean, const void* rstd, const void* weight, void* grad_input,
                             void* grad_weight, void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* dY = static_cast<const T*>(grad_y);
    const T* X = static_cast<const T*>(x);
    const A* M = static_cast<const A*>(mean);
    const A* R = static_cast<const A*>(rstd);
    // With xhat = (x - mean) * rstd and g = dy * weight, per row:
    //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    const auto xhat = [&](int64_t r, int64_t j) { return (wide(X[r * cols + j]) - double(M[r])) * double(R[r]); };
    const auto g = [&](int64_t r, int64_t j) { return wide(dY[r * cols + j]) * param<A>(weight, j, 1.0); };
    if (grad_input != nullptr) {
      T* dX = static_cast<T*>(grad_input);
      for (int64_t r = 0; r < rows; ++r) {
        double sum_g = 0, sum_gx = 0;
        for (int64_t j = 0; j < cols; ++j) {
          sum_g += g(r, j);
          sum_gx += g(r, j) * xhat(r, j);
        }
        const double n = static_cast<double>(cols);
        for (int64_t j = 0; j < cols; ++j) {
          dX[r * cols + j] = detail::convert<T>(double(R[r]) * (g(r, j) - sum_g / n - xhat(r, j) * sum_gx / n));
        }
      }
    }
    for (int64_t j = 0; j < cols; ++j) {
      double sw = 0, sb = 0;
      for (int64_t r = 0; r < rows; ++r) {
        sw += wide(dY[r * cols + j]) * xhat(r, j);
        sb += wide(dY[r * cols + j]);
      }
      if (grad_weight != nullptr) static_cast<A*>(grad_weight)[j] = static_cast<A>(sw);
      if (grad_bias != nullptr) static_cast<A*>(grad_bias)[j] = static_cast<A>(sb);
    }
  });
}

void batch_norm_statistics_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                               void* mean, void* var) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    const double count = static_cast<double>(n * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < spatial; ++j) sum += wide(X[(i * channels + c) * spatial + j]);
      }
      const double mu = sum / count;
      double squares = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < spatial; ++j) {
          const double d = wide(X[(i * channels + c) * spatial + j]) - mu;
          squares += d * d;
        }
      }
      static_cast<A*>(mean)[c] = static_cast<A>(mu);
      static_cast<A*>(var)[c] = static_cast<A>(squares / count);
    }
  });
}

void batch_norm_apply_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                          const void* mean, const void* invstd, const void* weight, const void* bias, void* y) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* X = static_cast<const T*>(x);
    T* Y = static_cast<T*>(y);
    for (int64_t i = 0; i < n * channels * spatial; ++i) {
      const int64_t c = (i / spatial) % channels;
      Y[i] = detail::convert<T>((wide(X[i]) - param<A>(mean, c, 0.0)) * param<A>(invstd, c, 0.0) *
                                    param<A>(weight, c, 1.0) +
                                param<A>(bias, c, 0.0));
    }
  });
}

void batch_norm_backward_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* grad_y,
                             const void* x, const void* mean, const void* invstd, const void* weight, bool training,
                             void* grad_input, void* grad_weight, void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* dY = static_cast<const T*>(grad_y);
    const T* X = static_cast<const T*>(x);
    const double m = static_cast<double>(n * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      const double mu = param<A>(mean, c, 0.0), inv = param<A>(invstd, c, 0.0), w = param<A>(weight, c, 1.0);
      const auto at = [&](int64_t i, int64_t j) { return (i * channels + c) * spatial + j; };
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < spatial; ++j) {
          sum_dy += wide(dY[at(i, j)]);
          sum_dy_xhat += wide(dY[at(i, j)]) * (wide(X[at(i, j)]) - mu) * inv;
        }
      }
      if (grad_bias != nullptr) static_cast<A*>(grad_bias)[c] = static_cast<A>(sum_dy);
      if (grad_weight != nullptr) static_cast<A*>(grad_weight)[c] = static_cast<A>(sum_dy_xhat);
      if (grad_input == nullptr) continue;
      T* dX = static_cast<T*>(grad_input);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < spatial; ++j) {
          const double dy = wide(dY[at(i, j)]), xhat = (wide(X[at(i, j)]) - mu) * inv;
          const double d = training ? dy - sum_dy / m - xhat * sum_dy_xhat / m : dy;
          dX[at(i, j)] = detail::convert<T>(d * inv * w);
        }
      }
    }
  });
}

void group_norm_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups, const void* x,
                    const void* weight, const void* bias, double eps, void* y, void* mean, void* rstd) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const int64_t d = channels / groups, count = d * spatial;
    for (int64_t r = 0; r < n * groups; ++r) {
      const int64_t first = (r / groups) * channels + (r % groups) * d;
      const T* p = static_cast<const T*>(x) + first * spatial;
      double sum = 0, squares = 0;
      for (int64_t j = 0; j < count; ++j) sum += wide(p[j]);
      const double mu = sum / static_cast<double>(count);
      for (int64_t j = 0; j < count; ++j) squares += (wide(p[j]) - mu) * (wide(p[j]) - mu);
      const double inv = 1 / std::sqrt(squares / static_cast<double>(count) + eps);
      static_cast<A*>(mean)[r] = static_cast<A>(mu);
      static_cast<A*>(rstd)[r] = static_cast<A>(inv);
      for (int64_t c = 0; c < d; ++c) {
        const int64_t ch = (r % groups) * d + c;
        for (int64_t j = 0; j < spatial; ++j) {
          const double v = (wide(p[c * spatial + j]) - mu) * inv * param<A>(weight, ch, 1) + param<A>(bias, ch, 0);
          static_cast<T*>(y)[(first + c) * spatial + j] = detail::convert<T>(v);
        }
      }
    }
  });
}

void group_norm_backward_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups,
                             const void* grad_y, const void* x, const void* mean, const void* rstd,
                             const void* weight, void* grad_input, void* grad_weight, void* grad_bias) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const int64_t d = channels / groups;
    std::vector<double> ds(static_cast<size_t>(n * channels)), db(static_cast<size_t>(n * channels));
    for (int64_t plane = 0; plane < n * channels; ++plane) {
      for (int64_t j = 0; j < spatial; ++j) {
        const double g = wide(static_cast<const T*>(grad_y)[plane * spatial + j]);
        ds[plane] += g * wide(static_cast<const T*>(x)[plane * spatial + j]);
        db[plane] += g;
      }
    }
    for (int64_t r = 0; r < n * groups && grad_input != nullptr; ++r) {
      const int64_t first = (r / groups) * channels + (r % groups) * d;
      const double mu = param<A>(mean, r, 0), rs = param<A>(rstd, r, 0);
      double ds_gamma = 0, db_gamma = 0;
      for (int64_t c = 0; c < d; ++c) {
        const double gamma = param<A>(weight, (r % groups) * d + c, 1);
        ds_gamma += ds[first + c] * gamma;
        db_gamma += db[first + c] * gamma;
      }
      const double s = 1.0 / static_cast<double>(d * spatial);
      const double c2 = (db_gamma * mu - ds_gamma) * rs * rs * rs * s, c3 = -c2 * mu - db_gamma * rs * s;
      for (int64_t c = 0; c < d; ++c) {
        const double c1 = rs * param<A>(weight, (r % groups) * d + c, 1);
        for (int64_t j = 0; j < spatial; ++j) {
          const int64_t at = (first + c) * spatial + j;
          const double v = c1 * wide(static_cast<const T*>(grad_y)[at]) + c2 * wide(static_cast<const T*>(x)[at]) + c3;
          static_cast<T*>(grad_input)[at] = detail::convert<T>(v);
        }
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      double dw = 0, dbias = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = i * channels + c, g = i * groups + c / d;
        dw += (ds[at] - db[at] * param<A>(mean, g, 0)) * param<A>(rstd, g, 0);
        dbias += db[at];
      }
      if (grad_weight != nullptr) static_cast<A*>(grad_weight)[c] = static_cast<A>(dw);
      if (grad_bias != nullptr) static_cast<A*>(grad_bias)[c] = static_cast<A>(dbias);
    }
  });
}

}  // namespace mlu::kernels
