#include "mlu_kernels/box.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../common/bad_index.h"
#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/verbose_call.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {

namespace {

using detail::BadIndex;
using detail::compute_t;
using detail::convert;
using detail::widen;

// ---- NMS ----

// Note [NMS as a suppression sweep]
// torchvision's loop compares each kept box with every later box not yet
// suppressed. Here the boxes are gathered in score order into columns and
// each kept box sweeps all later ones branch-free (suppressed |= iou > t),
// which the compiler vectorises; a box already suppressed stays so, so the
// kept set and its order are torchvision's. The IoU is computed in T with
// its order of operations. torchvision compares it in double; comparing in T
// with the largest T not above the threshold decides every T value the same
// way (v > bound exactly when double(v) > threshold, NaN never) and keeps the
// sweep in one lane width, as does the 32-bit suppression mask.
template <class T>
T largest_not_above(double threshold) {
  T bound = static_cast<T>(threshold);
  if (static_cast<double>(bound) > threshold) bound = std::nextafter(bound, -std::numeric_limits<T>::infinity());
  return bound;
}

template <class T>
int64_t nms_sorted(int64_t n, const T* boxes, const int64_t* order, double threshold, int64_t* keep) {
  using Mask = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  std::vector<T> x1(n), y1(n), x2(n), y2(n), area(n);
  for (int64_t i = 0; i < n; ++i) {
    const T* b = boxes + order[i] * 4;
    x1[i] = b[0];
    y1[i] = b[1];
    x2[i] = b[2];
    y2[i] = b[3];
    area[i] = (x2[i] - x1[i]) * (y2[i] - y1[i]);
  }
  const T bound = largest_not_above<T>(threshold);
  std::vector<Mask> suppressed(n, 0);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (suppressed[i]) continue;
    keep[kept++] = order[i];
    const T ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], iarea = area[i];
    for (int64_t j = i + 1; j < n; ++j) {
      const T w = std::max(T(0), std::min(ix2, x2[j]) - std::max(ix1, x1[j]));
      const T h = std::max(T(0), std::min(iy2, y2[j]) - std::max(iy1, y1[j]));
      const T inter = w * h;
      const T iou = inter / (iarea + area[j] - inter);
      suppressed[j] |= static_cast<Mask>(iou > bound);
    }
  }
  return kept;
}

// ---- RoI align ----

// One roi's geometry, in torchvision's order of operations (roi_align_kernel.cpp).
template <class T>
struct AlignRoi {
  int64_t batch_index;
  T start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
};

template <class S>
AlignRoi<compute_t<S>> align_roi(const RoiProblem& p, int64_t n) {
  using T = compute_t<S>;
  const S* r = static_cast<const S*>(p.roi_data) + n * 5;
  const T scale = static_cast<T>(p.spatial_scale);
  const T offset = p.aligned ? T(0.5) : T(0);
  AlignRoi<T> roi;
  roi.batch_index = static_cast<int64_t>(widen(r[0]));
  roi.start_w = widen(r[1]) * scale - offset;
  roi.start_h = widen(r[2]) * scale - offset;
  T roi_w = widen(r[3]) * scale - offset - roi.start_w;
  T roi_h = widen(r[4]) * scale - offset - roi.start_h;
  if (!p.aligned) {  // malformed rois are forced to 1 x 1
    roi_w = std::max(roi_w, T(1));
    roi_h = std::max(roi_h, T(1));
  }
  roi.bin_h = roi_h / static_cast<T>(p.pooled_height);
  roi.bin_w = roi_w / static_cast<T>(p.pooled_width);
  roi.grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(roi_h / p.pooled_height));
  roi.grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(roi_w / p.pooled_width));
  return roi;
}

// A sample's four neighbours (offsets in the plane) and weights; all zero
// outside [-1, H] x [-1, W] (NaN coordinates included).
template <class T>
struct Bilinear {
  int64_t at[4] = {0, 0, 0, 0};
  T w[4] = {0, 0, 0, 0};
  bool inside = false;
};

template <class T>
Bilinear<T> bilinear(int64_t height, int64_t width, T y, T x) {
  Bilinear<T> b;
  if (!(y >= -1.0 && y <= height && x >= -1.0 && x <= width)) return b;
  b.inside = true;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const T ly = y - static_cast<T>(y_low), lx = x - static_cast<T>(x_low);
  const T hy = T(1) - ly, hx = T(1) - lx;
  b.at[0] = y_low * width + x_low;
  b.at[1] = y_low * width + x_high;
  b.at[2] = y_high * width + x_low;
  b.at[3] = y_high * width + x_high;
  b.w[0] = hy * hx;
  b.w[1] = hy * lx;
  b.w[2] = ly * hx;
  b.w[3] = ly * lx;
  return b;
}

