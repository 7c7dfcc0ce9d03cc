#include "mlu_kernels/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/type_arithmetic.h"
#include "../common/verbose_call.h"
#include "pool_table.h"

namespace mlu::kernels {
namespace {

int64_t in_plane(const PoolShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t out_plane(const PoolShape& s) { return s.out[0] * s.out[1] * s.out[2]; }

int64_t grain_planes(const PoolShape& s) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(out_plane(s) * s.kernel[0] * s.kernel[1] * s.kernel[2], 1));
}

// The input positions of one output: [lo, hi) by step per dim, inside the
// plane, and the average's divisor.
struct Window {
  int64_t lo[3], hi[3], step[3];
  int64_t divisor;
  bool empty() const { return lo[0] >= hi[0] || lo[1] >= hi[1] || lo[2] >= hi[2]; }
};

// Calls visit(flat position) for each position of w, depth-major.
template <class Visit>
inline void for_each_position(const PoolShape& s, const Window& w, Visit visit) {
  for (int64_t d = w.lo[0]; d < w.hi[0]; d += w.step[0]) {
    for (int64_t h = w.lo[1]; h < w.hi[1]; h += w.step[1]) {
      const int64_t row = (d * s.in[1] + h) * s.in[2];
      for (int64_t x = w.lo[2]; x < w.hi[2]; x += w.step[2]) visit(row + x);
    }
  }
}

// Calls fn(output flat index, window(o)) for every output of a plane.
template <class MakeWindow, class Fn>
inline void for_each_output(const PoolShape& s, MakeWindow window, Fn fn) {
  int64_t o = 0;
  for (int64_t od = 0; od < s.out[0]; ++od) {
    for (int64_t oh = 0; oh < s.out[1]; ++oh) {
      for (int64_t ow = 0; ow < s.out[2]; ++ow) fn(o++, window(od, oh, ow));
    }
  }
}

Window max_window(const PoolShape& s, const int64_t (&o)[3]) {
  Window w{};
  for (int d = 0; d < 3; ++d) {
    int64_t lo = o[d] * s.stride[d] - s.pad[d];
    w.hi[d] = std::min(lo + (s.kernel[d] - 1) * s.dilation[d] + 1, s.in[d]);
    while (lo < 0) lo += s.dilation[d];
    w.lo[d] = lo;
    w.step[d] = s.dilation[d];
  }
  w.divisor = 1;
  return w;
}

Window avg_window(const PoolShape& s, const int64_t (&o)[3], bool count_include_pad, int64_t divisor_override) {
  Window w{};
  int64_t padded = 1, clipped = 1;
  for (int d = 0; d < 3; ++d) {
    const int64_t lo = o[d] * s.stride[d] - s.pad[d];
    const int64_t hi = std::min(lo + s.kernel[d], s.in[d] + s.pad[d]);
    padded *= hi - lo;
    w.lo[d] = std::max<int64_t>(lo, 0);
    w.hi[d] = std::min(hi, s.in[d]);
    w.step[d] = 1;
    clipped *= w.hi[d] - w.lo[d];
  }
  w.divisor = divisor_override != 0 ? divisor_override : count_include_pad ? padded : clipped;
  return w;
}

Window adaptive_window(const PoolShape& s, const int64_t (&o)[3]) {
  Window w{};
  w.divisor = 1;
  for (int d = 0; d < 3; ++d) {
    w.lo[d] = (o[d] * s.in[d]) / s.out[d];
    w.hi[d] = ((o[d] + 1) * s.in[d] + s.out[d] - 1) / s.out[d];
    w.step[d] = 1;
    w.divisor *= w.hi[d] - w.lo[d];
  }
  return w;
}

// Maximum and its index over each window of each plane; window(p, od, oh, ow)
// (plane p: fractional pooling's windows differ per plane).
template <class MakeWindow>
void maximum(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices,
             MakeWindow window) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t ip = in_plane(s), op = out_plane(s);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p * ip;
        const auto plane_window = [&](int64_t od, int64_t oh, int64_t ow) { return window(p, od, oh, ow); };
        for_each_output(s, plane_window, [&](int64_t o, const Window& w) {
          int64_t best = (w.lo[0] * s.in[1] + w.lo[1]) * s.in[2] + w.lo[2];
          A best_value = -std::numeric_limits<A>::infinity();
          for_each_position(s, w, [&](int64_t at) {
            const A v = detail::convert<A>(plane[at]);
            if (v > best_value || std::isnan(v)) {
              best_value = v;
              best = at;
            }
          });
          out[p * op + o] = detail::convert<T>(best_value);
          indices[p * op + o] = best;
        });
      }
    });
  });
}

