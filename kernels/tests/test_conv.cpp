// conv_forward / conv_backward_input / conv_backward_weight against their
// direct-loop references: 1-, 2- and 3-D, groups (depthwise too), strides,
// padding, dilation, 1x1 identity patches, bias, every dtype; on our own
// kernels and on oneDNN where this build links it (Note [oneDNN
// convolutions]; batches of 1-3 cut into uneven slices).
#include "mlu_kernels/conv.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "random_views.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

// Random spatial sizes, kernel, stride, padding and dilation for s.dims dims
// (inputs up to max_size, smaller in 3-D; a 1x1 kernel with stride 1 and no
// padding with chance one_by_one); returns {input positions, output
// positions, kernel taps}.
std::array<int64_t, 3> random_geometry(Rng& rng, ConvShape& s, int64_t max_size, double one_by_one) {
  const bool unit = chance(rng, one_by_one);
  std::array<int64_t, 3> planes{1, 1, 1};
  for (int d = 0; d < s.dims; ++d) {
    s.in_size[d] = uniform(rng, s.dims == 3 ? 3 : 5, s.dims == 3 ? 6 : max_size);
    s.kernel[d] = unit ? 1 : uniform(rng, 1, 3);
    s.stride[d] = unit ? 1 : uniform(rng, 1, 2);
    s.padding[d] = unit ? 0 : uniform(rng, 0, 2);
    s.dilation[d] = unit ? 1 : uniform(rng, 1, 2);
    const int64_t span = s.dilation[d] * (s.kernel[d] - 1) + 1;
    if (s.in_size[d] + 2 * s.padding[d] < span) s.padding[d] = span;
    s.out_size[d] = (s.in_size[d] + 2 * s.padding[d] - span) / s.stride[d] + 1;
    planes[0] *= s.in_size[d];
    planes[1] *= s.out_size[d];
    planes[2] *= s.kernel[d];
  }
  return planes;
}

class ConvTest : public ::testing::TestWithParam<ConvLibrary> {
 protected:
  void SetUp() override {
    if (!conv_library_available(GetParam())) GTEST_SKIP() << "built without " << conv_library_name(GetParam());
    saved_ = conv_library();
    set_conv_library(GetParam());
  }
  void TearDown() override { set_conv_library(saved_); }
  ConvLibrary saved_ = ConvLibrary::Own;
};

