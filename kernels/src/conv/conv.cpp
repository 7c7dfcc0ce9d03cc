#include "mlu_kernels/conv.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/scratch.h"
#include "mlu_kernels/gemm.h"
#include "conv_dnnl.h"
#include "geometry.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

using detail::Geometry;
using detail::geometry;

// Output positions o in [0, n) whose input position o * stride + offset lies
// in [0, size): [first, last).
void valid_range(int64_t n, int64_t stride, int64_t offset, int64_t size, int64_t& first, int64_t& last) {
  first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  last = size - offset <= 0 ? 0 : std::min(n, (size - offset + stride - 1) / stride);
  first = std::min(first, last);
}

// Walks the output positions of kernel tap `tap` along each output row (the
// last dim): run(l, at, count) for a run of `count` positions from l whose
// input elements start at plane index `at` (stride[2] apart), zero(l, count)
// for positions whose input lies in the padding.
template <class Run, class Zero>
void walk_row(const Geometry& g, int64_t tap, Run run, Zero zero) {
  const int64_t kw = tap % g.kernel[2], kh = (tap / g.kernel[2]) % g.kernel[1], kd = tap / (g.kernel[2] * g.kernel[1]);
  const int64_t off_d = kd * g.dilation[0] - g.padding[0], off_h = kh * g.dilation[1] - g.padding[1],
                off_w = kw * g.dilation[2] - g.padding[2];
  int64_t w_first, w_last;
  valid_range(g.out[2], g.stride[2], off_w, g.in[2], w_first, w_last);
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t id = od * g.stride[0] + off_d;
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t ih = oh * g.stride[1] + off_h;
      const int64_t l = (od * g.out[1] + oh) * g.out[2];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
        zero(l, g.out[2]);
        continue;
      }
      zero(l, w_first);
      run(l + w_first, (id * g.in[1] + ih) * g.in[2] + w_first * g.stride[2] + off_w, w_last - w_first);
      zero(l + w_last, g.out[2] - w_last);
    }
  }
}

// Unfolds `channels` channels of one sample (planes of in_plane elements at
// in) into patch rows c * taps + tap, row r at col + r * row_stride, L
// elements each. E: the element's bits (copies only).
template <class E>
void im2col(const Geometry& g, int64_t channels, const E* in, E* col, int64_t row_stride) {
  const int64_t rows = channels * g.taps;
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(g.out_plane, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const E* plane = in + (r / g.taps) * g.in_plane;
      E* dst = col + r * row_stride;
      const int64_t sw = g.stride[2];
      walk_row(
          g, r % g.taps,
          [&](int64_t l, int64_t at, int64_t count) {
            if (sw == 1) {
              std::memcpy(dst + l, plane + at, static_cast<size_t>(count) * sizeof(E));
            } else {
              for (int64_t i = 0; i < count; ++i) dst[l + i] = plane[at + i * sw];
            }
          },
          [&](int64_t l, int64_t count) { std::fill_n(dst + l, count, E{}); });
    }
  });
}

// The adjoint: adds patch rows (dtype T at col, row stride L) into `channels`
// planes of A at acc (already zeroed). Threads split the channels, so no two
// write one plane.
template <class T, class A, class Add = std::plus<A>>
void col2im(const Geometry& g, int64_t channels, const T* col, A* acc, Add add = {}) {
  parallel_for(0, channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(g.taps * g.out_plane, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) {
                   A* plane = acc + c * g.in_plane;
                   for (int64_t tap = 0; tap < g.taps; ++tap) {
                     const T* src = col + (c * g.taps + tap) * g.out_plane;
                     const int64_t sw = g.stride[2];
                     walk_row(
                         g, tap,
                         [&](int64_t l, int64_t at, int64_t count) {
                           for (int64_t i = 0; i < count; ++i) {
                             A& to = plane[at + i * sw];
                             to = add(to, detail::convert<A>(src[l + i]));
                           }
                         },
                         [](int64_t, int64_t) {});
                   }
                 }
               });
}

// Per-thread scratch, grown as needed and kept (one conv's patches can be tens
// of MB; allocating them per call would page-fault through them every time).
// Tag tells apart two buffers of one element type.
template <class E, class Tag = void>
E* scratch(int64_t n) {
  thread_local std::vector<E> buffer;
  return detail::grow(buffer, n);
}

