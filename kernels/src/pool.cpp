#include "mlu_kernels/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
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
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
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

}  // namespace mlu::kernels
