// resample / resample_backward against their references (resample_ref.cpp):
// nearest, nearest-exact, linear and cubic over 1-3 dims, up- and
// down-sampling, equal and doubled sizes, size-1 dims, align_corners, user
// scale factors, zero planes, every floating dtype (and integer dtypes for
// nearest), and many planes split over threads.
// Tolerances: nearest copies elements, so it must match exactly; the others
// use ref_compare.h's per-dtype tolerance relative to the largest sum of
// |terms| (each output weighs at most 4 taps per dim whose |weights| sum to
// at most 1.375, Keys' cubic at t = 1/2; the kernel's cubic weight far(2 - t)
// may differ in the last bit from the CPU's far((1 - t) + 1)).
#include "mlu_kernels/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ref_compare.h"

namespace mlu::kernels {
namespace {

using namespace testutil;

class ResampleTest : public ::testing::TestWithParam<ScalarType> {};

const char* mode_name(ResampleMode m) {
  switch (m) {
    case ResampleMode::Nearest: return "nearest";
    case ResampleMode::NearestExact: return "nearest-exact";
    case ResampleMode::Linear: return "linear";
    case ResampleMode::Cubic: return "cubic";
  }
  return "?";
}

std::string describe(const ResampleShape& s) {
  std::string d = "planes " + std::to_string(s.planes) + (s.align_corners ? " align_corners" : "");
  for (int i = 0; i < 3; ++i) {
    d += " | " + std::to_string(s.in[i]) + "->" + std::to_string(s.out[i]) + " " + mode_name(s.mode[i]);
    if (s.scale_factor[i] > 0) d += " x" + std::to_string(s.scale_factor[i]);
  }
  return d;
}

int64_t plane_in(const ResampleShape& s) { return s.in[0] * s.in[1] * s.in[2]; }
int64_t plane_out(const ResampleShape& s) { return s.out[0] * s.out[1] * s.out[2]; }

// Interpolation over the last `dims` dims in one mode; sizes 1..9 -> 1..13,
// sometimes equal or doubled, sometimes from a scale factor (PyTorch's
// output size floor(in * factor), the factor then used as given).
ResampleShape random_resample(Rng& rng, int dims, ResampleMode mode) {
  ResampleShape s;
  s.planes = chance(rng, 0.05) ? 0 : uniform(rng, 1, 3);
  s.align_corners = (mode == ResampleMode::Linear || mode == ResampleMode::Cubic) && chance(rng, 0.4);
  static constexpr double kFactors[] = {0.5, 0.75, 1.5, 2.0, 2.5, 3.0};
  for (int d = 3 - dims; d < 3; ++d) {
    s.mode[d] = mode;
    s.in[d] = chance(rng, 0.15) ? 1 : uniform(rng, 2, dims == 3 ? 6 : 9);
    const double r = std::uniform_real_distribution<>(0, 1)(rng);
    if (r < 0.15) {
      s.out[d] = s.in[d];
    } else if (r < 0.3) {
      s.out[d] = 2 * s.in[d];
    } else if (r < 0.5 && !s.align_corners) {
      s.scale_factor[d] = kFactors[uniform(rng, 0, 5)];
      s.out[d] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(s.in[d]) * s.scale_factor[d])));
    } else {
      s.out[d] = uniform(rng, 1, dims == 3 ? 8 : 13);
    }
  }
  return s;
}

// An upper bound of the sum of |weight| over the taps of one output, or
// (backward) over the outputs that touch one input element.
double weight_bound(const ResampleShape& s, bool backward) {
  double bound = 1;
  for (int d = 0; d < 3; ++d) {
    const double taps = s.mode[d] == ResampleMode::Cubic ? 1.375 : 1.0;
    const double fan = backward ? std::ceil(static_cast<double>(s.out[d]) / static_cast<double>(s.in[d])) + 4 : 1;
    bound *= taps * fan;
  }
  return bound;
}