// Outputs with fewer positions than this per sample are computed by one
// GEMM over all samples (Note [Convolution batches]).
constexpr int64_t kWideBelow = 1024;

}  // namespace

void conv_forward(const ConvShape& s, ScalarType type, const void* input, const void* weight, const void* bias,
                  void* output) {
  detail::VerboseCall call("conv_forward");
  detail::describe_conv(call, s, type, "nchw");
  if (detail::dnnl_conv_forward(s, type, false, input, weight, bias, output)) return call.path("dnnl nchw");
  const Geometry g = geometry(s);
  detail::dispatch_real(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using E = detail::bits_t<T>;
    const int64_t rows = g.group_in * g.taps, L = g.out_plane;
    const int64_t patch_size = s.in_channels * g.taps * L;
    // Note [Convolution batches]: without groups, small outputs (late
    // layers: 14x14, 7x7) are one wide GEMM over every sample's positions
    // (a 512 x 49 product per sample wastes most of a register block; 512 x
    // 392 does not); larger ones unfold every sample and run one GEMM batched
    // over the samples. With groups, sample by sample, batched over groups.
    const bool by_sample = s.groups > 1;
    if (!by_sample && L < kWideBelow) {
      // Small outputs: one wide GEMM over all samples' positions (the
      // patches of sample n at columns [n L, (n + 1) L)), then the result
      // moved from [C_out][N][L] to [N][C_out][L].
      const int64_t depth = s.batch * L;
      E* wide_col = scratch<E>(rows * depth);
      for (int64_t n = 0; n < s.batch; ++n) {
        im2col(g, s.in_channels, static_cast<const E*>(input) + n * s.in_channels * g.in_plane, wide_col + n * L,
               depth);
      }
      T* wide = scratch<T, struct WideOutput>(s.out_channels * depth);
      if (bias != nullptr) {
        const T* b = static_cast<const T*>(bias);
        for (int64_t o = 0; o < s.out_channels; ++o) std::fill_n(wide + o * depth, depth, b[o]);
      }
      GemmArgs args{};
      args.dtype = type;
      args.m = s.out_channels;
      args.n = depth;
      args.k = rows;
      args.alpha = 1;
      args.beta = bias != nullptr ? 1 : 0;
      args.a = {const_cast<void*>(weight), rows, 1};
      args.b = {wide_col, depth, 1};
      args.c = {wide, depth, 1};
      gemm(args);
      T* out = static_cast<T*>(output);
      parallel_for(0, s.batch * s.out_channels, std::max<int64_t>(1, 16384 / L), [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const int64_t n = r / s.out_channels, o = r % s.out_channels;
          std::copy_n(wide + o * depth + n * L, L, out + r * L);
        }
      });
      return;
    }
    const int64_t unfolded = by_sample ? 1 : s.batch;
    const E* patches = static_cast<const E*>(input);
    int64_t patch_stride = s.in_channels * g.in_plane;  // between samples' patches
    E* col = nullptr;
    if (!g.identity) {
      col = scratch<E>(unfolded * patch_size);
      patch_stride = patch_size;
    }
    if (bias != nullptr) {
      const T* b = static_cast<const T*>(bias);
      T* out = static_cast<T*>(output);
      for (int64_t n = 0; n < s.batch; ++n) {
        for (int64_t o = 0; o < s.out_channels; ++o) std::fill_n(out + (n * s.out_channels + o) * L, L, b[o]);
      }
    }
    for (int64_t n0 = 0; n0 < s.batch; n0 += unfolded) {
      const E* in = static_cast<const E*>(input) + n0 * s.in_channels * g.in_plane;
      if (col != nullptr) {
        for (int64_t i = 0; i < unfolded; ++i) im2col(g, s.in_channels, in + i * s.in_channels * g.in_plane, col + i * patch_size, L);
        patches = col;
      } else {
        patches = in;
      }
      // out[n][g] (group_out x L) = weight[g] (group_out x rows) x patches[n][g] (rows x L).
      GemmArgs args{};
      args.dtype = type;
      args.m = g.group_out;
      args.n = L;
      args.k = rows;
      args.alpha = 1;
      args.beta = bias != nullptr ? 1 : 0;
      args.a = {const_cast<void*>(weight), rows, 1};
      args.b = {const_cast<E*>(patches), L, 1};
      args.c = {static_cast<T*>(output) + n0 * s.out_channels * L, L, 1};
      if (by_sample) {
        args.batch = s.groups;
        args.batch_stride_a = g.group_out * rows;
        args.batch_stride_b = rows * L;
        args.batch_stride_c = g.group_out * L;
      } else {
        args.batch = s.batch;
        args.batch_stride_a = 0;
        args.batch_stride_b = patch_stride;
        args.batch_stride_c = s.out_channels * L;
      }
      gemm(args);
    }
  });
}

