// The pooling kernels against their references (pool_ref.cpp) on random
// 1-, 2- and 3-D geometries: size-1 and odd dims, strides, padding (up to
// half the window, as PyTorch allows), dilation, ceil-mode windows that run
// off the end, zero planes, every floating dtype, and one large case that
// splits the planes over threads.
// Tolerances: max pooling copies an element, so its values and indices must
// match exactly. Averages and backward sums use ref_compare.h's per-dtype
// tolerance relative to the largest sum of |terms|; max_pool_backward rounds
// every addition to the dtype (as the CPU's does), so its bound is (m + 1)
// unit roundoffs of each element's sum of |terms|, m the number of outputs
// that share one maximum (ref_compare.h near_rounded_sums).
#include "mlu_kernels/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class PoolTest : public ::testing::TestWithParam<ScalarType> {};

std::string describe(const PoolShape& s) {
  std::string d = "planes " + std::to_string(s.planes);
  const auto triple = [](const int64_t (&v)[3]) {
    std::string t = "[";
    t += join(v, 3);  // random_views.h
    t += ']';
    return t;
  };
  return d + " in " + triple(s.in) + " out " + triple(s.out) + " kernel " + triple(s.kernel) + " stride " +
         triple(s.stride) + " pad " + triple(s.pad) + " dilation " + triple(s.dilation);
}