// Every sample of one roi, bin by bin (ph, pw), then iy, ix: the order of
// torchvision's sums.
template <class T>
void align_samples(const RoiProblem& p, const AlignRoi<T>& roi, std::vector<Bilinear<T>>& out) {
  out.clear();
  for (int64_t ph = 0; ph < p.pooled_height; ++ph) {
    for (int64_t pw = 0; pw < p.pooled_width; ++pw) {
      for (int64_t iy = 0; iy < roi.grid_h; ++iy) {
        const T y = roi.start_h + static_cast<T>(ph) * roi.bin_h +
                    static_cast<T>(iy + .5f) * roi.bin_h / static_cast<T>(roi.grid_h);
        for (int64_t ix = 0; ix < roi.grid_w; ++ix) {
          const T x = roi.start_w + static_cast<T>(pw) * roi.bin_w +
                      static_cast<T>(ix + .5f) * roi.bin_w / static_cast<T>(roi.grid_w);
          out.push_back(bilinear<T>(p.height, p.width, y, x));
        }
      }
    }
  }
}

// With `aligned`, a roi may have a negative size and so a negative grid, in
// which torchvision's loops sample nothing (though the product of two negative
// grid sides is positive).
template <class T>
int64_t samples_per_bin(const AlignRoi<T>& roi) {
  return std::max<int64_t>(roi.grid_h, 0) * std::max<int64_t>(roi.grid_w, 0);
}

template <class S>
void align_forward(const RoiProblem& p, const S* input, S* output, BadIndex& bad) {
  using T = compute_t<S>;
  const int64_t plane = p.height * p.width, bins = p.pooled_height * p.pooled_width;
  parallel_for(0, p.rois, 1, [&](int64_t begin, int64_t end) {
    std::vector<Bilinear<T>> samples;
    for (int64_t n = begin; n < end; ++n) {
      S* out = output + n * p.channels * bins;
      const AlignRoi<T> roi = align_roi<S>(p, n);
      if (roi.batch_index < 0 || roi.batch_index >= p.batch) {
        bad.report(roi.batch_index);
        std::fill(out, out + p.channels * bins, convert<S>(T(0)));
        continue;
      }
      align_samples(p, roi, samples);
      const int64_t per_bin = samples_per_bin(roi);
      const T count = static_cast<T>(std::max<int64_t>(roi.grid_h * roi.grid_w, 1));  // an empty grid gives 0
      for (int64_t c = 0; c < p.channels; ++c) {
        const S* in = input + (roi.batch_index * p.channels + c) * plane;
        const Bilinear<T>* s = samples.data();
        for (int64_t bin = 0; bin < bins; ++bin) {
          T sum = 0;
          for (int64_t k = 0; k < per_bin; ++k, ++s) {
            sum += s->w[0] * widen(in[s->at[0]]) + s->w[1] * widen(in[s->at[1]]) + s->w[2] * widen(in[s->at[2]]) +
                   s->w[3] * widen(in[s->at[3]]);
          }
          out[c * bins + bin] = convert<S>(sum / count);
        }
      }
    }
  });
}

// Note [RoI gradients by channel]
// Rois overlap, so their gradients meet in the input planes. Each thread owns
// a range of channels and walks every roi for them, in roi, bin, sample order:
// no two threads write one plane, and each plane receives its additions in
// torchvision's (single-threaded) order. A roi's samples are recomputed per
// channel range, not stored for all rois (K x bins x samples can be large).
// float and double planes add in place; 16-bit ones in a float copy.
template <class S, class PerRoi>
void by_channel(const RoiProblem& p, S* grad_input, PerRoi per_roi) {
  using T = compute_t<S>;
  const int64_t plane = p.height * p.width;
  parallel_for(0, p.channels, 1, [&](int64_t c_begin, int64_t c_end) {
    const int64_t width = c_end - c_begin;
    if constexpr (std::is_same_v<S, T>) {
      for (int64_t b = 0; b < p.batch; ++b) {
        std::fill(grad_input + (b * p.channels + c_begin) * plane, grad_input + (b * p.channels + c_end) * plane, T(0));
      }
      per_roi(c_begin, c_end, [&](int64_t b, int64_t c) { return grad_input + (b * p.channels + c) * plane; });
    } else {
      std::vector<T> planes(static_cast<size_t>(p.batch * width * plane), T(0));
      per_roi(c_begin, c_end, [&](int64_t b, int64_t c) { return planes.data() + (b * width + c - c_begin) * plane; });
      for (int64_t b = 0; b < p.batch; ++b) {
        const T* src = planes.data() + b * width * plane;
        S* dst = grad_input + (b * p.channels + c_begin) * plane;
        for (int64_t i = 0; i < width * plane; ++i) dst[i] = convert<S>(src[i]);
      }
    }
  });
}

