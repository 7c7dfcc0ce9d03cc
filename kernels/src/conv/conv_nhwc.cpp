// Channels-last convolutions (conv.h *_channels_last).
//
// Note [Channels-last convolution]
// With channels innermost, the patch of an output position is, per kernel
// tap, one contiguous run of C_in input elements, so the patches of a block
// of output positions unfold into a row-major [rows x taps * C_in] block by
// plain copies (zeros where a tap falls in the padding), and the weight in
// [C_out, *kernel, C_in] order is the matching [taps * C_in x C_out] operand
// as a view. The output block [rows x C_out] is a slice of the channels-last
// output. A small weight (up to 1 MB) is reused from L2 by every thread:
// blocks of rows (about 1 MB of patches) go one per thread, each with a
// single-threaded GEMM. A larger one is shared: blocks are large (up to 8 MB
// of patches) and each GEMM and unfolding is split over the threads, so the
// packed weight serves many rows (the backward ops always do this). A 1x1 kernel with stride 1 and no padding
// reads the input rows in place. The input gradient folds each block's patch
// gradients back with the threads splitting the channels (no two add into
// one element); the weight gradient accumulates over the blocks (beta = 1),
// in the compute type (float for Float16/BFloat16).
#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/scratch.h"
#include "conv_dnnl.h"
#include "geometry.h"
#include "mlu_kernels/conv.h"
#include "mlu_kernels/gemm.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {
namespace {

using detail::Geometry;

// Rows (output positions) per block: patches of up to kBlockElements
// elements (8 MB of float), at least one register block of rows.
constexpr int64_t kBlockElements = int64_t{1} << 21;

int64_t block_rows(int64_t rows, int64_t patch_elements) {
  return std::clamp<int64_t>(kBlockElements / std::max<int64_t>(patch_elements, 1), 12, std::max<int64_t>(rows, 12));
}

// Calls visit(tap, input position or -1) for each tap of output row r (n * L + l).
template <class Visit>
void for_each_tap(const Geometry& g, int64_t r, Visit visit) {
  const int64_t n = r / g.out_plane, l = r % g.out_plane;
  const int64_t od = l / (g.out[1] * g.out[2]), oh = (l / g.out[2]) % g.out[1], ow = l % g.out[2];
  int64_t tap = 0;
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++tap) {
        const int64_t iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
        const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
        visit(tap, inside ? n * g.in_plane + (id * g.in[1] + ih) * g.in[2] + iw : int64_t{-1});
      }
    }
  }
}

// Patches of rows [r0, r1) into col (row-major, taps * channels per row),
// split over the threads. With dilation 1 along the width, the taps of one
// kernel row are one contiguous run of kernel_w * channels input elements
// (clipped at the image's edges): one copy each, which matters for few
// channels (the first layer's 3).
template <class E>
void unfold_rows(const Geometry& g, int64_t channels, const E* in, int64_t r0, int64_t r1, E* col) {
  const int64_t k = g.taps * channels, kw_size = g.kernel[2];
  parallel_for(r0, r1, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t n = r / g.out_plane, l = r % g.out_plane;
      const int64_t od = l / (g.out[1] * g.out[2]), oh = (l / g.out[2]) % g.out[1], ow = l % g.out[2];
      const int64_t iw0 = ow * g.stride[2] - g.padding[2];
      E* dst = col + (r - r0) * k;
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh, dst += kw_size * channels) {
          const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
          if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill_n(dst, kw_size * channels, E{});
            continue;
          }
          const E* line = in + (n * g.in_plane + (id * g.in[1] + ih) * g.in[2]) * channels;
          if (g.dilation[2] == 1) {
            const int64_t first = std::clamp<int64_t>(-iw0, 0, kw_size);
            const int64_t last = std::clamp<int64_t>(g.in[2] - iw0, first, kw_size);
            std::fill_n(dst, first * channels, E{});
            std::copy_n(line + (iw0 + first) * channels, (last - first) * channels, dst + first * channels);
            std::fill_n(dst + last * channels, (kw_size - last) * channels, E{});
            continue;
          }
          for (int64_t kw = 0; kw < kw_size; ++kw) {
            const int64_t iw = iw0 + kw * g.dilation[2];
            if (iw < 0 || iw >= g.in[2]) {
              std::fill_n(dst + kw * channels, channels, E{});
            } else {
              std::copy_n(line + iw * channels, channels, dst + kw * channels);
            }
          }
        }
      }
    }
  });
}