// The windows every plane of a max_pool call shares (detail::MaxPoolPlan).
struct MaxPoolPlanStorage {
  std::vector<int32_t> first, taps;
  std::vector<int64_t> clipped;
  detail::MaxPoolPlan plan{};

  explicit MaxPoolPlanStorage(const PoolShape& s) {
    const int64_t op = out_plane(s);
    first.assign(static_cast<size_t>(op), 0);
    bool any_inside = false;
    int64_t o = 0;
    for (int64_t od = 0; od < s.out[0]; ++od) {
      for (int64_t oh = 0; oh < s.out[1]; ++oh) {
        for (int64_t ow = 0; ow < s.out[2]; ++ow, ++o) {
          const int64_t at[3] = {od, oh, ow};
          bool inside = true;
          for (int d = 0; d < 3; ++d) {
            const int64_t lo = at[d] * s.stride[d] - s.pad[d];
            inside = inside && lo >= 0 && lo + (s.kernel[d] - 1) * s.dilation[d] < s.in[d];
          }
          if (!inside) {
            clipped.push_back(o);
            continue;
          }
          any_inside = true;
          const int64_t lo[3] = {od * s.stride[0] - s.pad[0], oh * s.stride[1] - s.pad[1], ow * s.stride[2] - s.pad[2]};
          first[static_cast<size_t>(o)] = static_cast<int32_t>((lo[0] * s.in[1] + lo[1]) * s.in[2] + lo[2]);
        }
      }
    }
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
          taps.push_back(static_cast<int32_t>(((kd * s.dilation[0]) * s.in[1] + kh * s.dilation[1]) * s.in[2] +
                                              kw * s.dilation[2]));
        }
      }
    }
    plan = {first.data(),
            taps.data(),
            static_cast<int64_t>(taps.size()),
            clipped.data(),
            static_cast<int64_t>(clipped.size()),
            any_inside};
  }
};

// The forward averages, the backward spreads.
template <class MakeWindow>
void average_forward(const PoolShape& s, ScalarType type, const void* input, void* output, MakeWindow window) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t ip = in_plane(s), op = out_plane(s);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p * ip;
        for_each_output(s, window, [&](int64_t o, const Window& w) {
          A sum = 0;
          for_each_position(s, w, [&](int64_t at) { sum += detail::convert<A>(plane[at]); });
          out[p * op + o] = detail::convert<T>(w.empty() ? A(0) : sum / static_cast<A>(w.divisor));
        });
      }
    });
  });
}

template <class MakeWindow>
void average_backward(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input,
                      MakeWindow window) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t ip = in_plane(s), op = out_plane(s);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(ip));
      for (int64_t p = lo; p < hi; ++p) {
        std::fill(acc.begin(), acc.end(), A(0));
        for_each_output(s, window, [&](int64_t o, const Window& w) {
          if (w.empty()) return;
          const A g = detail::convert<A>(go[p * op + o]) / static_cast<A>(w.divisor);
          for_each_position(s, w, [&](int64_t at) { acc[static_cast<size_t>(at)] += g; });
        });
        T* plane = gi + p * ip;
        for (int64_t i = 0; i < ip; ++i) plane[i] = detail::convert<T>(acc[static_cast<size_t>(i)]);
      }
    });
  });
}

// The log line's problem (mlu_kernels/verbose.h): planes and the output's sizes.
void describe(detail::VerboseCall& call, const PoolShape& s, ScalarType type) {
  call.describe(type, "planes%lld out%lldx%lldx%lld", detail::lld(s.planes), detail::lld(s.out[0]),
                detail::lld(s.out[1]), detail::lld(s.out[2]));
}

}  // namespace

