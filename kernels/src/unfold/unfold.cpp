#include "mlu_kernels/unfold.h"

#include <algorithm>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

void unfold_backward(ScalarType type, void* grad_in, const void* grad, int64_t outer, int64_t length, int64_t inner,
                     int64_t windows, int64_t size, int64_t step) {
  detail::VerboseCall call("unfold_backward");
  if (call) {
    call.describe(type, "outer%lld length%lld inner%lld windows%lld", detail::lld(outer), detail::lld(length),
                  detail::lld(inner), detail::lld(windows));
  }
  detail::dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<T> || detail::is_complex_v<T>) {
      using A = detail::compute_t<T>;
      auto* out = static_cast<T*>(grad_in);
      const auto* in = static_cast<const T*>(grad);
      const int64_t row = length * inner;
      // One slice of the outer dim per task: its windows are added into an
      // accumulator row window by window (increasing i, so every position
      // sums its windows in increasing order), then written once.
      parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, windows * size * inner)),
                   [&](int64_t lo, int64_t hi) {
                     thread_local std::vector<A> acc;
                     acc.resize(static_cast<size_t>(row));
                     for (int64_t o = lo; o < hi; ++o) {
                       std::fill(acc.begin(), acc.end(), A{});
                       for (int64_t i = 0; i < windows; ++i) {
                         const T* window = in + (o * windows + i) * inner * size;
                         A* at = acc.data() + i * step * inner;
                         for (int64_t q = 0; q < inner; ++q) {
                           for (int64_t t = 0; t < size; ++t) at[t * inner + q] += detail::widen(window[q * size + t]);
                         }
                       }
                       T* dst = out + o * row;
                       for (int64_t e = 0; e < row; ++e) dst[e] = detail::convert<T>(acc[static_cast<size_t>(e)]);
                     }
                   });
    }
  });
}

}  // namespace mlu::kernels
