// The scalar references of pool.h: for each output element, a loop over
// every kernel tap (d, h, w) that skips the taps outside the plane, straight
// from the window definitions in the header (PyTorch's CPU loops), sums in
// double (the kernels sum in float for Float32 / Float16 / BFloat16), each
// result rounded once. The backward ops gather, for each input element, the
// contributions of every output whose window holds it.
#include <cmath>
#include <limits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/pool.h"

namespace mlu::kernels {
namespace {

template <class T>
double wide(T v) {
  return static_cast<double>(detail::widen(v));
}

int64_t in_plane(const PoolShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t out_plane(const PoolShape& s) { return s.out[0] * s.out[1] * s.out[2]; }

// Output flat index o of a plane as (d, h, w).
void unravel_out(const PoolShape& s, int64_t o, int64_t (&at)[3]) {
  at[2] = o % s.out[2];
  at[1] = (o / s.out[2]) % s.out[1];
  at[0] = o / (s.out[2] * s.out[1]);
}

// A window per dim: taps start + k * step for k in [0, taps), kept where in
// [0, in).
struct Span {
  int64_t start[3], step[3], taps[3];
};

// The maximum of a window (the first largest, or the last NaN; compared in
// the compute type) and its flat index; before any tap the index is the
// window's first position inside the plane per dim (PyTorch's initial
// maxindex, also where an empty window points).
template <class T>
void window_max(const PoolShape& s, const T* plane, const Span& w, T& best, int64_t& best_at) {
  using A = detail::compute_t<T>;
  int64_t first[3];
  for (int d = 0; d < 3; ++d) {
    first[d] = w.start[d];
    while (first[d] < 0) first[d] += w.step[d];
  }
  best_at = (first[0] * s.in[1] + first[1]) * s.in[2] + first[2];
  A best_value = -std::numeric_limits<A>::infinity();
  for (int64_t kd = 0; kd < w.taps[0]; ++kd) {
    for (int64_t kh = 0; kh < w.taps[1]; ++kh) {
      for (int64_t kw = 0; kw < w.taps[2]; ++kw) {
        const int64_t d = w.start[0] + kd * w.step[0], h = w.start[1] + kh * w.step[1], x = w.start[2] + kw * w.step[2];
        if (d < 0 || d >= s.in[0] || h < 0 || h >= s.in[1] || x < 0 || x >= s.in[2]) continue;
        const int64_t at = (d * s.in[1] + h) * s.in[2] + x;
        const A v = detail::widen(plane[at]);
        if (v > best_value || std::isnan(v)) {
          best_value = v;
          best_at = at;
        }
      }
    }
  }
  best = detail::convert<T>(best_value);
}

// Max pooling over windows span(plane, o).
template <class MakeSpan>
void max_ref(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices,
             MakeSpan span) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t ip = in_plane(s), op = out_plane(s);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t o = 0; o < op; ++o) {
        window_max(s, in + p * ip, span(p, o), out[p * op + o], indices[p * op + o]);
      }
    }
  });
}

Span max_span(const PoolShape& s, int64_t o) {
  int64_t at[3];
  unravel_out(s, o, at);
  Span w{};
  for (int d = 0; d < 3; ++d) {
    w.start[d] = at[d] * s.stride[d] - s.pad[d];
    w.step[d] = s.dilation[d];
    w.taps[d] = s.kernel[d];
  }
  return w;
}

// Adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)).
Span adaptive_span(const PoolShape& s, int64_t o) {
  int64_t at[3];
  unravel_out(s, o, at);
  Span w{};
  for (int d = 0; d < 3; ++d) {
    w.start[d] = at[d] * s.in[d] / s.out[d];
    const int64_t end = ((at[d] + 1) * s.in[d] + s.out[d] - 1) / s.out[d];
    w.step[d] = 1;
    w.taps[d] = end - w.start[d];
  }
  return w;
}

// An average window: the taps, and the divisor (divisor_override, else the
// padded window's size or the count of taps inside the plane); empty when no
// tap is inside the plane.
Span avg_span(const PoolShape& s, int64_t o, bool count_include_pad, int64_t divisor_override, double& divisor,
              bool& empty) {
  int64_t at[3];
  unravel_out(s, o, at);
  Span w{};
  int64_t padded = 1, inside = 1;
  for (int d = 0; d < 3; ++d) {
    w.start[d] = at[d] * s.stride[d] - s.pad[d];
    w.step[d] = 1;
    w.taps[d] = s.kernel[d];
    // The padded plane ends at in + pad; the plane at in.
    const int64_t padded_end = std::min(w.start[d] + s.kernel[d], s.in[d] + s.pad[d]);
    padded *= padded_end - w.start[d];
    inside *= std::max<int64_t>(0, std::min(padded_end, s.in[d]) - std::max<int64_t>(w.start[d], 0));
  }
  empty = inside == 0;
  divisor = static_cast<double>(divisor_override != 0 ? divisor_override : count_include_pad ? padded : inside);
  return w;
}

// Calls visit(flat input position) for each tap of w inside the plane.
template <class Visit>
void for_each_tap(const PoolShape& s, const Span& w, Visit visit) {
  for (int64_t kd = 0; kd < w.taps[0]; ++kd) {
    for (int64_t kh = 0; kh < w.taps[1]; ++kh) {
      for (int64_t kw = 0; kw < w.taps[2]; ++kw) {
        const int64_t d = w.start[0] + kd * w.step[0], h = w.start[1] + kh * w.step[1], x = w.start[2] + kw * w.step[2];
        if (d < 0 || d >= s.in[0] || h < 0 || h >= s.in[1] || x < 0 || x >= s.in[2]) continue;
        visit((d * s.in[1] + h) * s.in[2] + x);
      }
    }
  }
}

