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
#pragma once

#include <cstddef>

namespace mlu::kernels::MLU_ISA_NS {

#if defined(__AVX512F__)
inline constexpr std::size_t kNativeVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr std::size_t kNativeVectorBytes = 32;
#else
inline constexpr std::size_t kNativeVectorBytes = 16;
#endif

template <class T>
struct Native {
  typedef T V __attribute__((vector_size(kNativeVectorBytes)));
  static constexpr int kWidth = static_cast<int>(kNativeVectorBytes / sizeof(T));
};

}  // namespace mlu::kernels::MLU_ISA_NS