template <class S>
void align_backward(const RoiProblem& p, const S* grad, S* grad_input, BadIndex& bad) {
  using T = compute_t<S>;
  const int64_t bins = p.pooled_height * p.pooled_width;
  by_channel<S>(p, grad_input, [&](int64_t c_begin, int64_t c_end, auto plane_of) {
    std::vector<Bilinear<T>> samples;
    for (int64_t n = 0; n < p.rois; ++n) {
      const AlignRoi<T> roi = align_roi<S>(p, n);
      if (roi.batch_index < 0 || roi.batch_index >= p.batch) {
        bad.report(roi.batch_index);
        continue;
      }
      align_samples(p, roi, samples);
      const int64_t per_bin = samples_per_bin(roi);
      const T count = static_cast<T>(roi.grid_h * roi.grid_w);
      for (int64_t c = c_begin; c < c_end; ++c) {
        T* plane = plane_of(roi.batch_index, c);
        const S* g = grad + (n * p.channels + c) * bins;
        const Bilinear<T>* s = samples.data();
        for (int64_t bin = 0; bin < bins; ++bin) {
          const T g_bin = widen(g[bin]);
          for (int64_t k = 0; k < per_bin; ++k, ++s) {
            if (!s->inside) continue;
            for (int q = 0; q < 4; ++q) plane[s->at[q]] += g_bin * s->w[q] / count;
          }
        }
      }
    }
  });
}

// ---- RoI pool ----

// C's round: half away from zero (torch.round rounds half to even).
template <class T>
int64_t round_half_away(T v) {
  return static_cast<int64_t>(std::round(v));
}

// One bin's clamped window [h0, h1) x [w0, w1) of roi n.
struct PoolBin {
  int64_t h0, h1, w0, w1;
  bool empty() const { return h1 <= h0 || w1 <= w0; }
};

template <class S>
int64_t pool_bins(const RoiProblem& p, int64_t n, std::vector<PoolBin>& out) {
  using T = compute_t<S>;
  const S* r = static_cast<const S*>(p.roi_data) + n * 5;
  const T scale = static_cast<T>(p.spatial_scale);
  const int64_t start_w = round_half_away(widen(r[1]) * scale), start_h = round_half_away(widen(r[2]) * scale);
  const int64_t end_w = round_half_away(widen(r[3]) * scale), end_h = round_half_away(widen(r[4]) * scale);
  const int64_t roi_w = std::max<int64_t>(end_w - start_w + 1, 1), roi_h = std::max<int64_t>(end_h - start_h + 1, 1);
  const T bin_h = static_cast<T>(roi_h) / static_cast<T>(p.pooled_height);
  const T bin_w = static_cast<T>(roi_w) / static_cast<T>(p.pooled_width);
  out.clear();
  for (int64_t ph = 0; ph < p.pooled_height; ++ph) {
    for (int64_t pw = 0; pw < p.pooled_width; ++pw) {
      PoolBin bin;
      bin.h0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<T>(ph) * bin_h)) + start_h, 0, p.height);
      bin.h1 =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<T>(ph + 1) * bin_h)) + start_h, 0, p.height);
      bin.w0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<T>(pw) * bin_w)) + start_w, 0, p.width);
      bin.w1 =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<T>(pw + 1) * bin_w)) + start_w, 0, p.width);
      out.push_back(bin);
    }
  }
  return static_cast<int64_t>(widen(r[0]));
}