// Averages: span(o, divisor, empty) per output.
template <class MakeSpan>
void average_ref(const PoolShape& s, ScalarType type, const void* input, void* output, MakeSpan span) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t ip = in_plane(s), op = out_plane(s);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t o = 0; o < op; ++o) {
        double divisor;
        bool empty;
        const Span w = span(o, divisor, empty);
        double sum = 0;
        for_each_tap(s, w, [&](int64_t at) { sum += wide(in[p * ip + at]); });
        out[p * op + o] = detail::convert<T>(empty ? 0.0 : sum / divisor);
      }
    }
  });
}

// The averages' backward op: grad_input[i] = the sum over the outputs whose
// window holds i of grad_output / divisor, one input element at a time.
template <class MakeSpan>
void average_backward_ref(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input,
                          MakeSpan span) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t ip = in_plane(s), op = out_plane(s);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t i = 0; i < ip; ++i) {
        double sum = 0;
        for (int64_t o = 0; o < op; ++o) {
          double divisor;
          bool empty;
          const Span w = span(o, divisor, empty);
          if (empty) continue;
          for_each_tap(s, w, [&](int64_t at) {
            if (at == i) sum += wide(go[p * op + o]) / divisor;
          });
        }
        gi[p * ip + i] = detail::convert<T>(sum);
      }
    }
  });
}

// The window starts of one dim of fractional pooling, PyTorch's
// generate_intervals in the input's dtype T: with Float16 / BFloat16 every
// operation rounds to T (c10::Half arithmetic).
template <class T>
int64_t fractional_start(T sample, int64_t in, int64_t out, int64_t kernel, int64_t i) {
  if (i == out - 1) return in - kernel;
  const auto r = [](auto x) { return detail::widen(detail::convert<T>(x)); };  // one operation in T
  using A = detail::compute_t<T>;
  const A u = detail::widen(sample);
  const A alpha = r(r(static_cast<A>(in - kernel)) / r(static_cast<A>(out - 1)));
  return static_cast<int>(r(r(r(static_cast<A>(i)) + u) * alpha)) - static_cast<int>(r(u * alpha));
}

}  // namespace

void max_pool_ref(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices) {
  max_ref(s, type, input, output, indices, [&](int64_t, int64_t o) { return max_span(s, o); });
}

void adaptive_max_pool_ref(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices) {
  max_ref(s, type, input, output, indices, [&](int64_t, int64_t o) { return adaptive_span(s, o); });
}

void fractional_max_pool_ref(const PoolShape& s, int dims, ScalarType type, const void* input, const void* samples,
                             void* output, int64_t* indices) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* u = static_cast<const T*>(samples);
    max_ref(s, type, input, output, indices, [&](int64_t p, int64_t o) {
      int64_t at[3];
      unravel_out(s, o, at);
      Span w{};
      for (int d = 0; d < 3; ++d) {
        w.step[d] = 1;
        w.taps[d] = s.kernel[d];
        w.start[d] = 0;  // a dim added to reach three (2-D: depth)
      }
      // Samples per plane: 2-D (width, height), 3-D (time, height, width).
      for (int i = 0; i < dims; ++i) {
        const int d = dims == 2 ? 2 - i : i;
        w.start[d] = fractional_start<T>(u[p * dims + i], s.in[d], s.out[d], s.kernel[d], at[d]);
      }
      return w;
    });
  });
}

void max_pool_backward_ref(const PoolShape& s, ScalarType type, const void* grad_output, const int64_t* indices,
                           void* grad_input) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t ip = in_plane(s), op = out_plane(s);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t i = 0; i < ip; ++i) {
        double sum = 0;
        for (int64_t o = 0; o < op; ++o) {
          if (indices[p * op + o] == i) sum += wide(go[p * op + o]);
        }
        gi[p * ip + i] = detail::convert<T>(sum);
      }
    }
  });
}

void avg_pool_ref(const PoolShape& s, ScalarType type, const void* input, void* output, bool count_include_pad,
                  int64_t divisor_override) {
  average_ref(s, type, input, output, [&](int64_t o, double& divisor, bool& empty) {
    return avg_span(s, o, count_include_pad, divisor_override, divisor, empty);
  });
}

void avg_pool_backward_ref(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input,
                           bool count_include_pad, int64_t divisor_override) {
  average_backward_ref(s, type, grad_output, grad_input, [&](int64_t o, double& divisor, bool& empty) {
    return avg_span(s, o, count_include_pad, divisor_override, divisor, empty);
  });
}

void adaptive_avg_pool_ref(const PoolShape& s, ScalarType type, const void* input, void* output) {
  average_ref(s, type, input, output, [&](int64_t o, double& divisor, bool& empty) {
    const Span w = adaptive_span(s, o);
    divisor = static_cast<double>(w.taps[0] * w.taps[1] * w.taps[2]);
    empty = w.taps[0] <= 0 || w.taps[1] <= 0 || w.taps[2] <= 0;
    return w;
  });
}

void adaptive_avg_pool_backward_ref(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  average_backward_ref(s, type, grad_output, grad_input, [&](int64_t o, double& divisor, bool& empty) {
    const Span w = adaptive_span(s, o);
    divisor = static_cast<double>(w.taps[0] * w.taps[1] * w.taps[2]);
    empty = w.taps[0] <= 0 || w.taps[1] <= 0 || w.taps[2] <= 0;
    return w;
  });
}

}  // namespace mlu::kernels
