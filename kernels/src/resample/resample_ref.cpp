// The scalar references of resample.h: for each output element, the taps of
// each dim computed from PyTorch's formulas for that output index (UpSample.h:
// compute_scales_value, area_pixel_compute_scale / _source_index,
// guard_index_and_lambda, nearest_idx / nearest_exact_idx,
// get_cubic_upsample_coefficients), then the sum over every tap combination
// in double. The index math is part of the definition, so it runs as the CPU
// runs it: in float for nearest, in the compute type A for linear / cubic.
// The backward op gathers, for each input element, every output's weight on
// it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/resample.h"

namespace mlu::kernels {
namespace {

constexpr int kMaxTaps = 4;

// The taps of output index o of one dim: count, input indices, weights.
struct DimTaps {
  int count = 1;
  int64_t index[kMaxTaps] = {};
  double weight[kMaxTaps] = {};
};

template <class A>
DimTaps dim_taps(ResampleMode mode, int64_t in, int64_t out, bool align_corners, double factor, int64_t o) {
  DimTaps t;
  // compute_scales_value<float> for nearest; area_pixel_compute_scale<A> otherwise.
  const float nearest_scale = factor > 0 ? static_cast<float>(1.0 / factor) : static_cast<float>(in) / out;
  const A scale = align_corners ? (out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0))
                                : (factor > 0 ? static_cast<A>(1.0 / factor) : static_cast<A>(in) / static_cast<A>(out));
  switch (mode) {
    case ResampleMode::Nearest:
      t.index[0] = out == in       ? o
                   : out == 2 * in ? o / 2
                                   : std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * nearest_scale)), in - 1);
      t.weight[0] = 1;
      return t;
    case ResampleMode::NearestExact:
      t.index[0] = std::min(static_cast<int64_t>(std::floor(static_cast<float>((o + 0.5) * nearest_scale))), in - 1);
      t.weight[0] = 1;
      return t;
    case ResampleMode::Linear:
    case ResampleMode::Cubic: {
      const bool cubic = mode == ResampleMode::Cubic;
      t.count = cubic ? 4 : 2;
      if (!cubic && out == in) {  // compute_source_index_and_lambda: a copy
        t.index[0] = t.index[1] = o;
        t.weight[0] = 1;
        t.weight[1] = 0;
        return t;
      }
      A real = align_corners ? scale * static_cast<A>(o) : scale * (static_cast<A>(o) + A(0.5)) - A(0.5);
      if (!cubic && !align_corners && real < A(0)) real = 0;
      // guard_index_and_lambda: floorf, and the fraction clamped to [0, 1].
      const int64_t i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
      const A lambda = std::min(std::max(real - static_cast<A>(i), A(0)), A(1));
      if (!cubic) {
        t.index[0] = i;
        t.index[1] = i + (i < in - 1 ? 1 : 0);
        t.weight[0] = static_cast<double>(A(1) - lambda);
        t.weight[1] = static_cast<double>(lambda);
        return t;
      }
      // get_cubic_upsample_coefficients with A = -0.75, in the compute type.
      const A a = A(-0.75);
      const auto conv1 = [a](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
      const auto conv2 = [a](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
      const A x1 = lambda, x2 = A(1) - lambda;
      const A w[4] = {conv2(x1 + A(1)), conv1(x1), conv1(x2), conv2(x2 + A(1))};
      for (int j = 0; j < 4; ++j) {
        t.index[j] = std::clamp<int64_t>(i - 1 + j, 0, in - 1);
        t.weight[j] = static_cast<double>(w[j]);
      }
      return t;
    }
  }
  return t;
}

template <class A>
DimTaps taps_of(const ResampleShape& s, int d, int64_t o) {
  return dim_taps<A>(s.mode[d], s.in[d], s.out[d], s.align_corners, s.scale_factor[d], o);
}

int64_t plane_in(const ResampleShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t plane_out(const ResampleShape& s) { return s.out[0] * s.out[1] * s.out[2]; }

bool all_nearest(const ResampleShape& s) {
  for (ResampleMode m : s.mode) {
    if (m != ResampleMode::Nearest && m != ResampleMode::NearestExact) return false;
  }
  return true;
}

// Calls visit(flat input index, weight) for every tap combination of output
// (od, oh, ow), outermost dim first.
template <class A, class Visit>
void for_each_tap(const ResampleShape& s, int64_t od, int64_t oh, int64_t ow, Visit visit) {
  const DimTaps td = taps_of<A>(s, 0, od), th = taps_of<A>(s, 1, oh), tw = taps_of<A>(s, 2, ow);
  for (int a = 0; a < td.count; ++a) {
    for (int b = 0; b < th.count; ++b) {
      for (int c = 0; c < tw.count; ++c) {
        visit((td.index[a] * s.in[1] + th.index[b]) * s.in[2] + tw.index[c], td.weight[a] * th.weight[b] * tw.weight[c]);
      }
    }
  }
}

}  // namespace

void resample_ref(const ResampleShape& s, ScalarType type, const void* input, void* output) {
  const int64_t pin = plane_in(s), pout = plane_out(s);
  if (all_nearest(s)) {  // any dtype: each output copies its one input element
    const int64_t size = static_cast<int64_t>(element_size(type));
    const char* in = static_cast<const char*>(input);
    char* out = static_cast<char*>(output);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t o = 0; o < pout; ++o) {
        const int64_t ow = o % s.out[2], oh = (o / s.out[2]) % s.out[1], od = o / (s.out[2] * s.out[1]);
        for_each_tap<float>(s, od, oh, ow, [&](int64_t at, double) {
          std::memcpy(out + (p * pout + o) * size, in + (p * pin + at) * size, static_cast<size_t>(size));
        });
      }
    }
    return;
  }
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t o = 0; o < pout; ++o) {
        const int64_t ow = o % s.out[2], oh = (o / s.out[2]) % s.out[1], od = o / (s.out[2] * s.out[1]);
        double sum = 0;
        for_each_tap<A>(s, od, oh, ow, [&](int64_t at, double w) {
          sum += static_cast<double>(detail::widen(in[p * pin + at])) * w;
        });
        out[p * pout + o] = detail::convert<T>(sum);
      }
    }
  });
}

void resample_backward_ref(const ResampleShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t pin = plane_in(s), pout = plane_out(s);
    for (int64_t p = 0; p < s.planes; ++p) {
      for (int64_t i = 0; i < pin; ++i) {
        double sum = 0;
        for (int64_t o = 0; o < pout; ++o) {
          const int64_t ow = o % s.out[2], oh = (o / s.out[2]) % s.out[1], od = o / (s.out[2] * s.out[1]);
          for_each_tap<A>(s, od, oh, ow, [&](int64_t at, double w) {
            if (at == i) sum += static_cast<double>(detail::widen(go[p * pout + o])) * w;
          });
        }
        gi[p * pin + i] = detail::convert<T>(sum);
      }
    }
  });
}

}  // namespace mlu::kernels
