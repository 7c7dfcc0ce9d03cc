#include "mlu_kernels/sequence.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/type_arithmetic.h"
#include "../common/verbose_call.h"

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
  detail::VerboseCall call("arange");
  if (call) call.describe(dtype, "n%lld", detail::lld(n));
  generate<double>(out, dtype, n, stride, [=](int64_t i) { return start + static_cast<double>(i) * step; });
}

void arange_int(void* out, ScalarType dtype, int64_t n, int64_t stride, int64_t start, int64_t step) {
  detail::VerboseCall call("arange_int");
  if (call) call.describe(dtype, "n%lld", detail::lld(n));
  generate<int64_t>(out, dtype, n, stride, [=](int64_t i) { return start + i * step; });
}

// Note [linspace as the CPU rounds]
// The CPU's linspace_kernel (RangeFactoriesKernel.cpp, a serial loop since
// upstream dropped its vector form) computes in the dtype's own arithmetic:
// in float for Float32, and for Float16 / BFloat16 every + - * / in float
// rounded to 16 bits (the c10::Half / c10::BFloat16 operators, which convert
// an integer operand to the type first). step = (end - start) / (n - 1).
// Computing in double and rounding once (as before) was closer to the exact
// values but differed from the CPU by up to a few 16-bit ulps. Float32 and
// Float64 are computed with a fused multiply-add where the CPU's kernel is
// (`fused`): its AVX2 / AVX512 builds compile with FMA and contract
// start + step * i; the 16-bit operators round between the two, so nothing
// fuses there.
void linspace(void* out, ScalarType dtype, int64_t n, int64_t stride, double start_value, double end_value,
              bool fused) {
  detail::VerboseCall call("linspace");
  if (call) call.describe(dtype, "n%lld", detail::lld(n));
  call.path(fused ? "fused" : "rounded");
  detail::dispatch_floating(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using H = detail::TypeArithmetic<T>;
    T* o = static_cast<T*>(out);
    const T start = H::from(start_value), end = H::from(end_value);
    if (n == 1) {
      o[0] = start;
      return;
    }
    const T step = H::div(H::sub(end, start), H::from(n - 1));
    const int64_t halfway = n / 2;
    parallel_for(0, n, 65536, [&](int64_t b, int64_t e) {
      if constexpr (std::is_floating_point_v<T>) {
        if (fused) {
          for (int64_t i = b; i < e; ++i) {
            o[i * stride] = i < halfway ? std::fma(step, static_cast<T>(i), start)
                                        : std::fma(-step, static_cast<T>(n - i - 1), end);
          }
          return;
        }
      }
      for (int64_t i = b; i < e; ++i) {
        o[i * stride] = i < halfway ? H::add(start, H::mul(step, H::from(i)))
                                    : H::sub(end, H::mul(step, H::from(n - i - 1)));
      }
    });
  });
}

void padding_source_index(int64_t* out, int64_t n, int64_t before, int64_t after, bool reflect) {
  detail::VerboseCall call("padding_source_index");
  if (call) {
    call.describe(ScalarType::Int64, "n%lld before%lld after%lld", detail::lld(n), detail::lld(before),
                  detail::lld(after));
  }
  const int64_t count = before + n + after;
  for (int64_t o = 0; o < count; ++o) {
    const int64_t i = o - before;
    out[o] = reflect ? (n - 1) - std::abs((n - 1) - std::abs(i)) : std::clamp<int64_t>(i, 0, n - 1);
  }
}

}  // namespace mlu::kernels