// Adds patch gradients of rows [r0, r1) (col, taps * channels per row) into
// acc (positions x channels). Threads split the channels: no two add into
// one element.
template <class A>
void fold_rows(const Geometry& g, int64_t channels, const A* col, int64_t r0, int64_t r1, A* acc) {
  const int64_t k = g.taps * channels;
  const int64_t parts = std::min<int64_t>(num_threads(), std::max<int64_t>(1, channels / 8));
  parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
    const int64_t c0 = lo * channels / parts, c1 = hi * channels / parts;
    for (int64_t r = r0; r < r1; ++r) {
      const A* row = col + (r - r0) * k;
      for_each_tap(g, r, [&](int64_t tap, int64_t at) {
        if (at < 0) return;
        A* dst = acc + at * channels;
        const A* src = row + tap * channels;
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      });
    }
  });
}

GemmArgs gemm_args(ScalarType type, int64_t m, int64_t n, int64_t k, const void* a, int64_t a_rs, int64_t a_cs,
                   const void* b, int64_t b_rs, int64_t b_cs, void* c, int64_t ldc, double beta, bool float_c) {
  GemmArgs args{};
  args.dtype = type;
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = 1;
  args.beta = beta;
  args.a = {const_cast<void*>(a), a_rs, a_cs};
  args.b = {const_cast<void*>(b), b_rs, b_cs};
  args.c = {c, ldc, 1};
  args.float_c = float_c;
  return args;
}

}  // namespace

// The weight operands up to this size stay in L2: blocks of rows then go
// one per thread (small blocks, single-threaded GEMMs); larger weights are
// shared by all threads on large blocks (Note [Channels-last convolution]).
constexpr int64_t kSmallWeightBytes = int64_t{1} << 20;

void conv_forward_channels_last(const ConvShape& s, ScalarType type, const void* input, const void* weight,
                                const void* bias, void* output) {
  detail::VerboseCall call("conv_forward");
  detail::describe_conv(call, s, type, "nhwc");
  if (detail::dnnl_conv_forward(s, type, true, input, weight, bias, output)) return call.path("dnnl nhwc");
  const Geometry g = detail::geometry(s);
  const int64_t k = g.taps * s.in_channels, cout = s.out_channels, rows = s.batch * g.out_plane;
  const bool per_thread = k * cout * static_cast<int64_t>(element_size(type)) <= kSmallWeightBytes;
  const int64_t block = g.identity && !per_thread ? rows
                        : per_thread             ? std::clamp<int64_t>(262144 / k / 12 * 12, 48, 1536)
                                                 : block_rows(rows, k);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    using E = detail::bits_t<T>;
    constexpr bool kWide = !std::is_same_v<T, A>;  // 16-bit: float C, rounded with the bias
    const T* b = static_cast<const T*>(bias);
    T* out = static_cast<T*>(output);
    // Rows [r0, r1): patches, GEMM, bias (any thread; nested parallel loops run inline).
    const auto rows_block = [&](int64_t r0, int64_t r1) {
      thread_local std::vector<E> col_buffer;
      thread_local std::vector<float> c_buffer;
      const int64_t m = r1 - r0;
      const void* patches = static_cast<const T*>(input) + r0 * s.in_channels;
      if (!g.identity) {
        E* col = detail::grow(col_buffer, m * k);
        unfold_rows(g, s.in_channels, static_cast<const E*>(input), r0, r1, col);
        patches = col;
      }
      T* out_rows = out + r0 * cout;
      void* c = out_rows;
      if constexpr (kWide) c = detail::grow(c_buffer, m * cout);
      if (!kWide && b != nullptr) {
        for (int64_t i = 0; i < m; ++i) std::copy_n(b, cout, out_rows + i * cout);
      }
      gemm(gemm_args(type, m, cout, k, patches, k, 1, weight, 1, k, c, cout, !kWide && b != nullptr ? 1 : 0, kWide));
      if constexpr (kWide) {
        const float* cf = c_buffer.data();
        parallel_for(0, m, 256, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) {
            for (int64_t o = 0; o < cout; ++o) {
              const float v = cf[i * cout + o] + (b != nullptr ? detail::convert<float>(b[o]) : 0.0f);
              out_rows[i * cout + o] = detail::convert<T>(v);
            }
          }
        });
      }
    };
    const int64_t blocks = (rows + block - 1) / block;
    if (per_thread) {
      parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t blk = lo; blk < hi; ++blk) rows_block(blk * block, std::min(rows, (blk + 1) * block));
      });
    } else {
      for (int64_t blk = 0; blk < blocks; ++blk) rows_block(blk * block, std::min(rows, (blk + 1) * block));
    }
  });
}

