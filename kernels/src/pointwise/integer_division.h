// Integer division and remainder that cannot trap.
//
// Note [Integer overflow]
// The kernel library is compiled with -fwrapv (kernels/CMakeLists.txt):
// signed integer arithmetic wraps around in two's complement. PyTorch's CPU
// kernels add and multiply int32/int64 values in the signed type; overflow is
// undefined in C++ but wraps on every compiler PyTorch supports, and users
// see the wrapped values. -fwrapv makes that the definition here, so the
// kernels are free of undefined behaviour (UBSan builds check it) and compute
// the CPU's bits. (Spelling the wrap out through unsigned casts instead made
// GCC 12's vectorizer miscompile widening int8 -> int64 sums.)
// One operation still traps in hardware: INT_MIN / -1 raises SIGFPE on x86,
// which would kill the process from a device thread. These helpers give the
// wrapped quotient INT_MIN and the remainder 0 instead, as PyTorch's CPU
// floor division and remainder do.
#pragma once

#include <type_traits>

namespace mlu::kernels::detail {

// a / b and a % b for integers, b != 0.
template <class T>
constexpr T integer_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(-a);  // wraps (-fwrapv)
  }
  return static_cast<T>(a / b);
}

template <class T>
constexpr T integer_rem(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

}  // namespace mlu::kernels::detail