void conv_backward_input(const ConvShape& s, ScalarType type, const void* grad_output, const void* weight,
                         const void* bias, void* grad_input) {
  detail::VerboseCall call("conv_backward_input");
  detail::describe_conv(call, s, type, "nchw");
  if (detail::dnnl_conv_backward_input(s, type, false, grad_output, weight, bias, grad_input)) {
    return call.path("dnnl nchw");
  }
  const Geometry g = geometry(s);
  detail::dispatch_real(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const int64_t rows = g.group_in * g.taps, L = g.out_plane;
    for (int64_t n = 0; n < s.batch; ++n) {
      const T* gout = static_cast<const T*>(grad_output) + n * s.out_channels * L;
      T* gin = static_cast<T*>(grad_input) + n * s.in_channels * g.in_plane;
      // Per group: patches[g] (rows x L) = weight[g]^T (rows x group_out) x gout[g] (group_out x L);
      // for the identity unfolding (and no bias to add) the patches are grad_input itself.
      const bool direct = g.identity && bias == nullptr;
      // The patches in A (float for Float16/BFloat16: summed before rounding).
      A* col = direct ? reinterpret_cast<A*>(gin) : scratch<A>(s.in_channels * g.taps * L);
      GemmArgs args{};
      args.dtype = type;
      args.m = rows;
      args.n = L;
      args.k = g.group_out;
      args.alpha = 1;
      args.beta = 0;
      args.a = {const_cast<void*>(weight), 1, rows};
      args.b = {const_cast<T*>(gout), L, 1};
      args.c = {direct ? static_cast<void*>(gin) : static_cast<void*>(col), L, 1};
      args.float_c = !direct && !std::is_same_v<T, A>;
      args.batch = s.groups;
      args.batch_stride_a = g.group_out * rows;
      args.batch_stride_b = g.group_out * L;
      args.batch_stride_c = rows * L;
      gemm(args);
      if (direct) continue;
      // Sums of overlapping patches (and the bias) in A: for Float16 and
      // BFloat16 in a float plane, rounded once.
      A* acc = nullptr;
      if constexpr (std::is_same_v<T, A>) {
        acc = gin;
      } else {
        acc = scratch<A, struct Plane>(s.in_channels * g.in_plane);
      }
      for (int64_t c = 0; c < s.in_channels; ++c) {
        const A start = bias == nullptr ? A(0) : detail::convert<A>(static_cast<const T*>(bias)[c]);
        std::fill_n(acc + c * g.in_plane, g.in_plane, start);
      }
      col2im<A, A>(g, s.in_channels, col, acc);
      if constexpr (!std::is_same_v<T, A>) {
        for (int64_t i = 0; i < s.in_channels * g.in_plane; ++i) gin[i] = detail::convert<T>(acc[i]);
      }
    }
  });
}

