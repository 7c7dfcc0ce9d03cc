#include "mlu_kernels/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

// The taps of every output index of one dim: count per output, index and weight.
template <class A>
struct Taps {
  int count = 1;
  std::vector<int64_t> index;
  std::vector<A> weight;
};

// PyTorch's compute_scales_value / area_pixel_compute_scale /
// area_pixel_compute_source_index (UpSample.h).
template <class S>
S scales_value(double factor, int64_t in, int64_t out) {
  return factor > 0 ? static_cast<S>(1.0 / factor) : static_cast<S>(in) / static_cast<S>(out);
}

template <class A>
A area_scale(int64_t in, int64_t out, bool align_corners, double factor) {
  if (align_corners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  return scales_value<A>(factor, in, out);
}

template <class A>
A source_index(A scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<A>(o);
  const A src = scale * (static_cast<A>(o) + A(0.5)) - A(0.5);
  return (!cubic && src < A(0)) ? A(0) : src;
}

// PyTorch's guard_index_and_lambda: the floor (in float, as the CPU) and the fraction.
template <class A>
void floor_and_fraction(A real, int64_t in, int64_t& index, A& fraction) {
  index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
  fraction = std::min(std::max(real - static_cast<A>(index), A(0)), A(1));
}

// Keys' cubic convolution weights for fraction t, A = -0.75 (get_cubic_upsample_coefficients).
template <class A>
void cubic_weights(A t, A* w) {
  constexpr A kA = A(-0.75);
  const auto near = [](A x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  const auto far = [](A x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// Note [Interpolation weights in 16 bits]
// The CPU's generic upsampling kernel (upsample_generic_Nd_kernel_impl,
// taken for linear modes unless its channels-last kernel applies, and for
// bicubic) keeps its weights in tensors of the input's dtype: a linear
// fraction t is rounded to Float16 / BFloat16 and the other weight is
// 1 - t computed and rounded in that type; the four cubic weights are each
// computed in float and rounded. The sums stay in float. `round` is the
// rounding to the element type (identity where weights stay in float).
template <class A>
A keep(A weight) {
  return weight;
}

template <class A>
Taps<A> make_taps(ResampleMode mode, int64_t in, int64_t out, bool align_corners, double factor, A (*round)(A)) {
  Taps<A> taps;
  taps.count = mode == ResampleMode::Linear ? 2 : mode == ResampleMode::Cubic ? 4 : 1;
  taps.index.resize(static_cast<size_t>(out * taps.count));
  taps.weight.resize(static_cast<size_t>(out * taps.count));
  const float nearest_scale = scales_value<float>(factor, in, out);
  const A scale = area_scale<A>(in, out, align_corners, factor);
  for (int64_t o = 0; o < out; ++o) {
    int64_t* index = taps.index.data() + o * taps.count;
    A* weight = taps.weight.data() + o * taps.count;
    switch (mode) {
      case ResampleMode::Nearest:
        index[0] = out == in       ? o
                   : out == 2 * in ? o >> 1
                                   : std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * nearest_scale)), in - 1);
        weight[0] = 1;
        break;
      case ResampleMode::NearestExact:
        index[0] = std::min(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * nearest_scale)), in - 1);
        weight[0] = 1;
        break;
      case ResampleMode::Linear: {
        if (out == in) {
          index[0] = index[1] = o;
          weight[0] = 1;
          weight[1] = 0;
          break;
        }
        A t;
        floor_and_fraction(source_index(scale, o, align_corners, false), in, index[0], t);
        index[1] = index[0] + (index[0] < in - 1 ? 1 : 0);
        t = round(t);
        weight[0] = round(1 - t);
        weight[1] = t;
        break;
      }
      case ResampleMode::Cubic: {
        int64_t i;
        A t;
        floor_and_fraction(source_index(scale, o, align_corners, true), in, i, t);
        cubic_weights(t, weight);
        for (int j = 0; j < 4; ++j) {
          weight[j] = round(weight[j]);
          index[j] = std::clamp<int64_t>(i - 1 + j, 0, in - 1);
        }
        break;
      }
    }
  }
  return taps;
}

template <class A>
struct AllTaps {
  Taps<A> dim[3];
  explicit AllTaps(const ResampleShape& s, A (*round)(A) = keep<A>) {
    for (int d = 0; d < 3; ++d) {
      dim[d] = make_taps<A>(s.mode[d], s.in[d], s.out[d], s.align_corners, s.scale_factor[d], round);
    }
  }
};

// A weight rounded to T and back (Note [Interpolation weights in 16 bits]).
template <class T>
detail::compute_t<T> round_to(detail::compute_t<T> weight) {
  return detail::widen(detail::convert<T>(weight));
}

int64_t plane_in(const ResampleShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t plane_out(const ResampleShape& s) { return s.out[0] * s.out[1] * s.out[2]; }
int64_t grain(const ResampleShape& s) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_out(s), 1)); }

bool all_nearest(const ResampleShape& s) {
  for (ResampleMode m : s.mode) {
    if (m != ResampleMode::Nearest && m != ResampleMode::NearestExact) return false;
  }
  return true;
}

