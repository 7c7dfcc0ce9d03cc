// The scalar reference of unfold.h: every position of grad_in on its own,
// summing the windows that cover it in increasing order.
#include <cstdint>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/unfold.h"

namespace mlu::kernels {

void unfold_backward_ref(ScalarType type, void* grad_in, const void* grad, int64_t outer, int64_t length, int64_t inner,
                         int64_t windows, int64_t size, int64_t step) {
  detail::dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<T> || detail::is_complex_v<T>) {
      using A = detail::compute_t<T>;
      auto* out = static_cast<T*>(grad_in);
      const auto* in = static_cast<const T*>(grad);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t p = 0; p < length; ++p) {
          for (int64_t q = 0; q < inner; ++q) {
            A sum{};
            for (int64_t i = 0; i < windows; ++i) {
              const int64_t t = p - i * step;
              if (t >= 0 && t < size) sum += detail::widen(in[((o * windows + i) * inner + q) * size + t]);
            }
            out[(o * length + p) * inner + q] = detail::convert<T>(sum);
          }
        }
      }
    }
  });
}

}  // namespace mlu::kernels