// Note [16-bit transposed convolution as the CPU sums it]
// The CPU runs a Float16 / BFloat16 transposed convolution one of two ways
// (the glue picks the TransposedSums16 as ConvParams::use_mkldnn does):
// - oneDNN's deconvolution: per output element, for each kernel position in
//   increasing order, a float dot product over the input channels in
//   vdpbf16ps's pair order (channel 1 then 0, 3 then 2, ...; an odd last
//   one alone), added to a float sum from 0; then the bias in float and one
//   rounding.
// - slow_conv_transpose2d/3d: columns = weight^T x input, a float sum over
//   the input channels (sequential, or in pair order where its BFloat16 gemm
//   goes to oneDNN), rounded to the 16-bit type; col2im adds them into a
//   zeroed output in the 16-bit type, kernel positions in increasing order,
//   every add rounded; then the bias, one more rounding.
// Both are the columns-then-col2im algorithm below with the channel order,
// the columns' rounding and the adds' rounding chosen; the GEMM sums its
// depth in order from 0 and the products of 16-bit values are exact in
// float, so its sums are the CPU's. Measured against torch 2.13 on op_db's
// samples and random shapes (tests/test_conv.py).
void conv_transpose_16bit(const ConvShape& s, ScalarType type, TransposedSums16 sums, const void* input,
                          const void* weight, const void* bias, void* output) {
  detail::VerboseCall call("conv_transpose_16bit");
  detail::describe_conv(call, s, type, "nchw");
  const Geometry g = geometry(s);
  const bool pairs = sums != TransposedSums16::slow;
  const bool rounded = sums != TransposedSums16::onednn;
  const auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Here s describes the regular convolution from `output` to `input`:
    // its out_channels are the input's channels, summed in groups of K.
    const int64_t rows = g.group_in * g.taps, L = g.out_plane, K = g.group_out;
    const auto source_channel = [&](int64_t c) {  // the channel summed c-th within its group
      const int64_t p = c % K, base = c - p;
      if (!pairs) return c;
      return base + (p % 2 == 0 ? (p + 1 < K ? p + 1 : p) : p - 1);
    };
    std::vector<T> w(static_cast<size_t>(s.out_channels * rows));
    for (int64_t c = 0; c < s.out_channels; ++c) {
      std::copy_n(static_cast<const T*>(weight) + source_channel(c) * rows, rows, w.data() + c * rows);
    }
    std::vector<T> x(static_cast<size_t>(s.out_channels * L));
    const auto r = [](float v) { return detail::convert<float>(detail::convert<T>(v)); };
    const T* b = static_cast<const T*>(bias);
    for (int64_t n = 0; n < s.batch; ++n) {
      const T* xn = static_cast<const T*>(input) + n * s.out_channels * L;
      for (int64_t c = 0; c < s.out_channels; ++c) std::copy_n(xn + source_channel(c) * L, L, x.data() + c * L);
      float* col = scratch<float>(s.in_channels * g.taps * L);
      GemmArgs args{};
      args.dtype = type;
      args.m = rows;
      args.n = L;
      args.k = K;
      args.alpha = 1;
      args.beta = 0;
      args.a = {w.data(), 1, rows};
      args.b = {x.data(), L, 1};
      args.c = {col, L, 1};
      args.float_c = true;
      args.batch = s.groups;
      args.batch_stride_a = K * rows;
      args.batch_stride_b = K * L;
      args.batch_stride_c = rows * L;
      gemm(args);
      const int64_t planes = s.in_channels * g.in_plane;
      float* acc = scratch<float, struct Plane>(planes);
      std::fill_n(acc, planes, 0.0f);
      // Elementwise steps split over the threads by channels, like col2im.
      const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(g.taps * L, 1));
      if (rounded) {
        parallel_for(0, s.in_channels, grain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo * g.taps * L; i < hi * g.taps * L; ++i) col[i] = r(col[i]);
        });
        col2im<float, float>(g, s.in_channels, col, acc, [&](float sum, float v) { return r(sum + v); });
      } else {
        col2im<float, float>(g, s.in_channels, col, acc);
      }
      T* out = static_cast<T*>(output) + n * planes;
      parallel_for(0, s.in_channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(g.in_plane, 1)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t c = lo; c < hi; ++c) {
                       const float bias_c = b == nullptr ? 0.0f : detail::convert<float>(b[c]);
                       const float* from = acc + c * g.in_plane;
                       T* to = out + c * g.in_plane;
                       for (int64_t i = 0; i < g.in_plane; ++i) {
                         to[i] = detail::convert<T>(b == nullptr ? from[i] : from[i] + bias_c);
                       }
                     }
                   });
    }
  };
  if (type == ScalarType::Float16) {
    run(std::type_identity<Half>{});
  } else {
    run(std::type_identity<BFloat16>{});
  }
}