TEST_P(ConvTest, MatchesReferenceOnRandomShapes) {
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
    const auto [in_plane, out_plane, taps] = random_geometry(rng, s, 12, 0.2);
    const ScalarType type = types[uniform(rng, 0, 3)];
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
TEST_P(ConvTest, LargeOutputsBatchedPerSample) {
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

namespace mlu::kernels {
namespace {

using namespace testutil;

// [N, C, *spatial] <-> [N, *spatial, C] for `plane` spatial positions.
Buffer channels_last(const Buffer& b, int64_t n, int64_t c, int64_t plane, bool to_last) {
  Buffer out(b.type(), b.count());
  const size_t es = element_size(b.type());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p) {
        const int64_t first = (i * c + ch) * plane + p, last = (i * plane + p) * c + ch;
        std::memcpy(out.element(to_last ? last : first), b.data() + (to_last ? first : last) * static_cast<int64_t>(es), es);
      }
  return out;
}

// The channels-last kernels against the references on the same data in NCHW order.
TEST_P(ConvTest, ChannelsLastMatchesReference) {
  Rng rng(21);
  const ScalarType types[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16, ScalarType::Float16};
  for (int trial = 0; trial < 40; ++trial) {
    ConvShape s;
    s.dims = static_cast<int>(uniform(rng, 1, 3));
    s.batch = uniform(rng, 1, 3);
    s.in_channels = uniform(rng, 1, 20);
    s.out_channels = uniform(rng, 1, 20);
    const auto [in_plane, out_plane, taps] = random_geometry(rng, s, 30, 0.25);
    const ScalarType type = types[uniform(rng, 0, 3)];
    Buffer input(type, s.batch * s.in_channels * in_plane), weight(type, s.out_channels * s.in_channels * taps),
        bias(type, s.out_channels), gout(type, s.batch * s.out_channels * out_plane);
    for (Buffer* b : {&input, &weight, &bias, &gout}) fill_normal(*b, rng);
    const double rtol = type == ScalarType::Float64 ? 1e-12 : type == ScalarType::Float32 ? 2e-6 : 1e-2;
    const std::string what = "dims " + std::to_string(s.dims) + " type " + scalar_type_name(type);
    const Buffer input_cl = channels_last(input, s.batch, s.in_channels, in_plane, true);
    const Buffer weight_cl = channels_last(weight, s.out_channels, s.in_channels, taps, true);
    const Buffer gout_cl = channels_last(gout, s.batch, s.out_channels, out_plane, true);

    Buffer out_cl(type, gout.count()), out_ref(type, gout.count());
    conv_forward_channels_last(s, type, input_cl.data(), weight_cl.data(), bias.data(), out_cl.data());
    conv_forward_ref(s, type, input.data(), weight.data(), bias.data(), out_ref.data());
    ASSERT_TRUE(close_to_max(channels_last(out_cl, s.batch, s.out_channels, out_plane, false), out_ref, rtol))
        << "forward " << what;

    Buffer gin_cl(type, input.count()), gin_ref(type, input.count());
    conv_backward_input_channels_last(s, type, gout_cl.data(), weight_cl.data(), gin_cl.data());
    conv_backward_input_ref(s, type, gout.data(), weight.data(), nullptr, gin_ref.data());
    ASSERT_TRUE(close_to_max(channels_last(gin_cl, s.batch, s.in_channels, in_plane, false), gin_ref, rtol))
        << "backward input " << what;

    Buffer gw_cl(type, weight.count()), gw_ref(type, weight.count()), gb(type, s.out_channels),
        gb_ref(type, s.out_channels);
    conv_backward_weight_channels_last(s, type, gout_cl.data(), input_cl.data(), gw_cl.data(), gb.data());
    conv_backward_weight_ref(s, type, gout.data(), input.data(), gw_ref.data(), gb_ref.data());
    ASSERT_TRUE(close_to_max(channels_last(gw_cl, s.out_channels, s.in_channels, taps, false), gw_ref, rtol))
        << "backward weight " << what;
    ASSERT_TRUE(close_to_max(gb, gb_ref, rtol)) << "backward bias " << what;
  }
}

// ResNet-like layers with channel counts that fill vector blocks and a
// batch of 5 (slices of 3 and 2 on two threads): every pass, both layouts,
// float32 and bfloat16.
TEST_P(ConvTest, ResNetLayersBothLayouts) {
  Rng rng(33);
  struct Layer {
    int64_t in_channels, out_channels, side, kernel, stride, padding;
  };
  for (const Layer& l : {Layer{16, 32, 12, 3, 1, 1}, Layer{32, 32, 7, 3, 2, 1}, Layer{24, 48, 6, 1, 1, 0}}) {
    for (ScalarType type : {ScalarType::Float32, ScalarType::BFloat16}) {
      ConvShape s;
      s.batch = 5;
      s.in_channels = l.in_channels;
      s.out_channels = l.out_channels;
      s.in_size[0] = s.in_size[1] = l.side;
      s.kernel[0] = s.kernel[1] = l.kernel;
      s.stride[0] = s.stride[1] = l.stride;
      s.padding[0] = s.padding[1] = l.padding;
      s.out_size[0] = s.out_size[1] = (l.side + 2 * l.padding - l.kernel) / l.stride + 1;
      const int64_t in_plane = l.side * l.side, out_plane = s.out_size[0] * s.out_size[1], taps = l.kernel * l.kernel;
      Buffer input(type, s.batch * s.in_channels * in_plane), weight(type, s.out_channels * s.in_channels * taps),
          bias(type, s.out_channels), gout(type, s.batch * s.out_channels * out_plane);
      for (Buffer* b : {&input, &weight, &bias, &gout}) fill_normal(*b, rng);
      const double rtol = type == ScalarType::Float32 ? 2e-6 : 1e-2;
      const std::string what = "channels " + std::to_string(l.in_channels) + " type " + scalar_type_name(type);

      Buffer out(type, gout.count()), out_ref(type, gout.count());
      conv_forward(s, type, input.data(), weight.data(), bias.data(), out.data());
      conv_forward_ref(s, type, input.data(), weight.data(), bias.data(), out_ref.data());
      ASSERT_TRUE(close_to_max(out, out_ref, rtol)) << "forward " << what;
      Buffer gin(type, input.count()), gin_ref(type, input.count());
      conv_backward_input(s, type, gout.data(), weight.data(), nullptr, gin.data());
      conv_backward_input_ref(s, type, gout.data(), weight.data(), nullptr, gin_ref.data());
      ASSERT_TRUE(close_to_max(gin, gin_ref, rtol)) << "backward input " << what;
      Buffer gw(type, weight.count()), gw_ref(type, weight.count()), gb(type, s.out_channels),
          gb_ref(type, s.out_channels);
      conv_backward_weight(s, type, gout.data(), input.data(), gw.data(), gb.data());
      conv_backward_weight_ref(s, type, gout.data(), input.data(), gw_ref.data(), gb_ref.data());
      ASSERT_TRUE(close_to_max(gw, gw_ref, rtol)) << "backward weight " << what;
      ASSERT_TRUE(close_to_max(gb, gb_ref, rtol)) << "backward bias " << what;

      const Buffer input_cl = channels_last(input, s.batch, s.in_channels, in_plane, true);
      const Buffer weight_cl = channels_last(weight, s.out_channels, s.in_channels, taps, true);
      const Buffer gout_cl = channels_last(gout, s.batch, s.out_channels, out_plane, true);
      Buffer out_cl(type, gout.count()), gin_cl(type, input.count()), gw_cl(type, weight.count());
      conv_forward_channels_last(s, type, input_cl.data(), weight_cl.data(), bias.data(), out_cl.data());
      ASSERT_TRUE(close_to_max(channels_last(out_cl, s.batch, s.out_channels, out_plane, false), out_ref, rtol))
          << "channels-last forward " << what;
      conv_backward_input_channels_last(s, type, gout_cl.data(), weight_cl.data(), gin_cl.data());
      ASSERT_TRUE(close_to_max(channels_last(gin_cl, s.batch, s.in_channels, in_plane, false), gin_ref, rtol))
          << "channels-last backward input " << what;
      conv_backward_weight_channels_last(s, type, gout_cl.data(), input_cl.data(), gw_cl.data(), gb.data());
      ASSERT_TRUE(close_to_max(channels_last(gw_cl, s.out_channels, s.in_channels, taps, false), gw_ref, rtol))
          << "channels-last backward weight " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, ConvTest, ::testing::Values(ConvLibrary::Own, ConvLibrary::Dnnl),
                         [](const auto& info) { return std::string(conv_library_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