// Nearest in every dim: a gather of whole elements, any dtype.
void gather_nearest(const ResampleShape& s, size_t element, const char* in, char* out) {
  const AllTaps<float> taps(s);
  const int64_t pin = plane_in(s), pout = plane_out(s);
  parallel_for(0, s.planes, grain(s), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const char* src = in + p * pin * static_cast<int64_t>(element);
      char* dst = out + p * pout * static_cast<int64_t>(element);
      for (int64_t od = 0; od < s.out[0]; ++od) {
        for (int64_t oh = 0; oh < s.out[1]; ++oh) {
          const int64_t row = (taps.dim[0].index[od] * s.in[1] + taps.dim[1].index[oh]) * s.in[2];
          for (int64_t ow = 0; ow < s.out[2]; ++ow, dst += element) {
            std::memcpy(dst, src + (row + taps.dim[2].index[ow]) * static_cast<int64_t>(element), element);
          }
        }
      }
    }
  });
}

// The log line's problem (mlu_kernels/verbose.h): planes and the output's sizes.
void describe(detail::VerboseCall& call, const ResampleShape& s, ScalarType type) {
  call.describe(type, "planes%lld out%lldx%lldx%lld", detail::lld(s.planes), detail::lld(s.out[0]),
                detail::lld(s.out[1]), detail::lld(s.out[2]));
}

}  // namespace

bool resample_supports(const ResampleShape& shape, ScalarType type) {
  const bool floating = type == ScalarType::Float32 || type == ScalarType::Float64 || type == ScalarType::Float16 ||
                        type == ScalarType::BFloat16;
  return floating || all_nearest(shape);
}

void resample(const ResampleShape& s, ScalarType type, const void* input, void* output) {
  detail::VerboseCall call("resample");
  if (call) describe(call, s, type);
  if (all_nearest(s)) {
    gather_nearest(s, element_size(type), static_cast<const char*>(input), static_cast<char*>(output));
    return;
  }
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const AllTaps<A> taps(s, s.weights_in_element_type ? round_to<T> : keep<A>);
    const Taps<A>&td = taps.dim[0], &th = taps.dim[1], &tw = taps.dim[2];
    const T* in = static_cast<const T*>(input);
    T* out = static_cast<T*>(output);
    const int64_t pin = plane_in(s), pout = plane_out(s);
    parallel_for(0, s.planes, grain(s), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* x = in + p * pin;
        T* y = out + p * pout;
        for (int64_t od = 0; od < s.out[0]; ++od) {
          for (int64_t oh = 0; oh < s.out[1]; ++oh) {
            for (int64_t ow = 0; ow < s.out[2]; ++ow) {
              A value = 0;
              for (int a = 0; a < td.count; ++a) {
                A plane_value = 0;
                for (int b = 0; b < th.count; ++b) {
                  const T* row = x + (td.index[od * td.count + a] * s.in[1] + th.index[oh * th.count + b]) * s.in[2];
                  A row_value = 0;
                  for (int c = 0; c < tw.count; ++c) {
                    row_value += detail::convert<A>(row[tw.index[ow * tw.count + c]]) * tw.weight[ow * tw.count + c];
                  }
                  plane_value += row_value * th.weight[oh * th.count + b];
                }
                value += plane_value * td.weight[od * td.count + a];
              }
              *y++ = detail::convert<T>(value);
            }
          }
        }
      }
    });
  });
}

void resample_backward(const ResampleShape& s, ScalarType type, const void* grad_output, void* grad_input) {
  detail::VerboseCall call("resample_backward");
  if (call) describe(call, s, type);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const AllTaps<A> taps(s);
    const Taps<A>&td = taps.dim[0], &th = taps.dim[1], &tw = taps.dim[2];
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    const int64_t pin = plane_in(s), pout = plane_out(s);
    parallel_for(0, s.planes, grain(s), [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(pin));
      for (int64_t p = lo; p < hi; ++p) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* g = go + p * pout;
        for (int64_t od = 0; od < s.out[0]; ++od) {
          for (int64_t oh = 0; oh < s.out[1]; ++oh) {
            for (int64_t ow = 0; ow < s.out[2]; ++ow) {
              const A value = detail::convert<A>(*g++);
              for (int a = 0; a < td.count; ++a) {
                const A wd = td.weight[od * td.count + a];
                for (int b = 0; b < th.count; ++b) {
                  const A wdh = wd * th.weight[oh * th.count + b];
                  const int64_t row = (td.index[od * td.count + a] * s.in[1] + th.index[oh * th.count + b]) * s.in[2];
                  for (int c = 0; c < tw.count; ++c) {
                    acc[static_cast<size_t>(row + tw.index[ow * tw.count + c])] += value * (wdh * tw.weight[ow * tw.count + c]);
                  }
                }
              }
            }
          }
        }
        T* plane = gi + p * pin;
        for (int64_t i = 0; i < pin; ++i) plane[i] = detail::convert<T>(acc[static_cast<size_t>(i)]);
      }
    });
  });
}

}  // namespace mlu::kernels