void conv_backward_input_channels_last(const ConvShape& s, ScalarType type, const void* grad_output,
                                       const void* weight, void* grad_input) {
  detail::VerboseCall call("conv_backward_input");
  detail::describe_conv(call, s, type, "nhwc");
  if (detail::dnnl_conv_backward_input(s, type, true, grad_output, weight, nullptr, grad_input)) {
    return call.path("dnnl nhwc");
  }
  const Geometry g = detail::geometry(s);
  const int64_t cin = s.in_channels, cout = s.out_channels, k = g.taps * cin, rows = s.batch * g.out_plane;
  if (g.identity) {  // grad_input rows = grad_output rows x weight [C_out x C_in]
    gemm(gemm_args(type, rows, cin, cout, grad_output, cout, 1, weight, k, 1, grad_input, cin, 0, false));
    return;
  }
  const int64_t block = block_rows(rows, k);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    T* gi = static_cast<T*>(grad_input);
    thread_local std::vector<A> col_buffer, acc_buffer;
    const int64_t positions = s.batch * g.in_plane;
    A* acc = nullptr;
    if constexpr (std::is_same_v<T, A>) {
      acc = gi;
    } else {
      acc = detail::grow(acc_buffer, positions * cin);
    }
    std::fill_n(acc, positions * cin, A(0));
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block), m = r1 - r0;
      A* col = detail::grow(col_buffer, m * k);
      // Patch gradients: grad_output rows x weight [C_out x taps * C_in], in A.
      gemm(gemm_args(type, m, k, cout, go + r0 * cout, cout, 1, weight, k, 1, col, k, 0, !std::is_same_v<T, A>));
      fold_rows(g, cin, col, r0, r1, acc);
    }
    if constexpr (!std::is_same_v<T, A>) {
      parallel_for(0, positions * cin, 16384, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) gi[i] = detail::convert<T>(acc[i]);
      });
    }
  });
}

void conv_backward_weight_channels_last(const ConvShape& s, ScalarType type, const void* grad_output,
                                        const void* input, void* grad_weight, void* grad_bias) {
  detail::VerboseCall call("conv_backward_weight");
  detail::describe_conv(call, s, type, "nhwc");
  if (detail::dnnl_conv_backward_weight(s, type, true, grad_output, input, grad_weight, grad_bias)) {
    return call.path("dnnl nhwc");
  }
  const Geometry g = detail::geometry(s);
  const int64_t cin = s.in_channels, cout = s.out_channels, k = g.taps * cin, rows = s.batch * g.out_plane;
  const int64_t block = g.identity ? rows : block_rows(rows, k);
  detail::dispatch_floating(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = detail::compute_t<T>;
    using E = detail::bits_t<T>;
    const T* go = static_cast<const T*>(grad_output);
    thread_local std::vector<E> col_buffer;
    thread_local std::vector<A> sum_buffer;
    // grad_weight [C_out x K] accumulated over the row blocks, in A.
    A* gw = nullptr;
    if constexpr (std::is_same_v<T, A>) {
      gw = static_cast<T*>(grad_weight);
    } else {
      gw = detail::grow(sum_buffer, cout * k);
    }
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block), m = r1 - r0;
      const void* patches = static_cast<const T*>(input) + r0 * cin;
      if (!g.identity) {
        E* col = detail::grow(col_buffer, m * k);
        unfold_rows(g, cin, static_cast<const E*>(input), r0, r1, col);
        patches = col;
      }
      // gw (+)= grad_output rows^T [C_out x m] x patches [m x K].
      gemm(gemm_args(type, cout, k, m, go + r0 * cout, 1, cout, patches, k, 1, gw, k, r0 == 0 ? 0 : 1,
                     !std::is_same_v<T, A>));
    }
    if constexpr (!std::is_same_v<T, A>) {
      T* out = static_cast<T*>(grad_weight);
      for (int64_t i = 0; i < cout * k; ++i) out[i] = detail::convert<T>(gw[i]);
    }
    if (grad_bias == nullptr) return;
    // grad_bias: column sums of grad_output, per-part partial sums then added.
    const int64_t parts = std::min<int64_t>(num_threads(), std::max<int64_t>(1, rows / 64));
    std::vector<A> partial(static_cast<size_t>(parts * cout), A(0));
    parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t part = lo; part < hi; ++part) {
        A* sums = partial.data() + part * cout;
        for (int64_t r = part * rows / parts; r < (part + 1) * rows / parts; ++r) {
          for (int64_t o = 0; o < cout; ++o) sums[o] += detail::convert<A>(go[r * cout + o]);
        }
      }
    });
    T* gb = static_cast<T*>(grad_bias);
    for (int64_t o = 0; o < cout; ++o) {
      A sum = 0;
      for (int64_t part = 0; part < parts; ++part) sum += partial[static_cast<size_t>(part * cout + o)];
      gb[o] = detail::convert<T>(sum);
    }
  });
}

}  // namespace mlu::kernels