template <class S>
void pool_forward(const RoiProblem& p, const S* input, S* output, int32_t* argmax, BadIndex& bad) {
  using T = compute_t<S>;
  const int64_t plane = p.height * p.width, bins = p.pooled_height * p.pooled_width;
  parallel_for(0, p.rois, 1, [&](int64_t begin, int64_t end) {
    std::vector<PoolBin> windows;
    for (int64_t n = begin; n < end; ++n) {
      S* out = output + n * p.channels * bins;
      int32_t* arg = argmax + n * p.channels * bins;
      const int64_t b = pool_bins<S>(p, n, windows);
      if (b < 0 || b >= p.batch) {
        bad.report(b);
        std::fill(out, out + p.channels * bins, convert<S>(T(0)));
        std::fill(arg, arg + p.channels * bins, -1);
        continue;
      }
      for (int64_t c = 0; c < p.channels; ++c) {
        const S* in = input + (b * p.channels + c) * plane;
        for (int64_t bin = 0; bin < bins; ++bin) {
          const PoolBin& win = windows[static_cast<size_t>(bin)];
          // torchvision starts from -FLT_MAX for every type: a bin of values <= -FLT_MAX (or NaN) gives
          // -FLT_MAX and argmax -1; an empty bin 0 and -1. The first maximum wins.
          T best = win.empty() ? T(0) : static_cast<T>(-FLT_MAX);
          int64_t best_at = -1;
          for (int64_t h = win.h0; h < win.h1; ++h) {
            for (int64_t w = win.w0; w < win.w1; ++w) {
              const T v = widen(in[h * p.width + w]);
              if (v > best) {
                best = v;
                best_at = h * p.width + w;
              }
            }
          }
          out[c * bins + bin] = convert<S>(best);
          arg[c * bins + bin] = static_cast<int32_t>(best_at);
        }
      }
    }
  });
}

template <class S>
void pool_backward(const RoiProblem& p, const S* grad, const int32_t* argmax, S* grad_input, BadIndex& bad) {
  using T = compute_t<S>;
  const int64_t plane = p.height * p.width, bins = p.pooled_height * p.pooled_width;
  by_channel<S>(p, grad_input, [&](int64_t c_begin, int64_t c_end, auto plane_of) {
    for (int64_t n = 0; n < p.rois; ++n) {
      const int64_t b = static_cast<int64_t>(widen(static_cast<const S*>(p.roi_data)[n * 5]));
      if (b < 0 || b >= p.batch) {
        bad.report(b);
        continue;
      }
      for (int64_t c = c_begin; c < c_end; ++c) {
        T* dst = plane_of(b, c);
        const S* g = grad + (n * p.channels + c) * bins;
        const int32_t* arg = argmax + (n * p.channels + c) * bins;
        for (int64_t bin = 0; bin < bins; ++bin) {
          if (arg[bin] < 0) continue;
          if (arg[bin] >= plane) {
            bad.report(arg[bin]);
            continue;
          }
          dst[arg[bin]] += widen(g[bin]);
        }
      }
    }
  });
}

void describe(detail::VerboseCall& call, const RoiProblem& p) {
  if (call) {
    call.describe(p.type, "K%lld C%lld H%lld W%lld bins%lldx%lld", detail::lld(p.rois), detail::lld(p.channels),
                  detail::lld(p.height), detail::lld(p.width), detail::lld(p.pooled_height),
                  detail::lld(p.pooled_width));
  }
}

}  // namespace

int64_t nms(ScalarType type, int64_t n, const void* boxes, const int64_t* order, double iou_threshold, int64_t* keep) {
  detail::VerboseCall call("nms");
  if (call) call.describe(type, "n%lld", detail::lld(n));
  if (type == ScalarType::Float64) {
    return nms_sorted(n, static_cast<const double*>(boxes), order, iou_threshold, keep);
  }
  return nms_sorted(n, static_cast<const float*>(boxes), order, iou_threshold, keep);
}

IndexCheck roi_align_forward(const RoiProblem& p, const void* input, void* output) {
  detail::VerboseCall call("roi_align_forward");
  describe(call, p);
  BadIndex bad;
  detail::dispatch_floating(p.type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    align_forward(p, static_cast<const S*>(input), static_cast<S*>(output), bad);
  });
  return bad.check();
}

IndexCheck roi_align_backward(const RoiProblem& p, const void* grad, void* grad_input) {
  detail::VerboseCall call("roi_align_backward");
  describe(call, p);
  BadIndex bad;
  detail::dispatch_floating(p.type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    align_backward(p, static_cast<const S*>(grad), static_cast<S*>(grad_input), bad);
  });
  return bad.check();
}

IndexCheck roi_pool_forward(const RoiProblem& p, const void* input, void* output, int32_t* argmax) {
  detail::VerboseCall call("roi_pool_forward");
  describe(call, p);
  BadIndex bad;
  detail::dispatch_floating(p.type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    pool_forward(p, static_cast<const S*>(input), static_cast<S*>(output), argmax, bad);
  });
  return bad.check();
}

IndexCheck roi_pool_backward(const RoiProblem& p, const void* grad, const int32_t* argmax, void* grad_input) {
  detail::VerboseCall call("roi_pool_backward");
  describe(call, p);
  BadIndex bad;
  detail::dispatch_floating(p.type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    pool_backward(p, static_cast<const S*>(grad), argmax, static_cast<S*>(grad_input), bad);
  });
  return bad.check();
}

}  // namespace mlu::kernels
