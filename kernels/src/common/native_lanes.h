// GCC vector types of the ISA's register width, for folds written once for
// every ISA.
//
// Note [Folds in register-wide vectors]
// GCC lowers a generic vector wider than the ISA's registers piece by piece,
// and badly where it matters to folds: under AVX2 a 64-byte float vector's
// compare feeding a select (`mask ? a : b`) became scalar compares lane by
// lane (amax over 1M floats 30x slower than under AVX-512; perf annotate:
// vucomiss / seta / vpinsrd per lane), and an array of them as accumulators
// went through the stack in 16-byte moves (sum(dim=-1) at half the CPU's
// speed). Folds therefore accumulate in Native<T>::V, one register wide, with
// as many of them as the slots the fold needs (kSlots / kWidth). Where the
// slots' layout is kept, an element lands in the same slot on every ISA, so
// the rounding of a sum does not depend on the ISA. Included only by per-ISA
// translation units.
//
// A fold's last step, its lanes into one value, is a loop of scalar steps
// that each wait for the last (16 on AVX-512): on short rows (attention over
// 32 keys) it cost as much as the exps. fold_halves takes log2(lanes) vector
// steps instead, lanes l and l + n/2 first; where a sum's rounding must not
// depend on the ISA, fold the slots in their own order instead.
#pragma once

#include <cstddef>
#include <cstring>

namespace mlu::kernels::MLU_ISA_NS {

#if defined(__AVX512F__)
inline constexpr std::size_t kNativeVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr std::size_t kNativeVectorBytes = 32;
#else
inline constexpr std::size_t kNativeVectorBytes = 16;
#endif

template <class T, std::size_t Bytes>
struct VectorOf {
  typedef T V __attribute__((vector_size(Bytes)));
};

// The lanes of `v` (any vector of Bytes bytes of T) folded by `op`, which
// takes two vectors of any width (and two scalars).
template <class T, std::size_t Bytes, class Vector, class Op>
[[gnu::always_inline]] inline T fold_halves(const Vector& v, Op op) {
  static_assert(sizeof(Vector) == Bytes && Bytes >= 2 * sizeof(T));
  if constexpr (Bytes == 2 * sizeof(T)) {
    T lanes[2];
    std::memcpy(lanes, &v, sizeof lanes);
    return op(lanes[0], lanes[1]);
  } else {
    using Half = typename VectorOf<T, Bytes / 2>::V;
    Half low, high;
    std::memcpy(&low, &v, sizeof low);
    std::memcpy(&high, reinterpret_cast<const char*>(&v) + sizeof low, sizeof high);
    const Half folded = op(low, high);
    return fold_halves<T, Bytes / 2>(folded, op);
  }
}

// Fold operations for fold_halves: the sum, and the maximum that keeps NaN.
struct AddLanes {
  template <class A>
  A operator()(const A& a, const A& b) const {
    return a + b;
  }
};
struct MaxLanesKeepingNaN {
  template <class A>
  A operator()(const A& a, const A& b) const {
    return ((a != a) | (a > b)) ? a : b;
  }
};

template <class T>
struct Native {
  typedef T V __attribute__((vector_size(kNativeVectorBytes)));
  static constexpr int kWidth = static_cast<int>(kNativeVectorBytes / sizeof(T));
};

}  // namespace mlu::kernels::MLU_ISA_NS
