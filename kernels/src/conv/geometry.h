// The geometry of a convolution (ConvShape with its spatial dims
// right-aligned into three, leading dims of size 1) and the sizes its GEMMs
// need; shared by the NCHW (conv.cpp) and channels-last (conv_nhwc.cpp)
// paths.
#pragma once

#include <cstdint>

#include "mlu_kernels/conv.h"
#include "../common/verbose_call.h"

namespace mlu::kernels::detail {

struct Geometry {
  int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
  int64_t in_plane, out_plane, taps;  // prod(in), prod(out) = L, prod(kernel) = K
  int64_t group_in, group_out;         // channels per group
  bool identity;                       // 1x1 kernel, stride 1, no padding: patches are the input
};

inline Geometry geometry(const ConvShape& s) {
  Geometry g;
  const int lead = 3 - s.dims;
  for (int d = 0; d < 3; ++d) {
    const int src = d - lead;
    const bool real = src >= 0;
    g.in[d] = real ? s.in_size[src] : 1;
    g.out[d] = real ? s.out_size[src] : 1;
    g.kernel[d] = real ? s.kernel[src] : 1;
    g.stride[d] = real ? s.stride[src] : 1;
    g.padding[d] = real ? s.padding[src] : 0;
    g.dilation[d] = real ? s.dilation[src] : 1;
  }
  g.in_plane = g.in[0] * g.in[1] * g.in[2];
  g.out_plane = g.out[0] * g.out[1] * g.out[2];
  g.taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  g.group_in = s.in_channels / s.groups;
  g.group_out = s.out_channels / s.groups;
  g.identity = g.taps == 1 && g.in_plane == g.out_plane;
  for (int d = 0; d < 3; ++d) g.identity = g.identity && g.stride[d] == 1 && g.padding[d] == 0;
  return g;
}

// Opens the MLU_KERNELS_VERBOSE line of a convolution call ("n8 c64->128
// 2d in56x56 k3x3 s1 g1"), the layout's name as its path.
inline void describe_conv(VerboseCall& call, const ConvShape& s, ScalarType type, const char* layout) {
  call.path(layout);
  if (!call) return;
  call.describe(type, "n%lld c%lld->%lld %dd in%lldx%lldx%lld k%lldx%lldx%lld s%lld g%lld",
                static_cast<long long>(s.batch), static_cast<long long>(s.in_channels),
                static_cast<long long>(s.out_channels), s.dims, static_cast<long long>(s.in_size[0]),
                static_cast<long long>(s.in_size[1]), static_cast<long long>(s.in_size[2]),
                static_cast<long long>(s.kernel[0]), static_cast<long long>(s.kernel[1]),
                static_cast<long long>(s.kernel[2]), static_cast<long long>(s.stride[0]),
                static_cast<long long>(s.groups));
}

}  // namespace mlu::kernels::detail
