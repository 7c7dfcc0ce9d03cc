#include "mlu_kernels/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

int64_t grain_planes(const Pool2dShape& s) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(s.out_h * s.out_w * s.kernel_h * s.kernel_w, 1));
}

}  // namespace

void max_pool2d(const Pool2dShape& s, ScalarType type, const void* input, void* output, int64_t* indices) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p * s.in_h * s.in_w;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          int64_t h0 = oh * s.stride_h - s.pad_h;
          const int64_t h1 = std::min(h0 + (s.kernel_h - 1) * s.dilation_h + 1, s.in_h);
          while (h0 < 0) h0 += s.dilation_h;
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            int64_t w0 = ow * s.stride_w - s.pad_w;
            const int64_t w1 = std::min(w0 + (s.kernel_w - 1) * s.dilation_w + 1, s.in_w);
            while (w0 < 0) w0 += s.dilation_w;
            int64_t best = h0 * s.in_w + w0;
            A best_value = -std::numeric_limits<A>::infinity();
            for (int64_t ih = h0; ih < h1; ih += s.dilation_h) {
              for (int64_t iw = w0; iw < w1; iw += s.dilation_w) {
                const int64_t at = ih * s.in_w + iw;
                const A v = detail::convert<A>(plane[at]);
                if (v > best_value || std::isnan(v)) {
                  best_value = v;
                  best = at;
                }
              }
            }
            const int64_t o = (p * s.out_h + oh) * s.out_w + ow;
            out[o] = detail::convert<T>(best_value);
            indices[o] = best;
          }
        }
      }
    });
  });
}

void max_pool2d_backward(const Pool2dShape& s, ScalarType type, const void* grad_output, const int64_t* indices,
                         void* grad_input) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        T* plane = gi + p * in_plane;
        std::fill_n(plane, in_plane, T(0));
        for (int64_t o = 0; o < out_plane; ++o) {
          const int64_t at = indices[p * out_plane + o];
          if (at < 0 || at >= in_plane) continue;  // not an index forward could give: ignored, never written
          plane[at] = detail::convert<T>(detail::convert<A>(plane[at]) + detail::convert<A>(go[p * out_plane + o]));
        }
      }
    });
  });
}

namespace {

// The window of output (oh, ow): rows [h0, h1), columns [w0, w1) inside the
// plane, and its divisor (Note in pool.h on avg_pool2d).
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const Pool2dShape& s, int64_t oh, int64_t ow, bool count_include_pad, int64_t divisor_override) {
  int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
  int64_t h1 = std::min(h0 + s.kernel_h, s.in_h + s.pad_h), w1 = std::min(w0 + s.kernel_w, s.in_w + s.pad_w);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, s.in_h);
  w1 = std::min(w1, s.in_w);
  const int64_t divisor = divisor_override != 0 ? divisor_override : count_include_pad ? padded : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

// Runs window(oh, ow) -> (h0, h1, w0, w1, divisor) over every output of
// every plane: the forward averages, the backward spreads.
template <class Window>
void average_forward(const Pool2dShape& s, ScalarType type, const void* input, void* output, Window window) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p * s.in_h * s.in_w;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const AvgWindow w = window(oh, ow);
            A sum = 0;
            for (int64_t ih = w.h0; ih < w.h1; ++ih) {
              for (int64_t iw = w.w0; iw < w.w1; ++iw) sum += detail::convert<A>(plane[ih * s.in_w + iw]);
            }
            const bool empty = w.h0 >= w.h1 || w.w0 >= w.w1;
            out[(p * s.out_h + oh) * s.out_w + ow] = detail::convert<T>(empty ? A(0) : sum / static_cast<A>(w.divisor));
          }
        }
      }
    });
  });
}

template <class Window>
void average_backward(const Pool2dShape& s, ScalarType type, const void* grad_output, void* grad_input,
                      Window window) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t in_plane = s.in_h * s.in_w;
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(in_plane));
      for (int64_t p = lo; p < hi; ++p) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const AvgWindow w = window(oh, ow);
            if (w.h0 >= w.h1 || w.w0 >= w.w1) continue;
            const A g = detail::convert<A>(go[(p * s.out_h + oh) * s.out_w + ow]) / static_cast<A>(w.divisor);
            for (int64_t ih = w.h0; ih < w.h1; ++ih) {
              for (int64_t iw = w.w0; iw < w.w1; ++iw) acc[ih * s.in_w + iw] += g;
            }
          }
        }
        T* plane = gi + p * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) plane[i] = detail::convert<T>(acc[i]);
      }
    });
  });
}

}  // namespace

void avg_pool2d(const Pool2dShape& s, ScalarType type, const void* input, void* output, bool count_include_pad,
                int64_t divisor_override) {
  average_forward(s, type, input, output,
                  [&](int64_t oh, int64_t ow) { return avg_window(s, oh, ow, count_include_pad, divisor_override); });
}

void avg_pool2d_backward(const Pool2dShape& s, ScalarType type, const void* grad_output, void* grad_input,
                         bool count_include_pad, int64_t divisor_override) {
  average_backward(s, type, grad_output, grad_input,
                   [&](int64_t oh, int64_t ow) { return avg_window(s, oh, ow, count_include_pad, divisor_override); });
}

namespace {

AvgWindow adaptive_window(const Pool2dShape& s, int64_t oh, int64_t ow) {
  const int64_t h0 = adaptive_start(oh, s.in_h, s.out_h), h1 = adaptive_end(oh, s.in_h, s.out_h);
  const int64_t w0 = adaptive_start(ow, s.in_w, s.out_w), w1 = adaptive_end(ow, s.in_w, s.out_w);
  return {h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
}

}  // namespace

void adaptive_avg_pool2d(const Pool2dShape& s, ScalarType type, const void* input, void* output) {
  average_forward(s, type, input, output, [&](int64_t oh, int64_t ow) { return adaptive_window(s, oh, ow); });
}

void adaptive_avg_pool2d_backward(const Pool2dShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  average_backward(s, type, grad_output, grad_input,
                   [&](int64_t oh, int64_t ow) { return adaptive_window(s, oh, ow); });
}

}  // namespace mlu::kernels
