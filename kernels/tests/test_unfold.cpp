// unfold_backward against unfold_backward_ref: random window counts, sizes
// and steps (overlapping and not, positions no window covers), every type it
// takes, split over several threads. The same sums in the same order: byte
// for byte.
#include "mlu_kernels/unfold.h"

#include <gtest/gtest.h>

#include "mlu_kernels/parallel.h"
#include "random_views.h"

namespace mlu::kernels {
namespace {

TEST(Unfold, BackwardMatchesReference) {
  using namespace testutil;
  const int saved = num_threads();
  set_num_threads(3);
  constexpr ScalarType kTypes[] = {ScalarType::Float16, ScalarType::BFloat16,     ScalarType::Float32,
                                   ScalarType::Float64, ScalarType::ComplexFloat, ScalarType::ComplexDouble};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Rng rng(seed);
    const ScalarType type = kTypes[uniform(rng, 0, std::size(kTypes) - 1)];
    const int64_t outer = uniform(rng, 0, 40), inner = uniform(rng, 1, 5), size = uniform(rng, 1, 6);
    const int64_t step = uniform(rng, 1, size + 1), windows = uniform(rng, 1, 7);
    const int64_t length = (windows - 1) * step + size + uniform(rng, 0, 2);
    Buffer grad(type, outer * windows * inner * size), got(type, outer * length * inner);
    fill_random(grad, rng, false);
    fill_random(got, rng, false);
    Buffer want = got;
    unfold_backward(type, got.data(), grad.data(), outer, length, inner, windows, size, step);
    unfold_backward_ref(type, want.data(), grad.data(), outer, length, inner, windows, size, step);
    ASSERT_TRUE(same_buffers(got, want)) << "seed " << seed << " outer " << outer << " length " << length << " inner "
                                         << inner << " windows " << windows << " size " << size << " step " << step;
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace mlu::kernels