void max_pool(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices) {
  detail::VerboseCall call("max_pool");
  if (call) describe(call, s, type);
  if (in_plane(s) <= std::numeric_limits<int32_t>::max()) {  // Note [Max pooling by window offsets]
    const MaxPoolPlanStorage plan(s);
    const auto& fns = MLU_KERNELS_ACTIVE_ISA_VARIANT(pool_fns)();
    const bool sixteen_bit = type == ScalarType::Float16 || type == ScalarType::BFloat16;
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      std::vector<float> wide(sixteen_bit && plan.plan.any_inside ? static_cast<size_t>(in_plane(s)) : 0);
      fns.max_pool_planes(s, plan.plan, type, lo, hi, input, output, indices, wide.data());
    });
    return;
  }
  maximum(s, type, input, output, indices,
          [&](int64_t, int64_t d, int64_t h, int64_t w) { return max_window(s, {d, h, w}); });
}

void adaptive_max_pool(const PoolShape& s, ScalarType type, const void* input, void* output, int64_t* indices) {
  detail::VerboseCall call("adaptive_max_pool");
  if (call) describe(call, s, type);
  maximum(s, type, input, output, indices,
          [&](int64_t, int64_t d, int64_t h, int64_t w) { return adaptive_window(s, {d, h, w}); });
}

namespace {

// The window starts of one dim (FractionalMaxPooling.h generate_intervals),
// every operation rounded to T as the CPU's scalar_t arithmetic does.
template <class T>
void fractional_starts(T sample_t, int64_t in, int64_t out, int64_t kernel, std::vector<int64_t>& starts) {
  using A = detail::compute_t<T>;
  const auto round = [](A x) { return detail::widen(detail::convert<T>(x)); };
  starts.assign(static_cast<size_t>(out), 0);
  const A sample = detail::widen(sample_t);
  if (out > 1) {
    const A alpha = round(round(static_cast<A>(in - kernel)) / round(static_cast<A>(out - 1)));
    const int64_t offset = static_cast<int>(round(sample * alpha));
    for (int64_t i = 0; i + 1 < out; ++i) {
      starts[static_cast<size_t>(i)] =
          static_cast<int>(round(round(round(static_cast<A>(i)) + sample) * alpha)) - offset;
    }
  }
  if (out > 0) starts[static_cast<size_t>(out - 1)] = in - kernel;
}

}  // namespace

void fractional_max_pool(const PoolShape& s, int dims, ScalarType type, const void* input, const void* samples,
                         void* output, int64_t* indices) {
  detail::VerboseCall call("fractional_max_pool");
  if (call) describe(call, s, type);
  // Every plane's window starts per dim first ([planes][out[d]], one start
  // for a dim added to reach three), then one pass of `maximum`.
  std::vector<int64_t> starts[3];
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* u = static_cast<const T*>(samples);
    std::vector<int64_t> one;
    for (int d = 0; d < 3; ++d) starts[d].resize(static_cast<size_t>(s.planes * s.out[d]), 0);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int i = 0; i < dims; ++i) {
        // PyTorch's sample order: 2-D (width, height), 3-D (time, height, width).
        const int d = dims == 2 ? 2 - i : i;
        fractional_starts<T>(u[p * dims + i], s.in[d], s.out[d], s.kernel[d], one);
        std::copy(one.begin(), one.end(), starts[d].begin() + p * s.out[d]);
      }
    }
  });
  maximum(s, type, input, output, indices, [&](int64_t p, int64_t od, int64_t oh, int64_t ow) {
    Window w{};
    const int64_t o[3] = {od, oh, ow};
    for (int d = 0; d < 3; ++d) {
      w.lo[d] = starts[d][static_cast<size_t>(p * s.out[d] + o[d])];
      w.hi[d] = w.lo[d] + s.kernel[d];
      w.step[d] = 1;
    }
    w.divisor = 1;
    return w;
  });
}

void max_pool_backward(const PoolShape& s, ScalarType type, const void* grad_output, const int64_t* indices,
                       void* grad_input) {
  detail::VerboseCall call("max_pool_backward");
  if (call) describe(call, s, type);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t ip = in_plane(s), op = out_plane(s);
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        T* plane = gi + p * ip;
        std::fill_n(plane, ip, T(0));
        for (int64_t o = 0; o < op; ++o) {
          const int64_t at = indices[p * op + o];
          if (at < 0 || at >= ip) continue;  // not an index forward could give: ignored, never written
          plane[at] = detail::convert<T>(detail::convert<A>(plane[at]) + detail::convert<A>(go[p * op + o]));
        }
      }
    });
  });
}