void check(const ResampleShape& s, ScalarType type, Rng& rng, const std::string& what, bool with_backward = true) {
  const Buffer input = normal_buffer(type, s.planes * plane_in(s), rng);
  Buffer out(type, s.planes * plane_out(s)), out_ref(type, out.count());
  resample(s, type, input.data(), out.data());
  resample_ref(s, type, input.data(), out_ref.data());
  const bool nearest = s.mode[0] != ResampleMode::Linear && s.mode[0] != ResampleMode::Cubic &&
                       s.mode[1] != ResampleMode::Linear && s.mode[1] != ResampleMode::Cubic &&
                       s.mode[2] != ResampleMode::Linear && s.mode[2] != ResampleMode::Cubic;
  if (nearest) {
    ASSERT_TRUE(same_buffers(out, out_ref)) << "resample " << what;
  } else {
    ASSERT_TRUE(near_buffers(out, out_ref, tolerance(type, weight_bound(s, false) * max_abs(input))))
        << "resample " << what;
  }
  if (!with_backward) return;
  const Buffer go = normal_buffer(type, out.count(), rng);
  Buffer gi(type, input.count()), gi_ref(type, input.count());
  fill_normal(gi, rng);  // overwritten
  resample_backward(s, type, go.data(), gi.data());
  resample_backward_ref(s, type, go.data(), gi_ref.data());
  ASSERT_TRUE(near_buffers(gi, gi_ref, tolerance(type, weight_bound(s, true) * max_abs(go))))
      << "resample_backward " << what;
}

TEST_P(ResampleTest, MatchesReferenceOnRandomShapes) {
  const ScalarType type = GetParam();
  Rng rng(97 + static_cast<int>(type));
  for (const ResampleMode mode :
       {ResampleMode::Nearest, ResampleMode::NearestExact, ResampleMode::Linear, ResampleMode::Cubic}) {
    for (int trial = 0; trial < 30; ++trial) {
      const int dims = static_cast<int>(uniform(rng, 1, 3));
      const ResampleShape s = random_resample(rng, dims, mode);
      check(s, type, rng, std::string(scalar_type_name(type)) + " " + describe(s));
      if (HasFatalFailure()) return;
    }
  }
}

// Enough planes for several thread chunks (the grain is 32768 / outputs per
// plane): bilinear and bicubic, forward and backward.
TEST_P(ResampleTest, ManyPlanesSplitOverThreads) {
  const ScalarType type = GetParam();
  const ThreadCount threads(3);
  Rng rng(101);
  for (const ResampleMode mode : {ResampleMode::Linear, ResampleMode::Cubic}) {
    ResampleShape s;
    s.planes = 1601;
    s.in[1] = 2, s.in[2] = 3;
    s.out[1] = 5, s.out[2] = 7;  // 35 outputs: chunks of 936 planes
    s.mode[1] = s.mode[2] = mode;
    check(s, type, rng, std::string("many planes ") + mode_name(mode));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ResampleTest, ::testing::ValuesIn(kFloatingTypes),
                         [](const auto& info) { return std::string(scalar_type_name(info.param)); });

// Nearest in every dim gathers whole elements of any dtype.
TEST(ResampleNearest, AnyDtypeMatchesReference) {
  Rng rng(103);
  for (const ScalarType type : {ScalarType::Bool, ScalarType::UInt8, ScalarType::Int16, ScalarType::Int64,
                                ScalarType::ComplexDouble}) {
    for (int trial = 0; trial < 10; ++trial) {
      const ResampleShape s = random_resample(rng, static_cast<int>(uniform(rng, 1, 3)),
                                              chance(rng, 0.5) ? ResampleMode::Nearest : ResampleMode::NearestExact);
      ASSERT_TRUE(resample_supports(s, type));
      Buffer input(type, s.planes * plane_in(s));
      fill_random(input, rng, false);
      Buffer out(type, s.planes * plane_out(s)), out_ref(type, out.count());
      resample(s, type, input.data(), out.data());
      resample_ref(s, type, input.data(), out_ref.data());
      ASSERT_TRUE(same_buffers(out, out_ref)) << scalar_type_name(type) << " " << describe(s);
    }
  }
}

}  // namespace
}  // namespace mlu::kernels
