#include "mlu_kernels/triangle.h"

#include <gtest/gtest.h>

#include <vector>

#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

// A batch of 3 matrices 40 x 700 read through a transposed view, against a
// direct loop, for both triangles and diagonals on either side of 0; and in
// place.
TEST(Triangle, MatchesADirectLoopOnATransposedBatch) {
  const int saved = num_threads();
  set_num_threads(3);
  const int64_t B = 3, R = 40, C = 700;
  std::vector<double> in(static_cast<size_t>(B * R * C));
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<double>(k) + 1;
  Shape s;
  s.ndim = 3;
  s.sizes[0] = B;
  s.sizes[1] = R;
  s.sizes[2] = C;
  Strides t{};  // element (b, i, j) lives at b*R*C + j*R + i
  t.v[0] = R * C;
  t.v[1] = 1;
  t.v[2] = R;
  Strides dense{};
  dense.v[0] = R * C;
  dense.v[1] = C;
  dense.v[2] = 1;
  for (bool lower : {true, false}) {
    for (int64_t diagonal : {-5, 0, 3, 650}) {
      std::vector<double> out(in.size(), -1);
      triangle(s, Operand{out.data(), ScalarType::Float64, dense}, Operand{in.data(), ScalarType::Float64, t},
               diagonal, lower);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t i = 0; i < R; ++i) {
          for (int64_t j = 0; j < C; ++j) {
            const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
            const double want = keep ? in[static_cast<size_t>(b * R * C + j * R + i)] : 0.0;
            ASSERT_EQ(out[static_cast<size_t>(b * R * C + i * C + j)], want)
                << "lower " << lower << " diagonal " << diagonal << " at " << b << "," << i << "," << j;
          }
        }
      }
    }
  }
  std::vector<double> self = in;  // in place, as tril_
  const Operand x{self.data(), ScalarType::Float64, dense};
  triangle(s, x, x, 1, true);
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) {
      const size_t at = static_cast<size_t>(i * C + j);
      ASSERT_EQ(self[at], j - i <= 1 ? in[at] : 0.0);
    }
  }
  set_num_threads(saved);
}

// triangle against triangle_ref on random views of every dtype: byte for
// byte, the whole output buffer (so nothing outside the view is written).
TEST(Triangle, MatchesReferenceOnRandomViews) {
  using namespace testutil;
  const int saved = num_threads();
  set_num_threads(3);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng(seed);
    Shape shape = random_shape(rng);
    if (shape.ndim < 2) {
      shape.ndim = 2;
      shape.sizes[0] = uniform(rng, 1, 40);
      shape.sizes[1] = uniform(rng, 1, 40);
    }
    const ScalarType type = kAllTypes[uniform(rng, 0, std::size(kAllTypes) - 1)];
    const ViewLayout in_layout = random_layout(shape, rng, false), out_layout = random_layout(shape, rng, false);
    Buffer in(type, in_layout.span), got(type, out_layout.span);
    fill_random(in, rng, false);
    fill_random(got, rng, false);
    Buffer want = got;
    const int64_t diagonal = uniform(rng, -4, 4);
    const bool lower = chance(rng, 0.5);
    const Operand src{in.element(in_layout.offset), type, in_layout.strides};
    triangle(shape, Operand{got.element(out_layout.offset), type, out_layout.strides}, src, diagonal, lower);
    triangle_ref(shape, Operand{want.element(out_layout.offset), type, out_layout.strides}, src, diagonal, lower);
    ASSERT_TRUE(same_buffers(got, want)) << "seed " << seed << " " << describe(shape, out_layout.strides);
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace mlu::kernels