int64_t in_plane(const PoolShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t out_plane(const PoolShape& s) { return s.out[0] * s.out[1] * s.out[2]; }

// A random PyTorch-valid geometry over the last `dims` dims (the others 1):
// pad <= kernel / 2, the dilated window fits the padded input, floor or ceil
// mode (a ceil-mode window may run past the end; the last one starts inside
// the input or its left padding). `dilated`: average pooling has none.
PoolShape random_pool(Rng& rng, int dims, bool dilated) {
  PoolShape s;
  s.planes = chance(rng, 0.05) ? 0 : uniform(rng, 1, 4);
  const bool ceil_mode = chance(rng, 0.4);
  for (int d = 3 - dims; d < 3; ++d) {
    // Sometimes long rows: several of max pooling's blocks of outputs (Note [Max pooling by window offsets]).
    const bool long_row = d == 2 && chance(rng, 0.25);
    s.in[d] = chance(rng, 0.15) ? 1 : long_row ? uniform(rng, 40, 150) : uniform(rng, 2, dims == 3 ? 6 : 11);
    s.kernel[d] = uniform(rng, 1, 3);
    s.stride[d] = uniform(rng, 1, 3);
    s.pad[d] = uniform(rng, 0, s.kernel[d] / 2);
    s.dilation[d] = dilated ? uniform(rng, 1, 2) : 1;
    int64_t span = s.dilation[d] * (s.kernel[d] - 1) + 1;
    while (span > s.in[d] + 2 * s.pad[d]) {  // shrink the window until it fits
      s.dilation[d] = 1;
      s.kernel[d] = std::max<int64_t>(1, s.kernel[d] - 1);
      s.pad[d] = std::min(s.pad[d], s.kernel[d] / 2);
      span = s.kernel[d];
    }
    const int64_t room = s.in[d] + 2 * s.pad[d] - span;
    s.out[d] = (ceil_mode ? (room + s.stride[d] - 1) / s.stride[d] : room / s.stride[d]) + 1;
    if (ceil_mode && (s.out[d] - 1) * s.stride[d] >= s.in[d] + s.pad[d]) --s.out[d];
  }
  if (!dilated && chance(rng, 0.3)) s.dilation[2] = 2;  // average pooling must ignore it
  return s;
}

// The largest number of outputs of a plane whose index is one element.
int64_t max_sharing(const PoolShape& s, const std::vector<int64_t>& indices) {
  int64_t most = 1;
  const int64_t op = out_plane(s);
  for (int64_t p = 0; p < s.planes; ++p) {
    std::map<int64_t, int64_t> count;
    for (int64_t o = 0; o < op; ++o) most = std::max(most, ++count[indices[static_cast<size_t>(p * op + o)]]);
  }
  return most;
}

// max_pool_backward from `indices` against its reference.
void check_max_backward(const PoolShape& s, ScalarType type, const std::vector<int64_t>& indices, Rng& rng,
                        const std::string& what) {
  const Buffer go = normal_buffer(type, s.planes * out_plane(s), rng);
  Buffer gi(type, s.planes * in_plane(s)), gi_ref(type, gi.count());
  fill_normal(gi, rng);  // overwritten
  max_pool_backward(s, type, go.data(), indices.data(), gi.data());
  max_pool_backward_ref(s, type, go.data(), indices.data(), gi_ref.data());
  // The bound: the reference on |grad_output| (each element's sum of
  // |terms|) times (m + 1) unit roundoffs.
  Buffer magnitude(type, gi.count());
  max_pool_backward_ref(s, type, abs_buffer(go).data(), indices.data(), magnitude.data());
  ASSERT_TRUE(near_rounded_sums(gi, gi_ref, magnitude, static_cast<double>(max_sharing(s, indices))))
      << "max_pool_backward " << what;
}

TEST_P(PoolTest, MaxPoolMatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(71 + static_cast<int>(type));
  for (int trial = 0; trial < 60; ++trial) {
    const int dims = static_cast<int>(uniform(rng, 1, 3));
    const PoolShape s = random_pool(rng, dims, true);
    const std::string what = std::string(scalar_type_name(type)) + " " + describe(s);
    Buffer input = normal_buffer(type, s.planes * in_plane(s), rng);
    // Ties (repeated values) and NaNs: the first largest, the last NaN.
    for (int64_t i = 0; i < input.count(); ++i) {
      if (chance(rng, 0.2)) put_real(type, input.element(i), 1.0);
      if (chance(rng, 0.03)) put_real(type, input.element(i), NAN);
    }
    const int64_t outputs = s.planes * out_plane(s);
    Buffer out(type, outputs), out_ref(type, outputs);
    std::vector<int64_t> idx(static_cast<size_t>(outputs), -7), idx_ref(static_cast<size_t>(outputs), -7);
    max_pool(s, type, input.data(), out.data(), idx.data());
    max_pool_ref(s, type, input.data(), out_ref.data(), idx_ref.data());
    ASSERT_TRUE(same_buffers(out, out_ref)) << "max_pool " << what;
    ASSERT_EQ(idx, idx_ref) << "max_pool indices " << what;
    check_max_backward(s, type, idx_ref, rng, what);
  }
}

TEST_P(PoolTest, AvgPoolMatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(73 + static_cast<int>(type));
  for (int trial = 0; trial < 60; ++trial) {
    const int dims = static_cast<int>(uniform(rng, 1, 3));
    PoolShape s = random_pool(rng, dims, false);
    // Sometimes an extra output past the end: empty windows give 0.
    if (chance(rng, 0.15)) s.out[2] += 2;
    const bool count_include_pad = chance(rng, 0.5);
    const int64_t divisor_override = chance(rng, 0.7) ? 0 : chance(rng, 0.5) ? 3 : -2;
    const std::string what = std::string(scalar_type_name(type)) + " " + describe(s) + " include_pad " +
                             std::to_string(count_include_pad) + " divisor " + std::to_string(divisor_override);
    const Buffer input = normal_buffer(type, s.planes * in_plane(s), rng);
    const int64_t outputs = s.planes * out_plane(s), taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
    Buffer out(type, outputs), out_ref(type, outputs);
    avg_pool(s, type, input.data(), out.data(), count_include_pad, divisor_override);
    avg_pool_ref(s, type, input.data(), out_ref.data(), count_include_pad, divisor_override);
    ASSERT_TRUE(near_buffers(out, out_ref, tolerance(type, taps * max_abs(input)))) << "avg_pool " << what;

    const Buffer go = normal_buffer(type, outputs, rng);
    Buffer gi(type, input.count()), gi_ref(type, input.count());
    fill_normal(gi, rng);  // overwritten
    avg_pool_backward(s, type, go.data(), gi.data(), count_include_pad, divisor_override);
    avg_pool_backward_ref(s, type, go.data(), gi_ref.data(), count_include_pad, divisor_override);
    ASSERT_TRUE(near_buffers(gi, gi_ref, tolerance(type, taps * max_abs(go)))) << "avg_pool_backward " << what;
  }
}

TEST_P(PoolTest, AdaptivePoolMatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(79 + static_cast<int>(type));
  for (int trial = 0; trial < 60; ++trial) {
    const int dims = static_cast<int>(uniform(rng, 1, 3));
    PoolShape s;
    s.planes = chance(rng, 0.05) ? 0 : uniform(rng, 1, 4);
    int64_t taps = 1;
    for (int d = 3 - dims; d < 3; ++d) {
      s.in[d] = chance(rng, 0.15) ? 1 : uniform(rng, 2, dims == 3 ? 6 : 13);
      s.out[d] = uniform(rng, 1, s.in[d] + 2);  // larger than the input too: overlapping windows
      taps *= (s.in[d] + s.out[d] - 1) / s.out[d] + 1;
    }
    const std::string what = std::string(scalar_type_name(type)) + " " + describe(s);
    Buffer input = normal_buffer(type, s.planes * in_plane(s), rng);
    for (int64_t i = 0; i < input.count(); ++i) {
      if (chance(rng, 0.03)) put_real(type, input.element(i), NAN);
    }
    const int64_t outputs = s.planes * out_plane(s);
    Buffer out(type, outputs), out_ref(type, outputs);
    adaptive_avg_pool(s, type, input.data(), out.data());
    adaptive_avg_pool_ref(s, type, input.data(), out_ref.data());
    ASSERT_TRUE(near_buffers(out, out_ref, tolerance(type, taps * max_abs(input)))) << "adaptive_avg_pool " << what;

    const Buffer go = normal_buffer(type, outputs, rng);
    Buffer gi(type, input.count()), gi_ref(type, input.count());
    adaptive_avg_pool_backward(s, type, go.data(), gi.data());
    adaptive_avg_pool_backward_ref(s, type, go.data(), gi_ref.data());
    ASSERT_TRUE(near_buffers(gi, gi_ref, tolerance(type, taps * max_abs(go))))
        << "adaptive_avg_pool_backward " << what;

    Buffer mx(type, outputs), mx_ref(type, outputs);
    std::vector<int64_t> idx(static_cast<size_t>(outputs)), idx_ref(static_cast<size_t>(outputs));
    adaptive_max_pool(s, type, input.data(), mx.data(), idx.data());
    adaptive_max_pool_ref(s, type, input.data(), mx_ref.data(), idx_ref.data());
    ASSERT_TRUE(same_buffers(mx, mx_ref)) << "adaptive_max_pool " << what;
    ASSERT_EQ(idx, idx_ref) << "adaptive_max_pool indices " << what;
    check_max_backward(s, type, idx_ref, rng, what);
  }
}

TEST_P(PoolTest, FractionalMaxPoolMatchesReference) {
  const ScalarType type = GetParam();
  Rng rng(83 + static_cast<int>(type));
  for (int trial = 0; trial < 60; ++trial) {
    const int dims = static_cast<int>(uniform(rng, 2, 3));
    PoolShape s;
    s.planes = chance(rng, 0.05) ? 0 : uniform(rng, 1, 4);
    for (int d = 3 - dims; d < 3; ++d) {
      s.in[d] = chance(rng, 0.1) ? 1 : uniform(rng, 2, dims == 3 ? 7 : 15);
      s.kernel[d] = uniform(rng, 1, std::min<int64_t>(3, s.in[d]));
      s.out[d] = uniform(rng, 1, s.in[d] - s.kernel[d] + 1);  // PyTorch: out + kernel - 1 <= in
    }
    const std::string what = std::string(scalar_type_name(type)) + " dims " + std::to_string(dims) + " " + describe(s);
    const Buffer input = normal_buffer(type, s.planes * in_plane(s), rng);
    Buffer samples(type, s.planes * dims);
    for (int64_t i = 0; i < samples.count(); ++i) {
      put_real(type, samples.element(i), std::uniform_real_distribution<>(0, 1)(rng));
    }
    const int64_t outputs = s.planes * out_plane(s);
    Buffer out(type, outputs), out_ref(type, outputs);
    std::vector<int64_t> idx(static_cast<size_t>(outputs)), idx_ref(static_cast<size_t>(outputs));
    fractional_max_pool(s, dims, type, input.data(), samples.data(), out.data(), idx.data());
    fractional_max_pool_ref(s, dims, type, input.data(), samples.data(), out_ref.data(), idx_ref.data());
    ASSERT_TRUE(same_buffers(out, out_ref)) << "fractional_max_pool " << what;
    ASSERT_EQ(idx, idx_ref) << "fractional_max_pool indices " << what;
    check_max_backward(s, type, idx_ref, rng, what);
  }
}

// Enough planes for several thread chunks (the grain is 16384 / (outputs x
// taps) planes), with odd sizes.
TEST_P(PoolTest, ManyPlanesSplitOverThreads) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(89);
  PoolShape s;
  s.planes = 37;
  s.in[1] = 23, s.in[2] = 29;
  s.kernel[1] = s.kernel[2] = 3;
  s.stride[1] = 2, s.stride[2] = 1;
  s.pad[1] = s.pad[2] = 1;
  s.out[1] = 12, s.out[2] = 29;
  const Buffer input = normal_buffer(type, s.planes * in_plane(s), rng);
  const int64_t outputs = s.planes * out_plane(s);
  Buffer out(type, outputs), out_ref(type, outputs);
  std::vector<int64_t> idx(static_cast<size_t>(outputs)), idx_ref(static_cast<size_t>(outputs));
  max_pool(s, type, input.data(), out.data(), idx.data());
  max_pool_ref(s, type, input.data(), out_ref.data(), idx_ref.data());
  ASSERT_TRUE(same_buffers(out, out_ref));
  ASSERT_EQ(idx, idx_ref);
  check_max_backward(s, type, idx_ref, rng, "many planes");
  avg_pool(s, type, input.data(), out.data(), false, 0);
  avg_pool_ref(s, type, input.data(), out_ref.data(), false, 0);
  ASSERT_TRUE(near_buffers(out, out_ref, tolerance(type, 9 * max_abs(input))));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PoolTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

}  // namespace
}  // namespace mlu::kernels
