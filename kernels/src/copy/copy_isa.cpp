// The copy kernel's pieces for one instruction set (Note [Per-ISA variants],
// table in copy_table.h): the register transposes of Note [Blocked transposing
// copies] where the ISA has them, and the reversed row copy, a plain loop the
// compiler vectorises for the ISA.
#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include "../common/convert.h"
#include "copy_table.h"
#include "../common/dispatch.h"
#include "register_transpose.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

// A reversed row (flip along the innermost dim): GCC vectorises it with a
// permute, in the ISA's vector width (16 bytes per step for the baseline,
// 32 for AVX2, 64 for AVX-512).
template <class To, class From>
inline void copy_reversed(To* __restrict d, const From* __restrict s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::convert<To>(s[-i]);
}

template <class To, class From>
void reversed_row(void* d, const void* s, int64_t n) {
  copy_reversed(static_cast<To*>(d), static_cast<const From*>(s), n);
}

detail::CopyKernels build_kernels() {
  detail::CopyKernels k{};
#if defined(__AVX512F__)
  k.transpose16 = isa_avx2::copy_kernels().transpose16;  // the avx2 variant's (register_transpose.h)
  k.transpose32 = {16, transpose_16x16_b32_avx512};
  k.transpose64 = {8, transpose_8x8_b64_avx512};
#elif defined(__AVX2__)
  k.transpose16 = {16, transpose_16x16_b16_avx2};
  k.transpose32 = {8, transpose_8x8_b32_avx2};
  k.transpose64 = {4, transpose_4x4_b64_avx2};
#endif
  k.reversed_bits[0] = reversed_row<uint8_t, uint8_t>;
  k.reversed_bits[1] = reversed_row<uint16_t, uint16_t>;
  k.reversed_bits[2] = reversed_row<uint32_t, uint32_t>;
  k.reversed_bits[3] = reversed_row<uint64_t, uint64_t>;
  k.reversed_bits[4] = reversed_row<detail::Bits128, detail::Bits128>;
  // Every pair, as copy.cpp's dispatch instantiates them (it takes this path
  // only with a complex type on a side; other conversions run on the
  // pointwise engine).
  for (int to = 0; to < detail::kNumScalarTypes; ++to) {
    for (int from = 0; from < detail::kNumScalarTypes; ++from) {
      detail::dispatch_convertible(static_cast<ScalarType>(to), [&](auto to_tag) {
        detail::dispatch_convertible(static_cast<ScalarType>(from), [&](auto from_tag) {
          k.reversed[to][from] = reversed_row<typename decltype(to_tag)::type, typename decltype(from_tag)::type>;
        });
      });
    }
  }
  return k;
}

}  // namespace

const detail::CopyKernels& copy_kernels() {
  static const detail::CopyKernels kernels = build_kernels();
  return kernels;
}

}  // namespace mlu::kernels::MLU_ISA_NS