void conv_backward_weight(const ConvShape& s, ScalarType type, const void* grad_output, const void* input,
                          void* grad_weight, void* grad_bias) {
  detail::VerboseCall call("conv_backward_weight");
  detail::describe_conv(call, s, type, "nchw");
  if (detail::dnnl_conv_backward_weight(s, type, false, grad_output, input, grad_weight, grad_bias)) {
    return call.path("dnnl nchw");
  }
  const Geometry g = geometry(s);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using E = detail::bits_t<T>;
    const int64_t rows = g.group_in * g.taps, L = g.out_plane, depth = s.batch * L;
    // Patches of every sample side by side: row r holds sample n's L values at
    // r * depth + n * L; grad_output regrouped by channel, [C_out][N][L].
    E* col = scratch<E>(s.in_channels * g.taps * depth);
    std::vector<T> regrouped(static_cast<size_t>(s.out_channels * depth));
    T* gout = regrouped.data();
    for (int64_t n = 0; n < s.batch; ++n) {
      const E* in = static_cast<const E*>(input) + n * s.in_channels * g.in_plane;
      im2col(g, s.in_channels, in, col + n * L, depth);
      const T* src = static_cast<const T*>(grad_output) + n * s.out_channels * L;
      for (int64_t o = 0; o < s.out_channels; ++o) std::copy_n(src + o * L, L, gout + o * depth + n * L);
    }
    // Per group: grad_weight[g] (group_out x rows) = gout[g] (group_out x depth) x patches[g]^T (depth x rows).
    GemmArgs args{};
    args.dtype = type;
    args.m = g.group_out;
    args.n = rows;
    args.k = depth;
    args.alpha = 1;
    args.beta = 0;
    args.a = {gout, depth, 1};
    args.b = {col, 1, depth};
    args.c = {grad_weight, rows, 1};
    args.batch = s.groups;
    args.batch_stride_a = g.group_out * depth;
    args.batch_stride_b = rows * depth;
    args.batch_stride_c = g.group_out * rows;
    gemm(args);
    if (grad_bias != nullptr) {
      using A = detail::compute_t<T>;
      T* gb = static_cast<T*>(grad_bias);
      parallel_for(0, s.out_channels, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o) {
          double sum = 0;
          for (int64_t i = 0; i < depth; ++i) sum += static_cast<double>(detail::convert<A>(gout[o * depth + i]));
          gb[o] = detail::convert<T>(static_cast<A>(sum));
        }
      });
    }
  });
}

// ---- references ------------------------------------------------------------------------------

void unfold(const ConvShape& s, ScalarType type, const void* input, void* columns) {
  const Geometry g = geometry(s);
  const int64_t rows = s.in_channels * g.taps;
  detail::dispatch_bits(element_size(type), [&](auto tag) {
    using E = typename decltype(tag)::type;
    for (int64_t n = 0; n < s.batch; ++n) {
      im2col(g, s.in_channels, static_cast<const E*>(input) + n * s.in_channels * g.in_plane,
             static_cast<E*>(columns) + n * rows * g.out_plane, g.out_plane);
    }
  });
}

void fold(const ConvShape& s, ScalarType type, const void* columns, void* output) {
  const Geometry g = geometry(s);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    for (int64_t n = 0; n < s.batch; ++n) {
      const T* col = static_cast<const T*>(columns) + n * s.in_channels * g.taps * g.out_plane;
      T* out = static_cast<T*>(output) + n * s.in_channels * g.in_plane;
      A* acc = nullptr;
      if constexpr (std::is_same_v<T, A>) {
        acc = out;
      } else {
        acc = scratch<A, struct Plane>(s.in_channels * g.in_plane);
      }
      std::fill_n(acc, s.in_channels * g.in_plane, A(0));
      col2im<T, A>(g, s.in_channels, col, acc);
      if constexpr (!std::is_same_v<T, A>) {
        for (int64_t i = 0; i < s.in_channels * g.in_plane; ++i) out[i] = detail::convert<T>(acc[i]);
      }
    }
  });
}

