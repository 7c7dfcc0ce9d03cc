#include "mlu_kernels/sequence.h"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {

namespace {

template <class Value, class F>
void generate(void* out, ScalarType dtype, int64_t n, int64_t stride, F&& value_at) {
  detail::dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<T>) {
      T* o = static_cast<T*>(out);
      parallel_for(0, n, 65536, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i * stride] = detail::convert<T>(static_cast<Value>(value_at(i)));
      });
    }
  });
}

}  // namespace

void arange(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double step) {
  generate<double>(out, dtype, n, stride, [=](int64_t i) { return start + static_cast<double>(i) * step; });
}

void arange_int(void* out, ScalarType dtype, int64_t n, int64_t stride, int64_t start, int64_t step) {
  generate<int64_t>(out, dtype, n, stride, [=](int64_t i) { return start + i * step; });
}

void linspace(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double end) {
  if (n == 1) {
    generate<double>(out, dtype, 1, stride, [=](int64_t) { return start; });
    return;
  }
  const double step = (end - start) / static_cast<double>(n - 1);
  const int64_t halfway = n / 2;
  generate<double>(out, dtype, n, stride, [=](int64_t i) {
    return i < halfway ? start + step * static_cast<double>(i) : end - step * static_cast<double>(n - i - 1);
  });
}

void padding_source_index(int64_t* out, int64_t n, int64_t before, int64_t after, bool reflect) {
  const int64_t count = before + n + after;
  for (int64_t o = 0; o < count; ++o) {
    const int64_t i = o - before;
    out[o] = reflect ? (n - 1) - std::abs((n - 1) - std::abs(i)) : std::clamp<int64_t>(i, 0, n - 1);
  }
}

}  // namespace mlu::kernels
