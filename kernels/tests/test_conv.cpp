// conv_forward / conv_backward_input / conv_backward_weight against their
// direct-loop references: 1-, 2- and 3-D, groups (depthwise too), strides,
// padding, dilation, 1x1 identity patches, bias, every dtype.
#include "mlu_kernels/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

TEST(Conv, MatchesReferenceOnRandomShapes) {
  Rng rng(9);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16, ScalarType::Float16};
  for (int trial = 0; trial < 60; ++trial) {
    ConvShape s;
    s.dims = static_cast<int>(uniform(rng, 1, 3));
    s.batch = uniform(rng, 1, 3);
    s.groups = chance(rng, 0.3) ? uniform(rng, 2, 3) : 1;
    s.in_channels = s.groups * uniform(rng, 1, 4);
    s.out_channels = s.groups * uniform(rng, 1, 4);
    if (chance(rng, 0.15)) s.out_channels = s.in_channels = s.groups = uniform(rng, 2, 5);  // depthwise
    const bool one_by_one = chance(rng, 0.2);
    for (int d = 0; d < s.dims; ++d) {
      s.in_size[d] = uniform(rng, s.dims == 3 ? 3 : 5, s.dims == 3 ? 6 : 12);
      s.kernel[d] = one_by_one ? 1 : uniform(rng, 1, 3);
      s.stride[d] = one_by_one ? 1 : uniform(rng, 1, 2);
      s.padding[d] = one_by_one ? 0 : uniform(rng, 0, 2);
      s.dilation[d] = one_by_one ? 1 : uniform(rng, 1, 2);
      const int64_t span = s.dilation[d] * (s.kernel[d] - 1) + 1;
      if (s.in_size[d] + 2 * s.padding[d] < span) s.padding[d] = span;
      s.out_size[d] = (s.in_size[d] + 2 * s.padding[d] - span) / s.stride[d] + 1;
    }
    const ScalarType type = types[uniform(rng, 0, 3)];
    int64_t in_plane = 1, out_plane = 1, taps = 1;
    for (int d = 0; d < s.dims; ++d) {
      in_plane *= s.in_size[d];
      out_plane *= s.out_size[d];
      taps *= s.kernel[d];
    }
    Buffer input(type, s.batch * s.in_channels * in_plane), weight(type, s.out_channels * s.in_channels / s.groups * taps),
        bias(type, s.out_channels), gout(type, s.batch * s.out_channels * out_plane);
    fill_normal(input, rng);
    fill_normal(weight, rng);
    fill_normal(bias, rng);
    fill_normal(gout, rng);
    const bool with_bias = chance(rng, 0.5);
    const double rtol = type == ScalarType::Float64 ? 1e-12 : type == ScalarType::Float32 ? 2e-6 : 1e-2;
    std::string what = "dims " + std::to_string(s.dims) + " groups " + std::to_string(s.groups) + " type " +
                       scalar_type_name(type);

    Buffer out(type, gout.count()), out_ref(type, gout.count());
    conv_forward(s, type, input.data(), weight.data(), with_bias ? bias.data() : nullptr, out.data());
    conv_forward_ref(s, type, input.data(), weight.data(), with_bias ? bias.data() : nullptr, out_ref.data());
    ASSERT_TRUE(close_to_max(out, out_ref, rtol)) << "forward " << what;

    // With a bias over the input channels: the transposed convolution's.
    Buffer gin(type, input.count()), gin_ref(type, input.count()), in_bias(type, s.in_channels);
    fill_normal(in_bias, rng);
    const void* b = with_bias ? in_bias.data() : nullptr;
    conv_backward_input(s, type, gout.data(), weight.data(), b, gin.data());
    conv_backward_input_ref(s, type, gout.data(), weight.data(), b, gin_ref.data());
    ASSERT_TRUE(close_to_max(gin, gin_ref, rtol)) << "backward input " << what;

    Buffer gw(type, weight.count()), gw_ref(type, weight.count()), gb(type, s.out_channels), gb_ref(type, s.out_channels);
    conv_backward_weight(s, type, gout.data(), input.data(), gw.data(), with_bias ? gb.data() : nullptr);
    conv_backward_weight_ref(s, type, gout.data(), input.data(), gw_ref.data(), with_bias ? gb_ref.data() : nullptr);
    ASSERT_TRUE(close_to_max(gw, gw_ref, rtol)) << "backward weight " << what;
    if (with_bias) {
      ASSERT_TRUE(close_to_max(gb, gb_ref, rtol)) << "backward bias " << what;
    }
  }
}

// Outputs of >= 1024 positions per sample take the per-sample batched GEMM
// instead of the wide one (Note [Convolution batches]): both, with bias.
TEST(Conv, LargeOutputsBatchedPerSample) {
  Rng rng(12);
  for (int64_t side : {20, 40}) {
    ConvShape s;
    s.dims = 2;
    s.batch = 2;
    s.in_channels = 3;
    s.out_channels = 4;
    s.in_size[0] = s.in_size[1] = side;
    s.kernel[0] = s.kernel[1] = 3;
    s.padding[0] = s.padding[1] = 1;
    s.out_size[0] = s.out_size[1] = side;
    const ScalarType type = ScalarType::Float32;
    Buffer input(type, 2 * 3 * side * side), weight(type, 4 * 3 * 9), bias(type, 4), out(type, 2 * 4 * side * side),
        ref(type, 2 * 4 * side * side);
    fill_normal(input, rng);
    fill_normal(weight, rng);
    fill_normal(bias, rng);
    conv_forward(s, type, input.data(), weight.data(), bias.data(), out.data());
    conv_forward_ref(s, type, input.data(), weight.data(), bias.data(), ref.data());
    ASSERT_TRUE(close_to_max(out, ref, 2e-6)) << "side " << side;
  }
}

}  // namespace
}  // namespace mlu::kernels