namespace {

// Calls f(n, o, out_index, in_index, weight_index) for every (output element,
// kernel tap, input channel of its group) whose input position is inside.
template <class F>
void for_each_product(const ConvShape& s, F&& f) {
  const Geometry g = geometry(s);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t o = 0; o < s.out_channels; ++o) {
      const int64_t group = o / g.group_out;
      for (int64_t l = 0; l < g.out_plane; ++l) {
        const int64_t od = l / (g.out[1] * g.out[2]), oh = (l / g.out[2]) % g.out[1], ow = l % g.out[2];
        const int64_t out_index = (n * s.out_channels + o) * g.out_plane + l;
        for (int64_t ci = 0; ci < g.group_in; ++ci) {
          const int64_t c = group * g.group_in + ci;
          for (int64_t tap = 0; tap < g.taps; ++tap) {
            const int64_t kw = tap % g.kernel[2], kh = (tap / g.kernel[2]) % g.kernel[1],
                          kd = tap / (g.kernel[2] * g.kernel[1]);
            const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
            const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
            const int64_t iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
            const int64_t in_index = (n * s.in_channels + c) * g.in_plane + (id * g.in[1] + ih) * g.in[2] + iw;
            const int64_t w_index = (o * g.group_in + ci) * g.taps + tap;
            f(out_index, in_index, w_index);
          }
        }
      }
    }
  }
}

}  // namespace

void conv_forward_ref(const ConvShape& s, ScalarType type, const void* input, const void* weight, const void* bias,
                      void* output) {
  const Geometry g = geometry(s);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(input);
    const T* w = static_cast<const T*>(weight);
    const int64_t total = s.batch * s.out_channels * g.out_plane;
    std::vector<long double> acc(static_cast<size_t>(total), 0.0L);
    for_each_product(s, [&](int64_t out, int64_t i, int64_t k) {
      acc[out] += static_cast<long double>(detail::widen(in[i])) * detail::widen(w[k]);
    });
    T* o = static_cast<T*>(output);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t channel = (i / g.out_plane) % s.out_channels;
      const long double b = bias == nullptr ? 0.0L : detail::widen(static_cast<const T*>(bias)[channel]);
      o[i] = detail::convert<T>(static_cast<double>(acc[i] + b));
    }
  });
}

void conv_backward_input_ref(const ConvShape& s, ScalarType type, const void* grad_output, const void* weight,
                             const void* bias, void* grad_input) {
  const Geometry g = geometry(s);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = static_cast<const T*>(grad_output);
    const T* w = static_cast<const T*>(weight);
    const int64_t total = s.batch * s.in_channels * g.in_plane;
    std::vector<long double> acc(static_cast<size_t>(total), 0.0L);
    for_each_product(s, [&](int64_t out, int64_t i, int64_t k) {
      acc[i] += static_cast<long double>(detail::widen(go[out])) * detail::widen(w[k]);
    });
    T* gi = static_cast<T*>(grad_input);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t channel = (i / g.in_plane) % s.in_channels;
      const long double b = bias == nullptr ? 0.0L : detail::widen(static_cast<const T*>(bias)[channel]);
      gi[i] = detail::convert<T>(static_cast<double>(acc[i] + b));
    }
  });
}

void conv_backward_weight_ref(const ConvShape& s, ScalarType type, const void* grad_output, const void* input,
                              void* grad_weight, void* grad_bias) {
  const Geometry g = geometry(s);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = static_cast<const T*>(grad_output);
    const T* in = static_cast<const T*>(input);
    const int64_t total = s.out_channels * g.group_in * g.taps;
    std::vector<long double> acc(static_cast<size_t>(total), 0.0L);
    for_each_product(s, [&](int64_t out, int64_t i, int64_t k) {
      acc[k] += static_cast<long double>(detail::widen(go[out])) * detail::widen(in[i]);
    });
    T* gw = static_cast<T*>(grad_weight);
    for (int64_t i = 0; i < total; ++i) gw[i] = detail::convert<T>(static_cast<double>(acc[i]));
    if (grad_bias != nullptr) {
      T* gb = static_cast<T*>(grad_bias);
      for (int64_t o = 0; o < s.out_channels; ++o) {
        long double sum = 0;
        for (int64_t n = 0; n < s.batch; ++n) {
          for (int64_t l = 0; l < g.out_plane; ++l) sum += detail::widen(go[(n * s.out_channels + o) * g.out_plane + l]);
        }
        gb[o] = detail::convert<T>(static_cast<double>(sum));
      }
    }
  });
}

}  // namespace mlu::kernels