void avg_pool(const PoolShape& s, ScalarType type, const void* input, void* output, bool count_include_pad,
              int64_t divisor_override) {
  detail::VerboseCall call("avg_pool");
  if (call) describe(call, s, type);
  average_forward(s, type, input, output, [&](int64_t d, int64_t h, int64_t w) {
    return avg_window(s, {d, h, w}, count_include_pad, divisor_override);
  });
}

void avg_pool_backward(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input,
                       bool count_include_pad, int64_t divisor_override) {
  detail::VerboseCall call("avg_pool_backward");
  if (call) describe(call, s, type);
  average_backward(s, type, grad_output, grad_input, [&](int64_t d, int64_t h, int64_t w) {
    return avg_window(s, {d, h, w}, count_include_pad, divisor_override);
  });
}

void adaptive_avg_pool(const PoolShape& s, ScalarType type, const void* input, void* output) {
  detail::VerboseCall call("adaptive_avg_pool");
  if (call) describe(call, s, type);
  average_forward(s, type, input, output,
                  [&](int64_t d, int64_t h, int64_t w) { return adaptive_window(s, {d, h, w}); });
}

void adaptive_avg_pool_backward(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  detail::VerboseCall call("adaptive_avg_pool_backward");
  if (call) describe(call, s, type);
  average_backward(s, type, grad_output, grad_input,
                   [&](int64_t d, int64_t h, int64_t w) { return adaptive_window(s, {d, h, w}); });
}

// Note [The CPU's 3-D adaptive average]
// The CPU's adaptive_avg_pool3d (the frame loops of
// AdaptiveAveragePooling3d.cpp, contiguous output) sums each window in
// scalar_t, depth-major, and divides the sum by the window's depth, then
// height, then width; its backward divides each output gradient the same
// way and adds it into a zeroed scalar_t gradient, output by output. In
// float16 / bfloat16 every one of those steps rounds (TypeArithmetic), and in
// float the three divisions differ from one by the product; the 1-D / 2-D
// kernels (adaptive_avg_pool) keep a float sum, as the CPU's 2-D ones do.
// Summing in 16 bits is less accurate, but the results are the CPU's.
void adaptive_avg_pool3d(const PoolShape& s, ScalarType type, const void* input, void* output) {
  detail::VerboseCall call("adaptive_avg_pool3d");
  if (call) describe(call, s, type);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using H = detail::TypeArithmetic<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t ip = in_plane(s), op = out_plane(s);
    const auto window = [&](int64_t d, int64_t h, int64_t w) { return adaptive_window(s, {d, h, w}); };
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p * ip;
        for_each_output(s, window, [&](int64_t o, const Window& w) {
          T sum = H::from(0);
          for_each_position(s, w, [&](int64_t at) { sum = H::add(sum, plane[at]); });
          for (int d = 0; d < 3; ++d) sum = H::div(sum, H::from(w.hi[d] - w.lo[d]));
          out[p * op + o] = sum;
        });
      }
    });
  });
}

void adaptive_avg_pool3d_backward(const PoolShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  detail::VerboseCall call("adaptive_avg_pool3d_backward");
  if (call) describe(call, s, type);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using H = detail::TypeArithmetic<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t ip = in_plane(s), op = out_plane(s);
    const auto window = [&](int64_t d, int64_t h, int64_t w) { return adaptive_window(s, {d, h, w}); };
    parallel_for(0, s.planes, grain_planes(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        T* plane = gi + p * ip;
        std::fill_n(plane, ip, H::from(0));
        for_each_output(s, window, [&](int64_t o, const Window& w) {
          T delta = go[p * op + o];
          for (int d = 0; d < 3; ++d) delta = H::div(delta, H::from(w.hi[d] - w.lo[d]));
          for_each_position(s, w, [&](int64_t at) { plane[at] = H::add(plane[at], delta); });
        });
      }
    });
  });
}

}  // namespace mlu::kernels
