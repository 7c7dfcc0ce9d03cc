#include "mlu_kernels/unfold.h"

#include <algorithm>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {

void unfold_backward(ScalarType type, void* grad_in, const void* grad, int64_t outer, int64_t length, int64_t inner,
                     int64_t windows, int64_t size, int64_t step) {
  detail::dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<T> || detail::is_complex_v<T>) {
      using A = detail::compute_t<T>;
      auto* out = static_cast<T*>(grad_in);
      const auto* in = static_cast<const T*>(grad);
      const int64_t rows = outer * length;
      parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner * size / step)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t r = lo; r < hi; ++r) {
                       const int64_t o = r / length, p = r % length;
                       // Windows i with i * step <= p < i * step + size.
                       const int64_t first = p < size ? 0 : (p - size) / step + 1;
                       const int64_t last = std::min(windows - 1, p / step);
                       for (int64_t q = 0; q < inner; ++q) {
                         A sum{};
                         for (int64_t i = first; i <= last; ++i) {
                           sum += detail::widen(in[((o * windows + i) * inner + q) * size + (p - i * step)]);
                         }
                         out[r * inner + q] = detail::convert<T>(sum);
                       }
                     }
                   });
    }
  });
}

}  // namespace mlu::kernels
