// The gather and scatter row routines for one instruction set (Note [Per-ISA
// variants], table in index_table.h): gathers along contiguous rows (AVX-512's
// vector gathers, Note [Vector gathers], else Note [Check, then copy]) and the
// contiguous-row steps of the scatters, plain loops the compiler vectorises
// for the ISA.
#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <bit>
#include <cstring>
#include <type_traits>

#include "../common/dispatch.h"
#include "index_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

#if defined(__AVX512F__)
// Note [Vector gathers]
// A gather along a contiguous row of 4- or 8-byte elements with a contiguous
// index row (torch.gather's usual case) takes AVX-512's gather instructions:
// 16 elements each for 4-byte elements (two groups of 8 int64 indices checked,
// then narrowed to 32 bits), else 8. Vector gathers beat the scalar loop even
// after Note [Check, then copy], 16 lanes beat 8, and one unsigned range
// compare per group helped further (timings: docs/bench_kernels.md). As in
// the scalar loop, an out-of-range index reads element 0 and the caller
// reports it afterwards. Only the AVX-512 variant of this file has them;
// other element sizes, and the other ISAs, take the baseline's loop (Note
// [Check, then copy]).
// Gathers the whole groups in [0, len); returns how many elements it did and
// sets `bad` if some index was out of [0, size).
template <class T, class I>
int64_t gather_groups(T* __restrict d, const T* __restrict from, const I* __restrict idx, int64_t len, int64_t size,
                      bool& bad) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  const __m512i bound = _mm512_set1_epi64(size);
  __mmask8 bad_lanes = 0;
  int64_t j = 0;
  if constexpr (sizeof(T) == 4) {
    // 16 lanes per gather: two groups of 8 indices narrowed to 32 bits once
    // checked (size < 2^31 here: a row of 4-byte elements indexed by int32
    // offsets of at most 4 * size bytes is all vpgatherdd can address).
    if (size <= (int64_t{1} << 29)) {
      for (; j + 16 <= len; j += 16) {
        __m512i lo, hi;
        if constexpr (sizeof(I) == 8) {
          lo = _mm512_loadu_si512(idx + j);
          hi = _mm512_loadu_si512(idx + j + 8);
        } else {
          lo = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + j)));
          hi = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + j + 8)));
        }
        const __mmask8 ok_lo = _mm512_cmplt_epu64_mask(lo, bound), ok_hi = _mm512_cmplt_epu64_mask(hi, bound);
        bad_lanes |= static_cast<__mmask8>(~(ok_lo & ok_hi));
        const __m256i lo32 = _mm512_cvtepi64_epi32(_mm512_maskz_mov_epi64(ok_lo, lo));
        const __m256i hi32 = _mm512_cvtepi64_epi32(_mm512_maskz_mov_epi64(ok_hi, hi));
        const __m512i i32 = _mm512_inserti64x4(_mm512_castsi256_si512(lo32), hi32, 1);
        _mm512_storeu_si512(d + j, _mm512_i32gather_epi32(i32, from, 4));
      }
    }
  }
  for (; j + 8 <= len; j += 8) {
    __m512i i;
    if constexpr (sizeof(I) == 8) {
      i = _mm512_loadu_si512(idx + j);
    } else {
      i = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + j)));
    }
    const __mmask8 ok = _mm512_cmplt_epu64_mask(i, bound);  // negative: huge as unsigned
    bad_lanes |= static_cast<__mmask8>(~ok);
    i = _mm512_maskz_mov_epi64(ok, i);
    if constexpr (sizeof(T) == 4) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + j), _mm512_i64gather_epi32(i, from, 4));
    } else {
      _mm512_storeu_si512(d + j, _mm512_i64gather_epi64(i, from, 8));
    }
  }
  bad |= bad_lanes != 0;
  return j;
}

// A GatherRow (index_table.h) on vector gathers, the rest of the row in a
// scalar loop.
template <class T, class I>
bool vector_gather_row(void* dst, const void* src, const void* index, int64_t len, int64_t size) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict from = static_cast<const T*>(src);
  const I* __restrict idx = static_cast<const I*>(index);
  bool bad = false;
  int64_t j = gather_groups(d, from, idx, len, size, bad);
  for (; j < len; ++j) {
    const int64_t i = static_cast<int64_t>(idx[j]);
    const bool ok = (i >= 0) & (i < size);
    bad |= !ok;
    d[j] = from[ok ? i : 0];
  }
  return bad;
}
#endif  // __AVX512F__

#if !defined(__AVX2__)
// d[j] = from[idx[j]] over a contiguous row; returns whether some index was
// out of [0, size) (size > 0; such an element gets from[0]).
// Note [Check, then copy]: without vector gathers, the row's indices are
// first checked in one branch-free pass, then copied by a loop that only
// loads and stores, which runs clearly faster than one loop with the checks
// interleaved in the copy (measured: docs/bench_kernels.md). Compiled for the
// baseline ISA only: the AVX2 and AVX-512 tables point at this copy (the
// loop compiled for AVX2 measured slower).
template <class T, class I>
bool gather_row_contiguous(T* __restrict d, const T* __restrict from, const I* __restrict idx, int64_t len,
                           int64_t size) {
  if (detail::any_out_of_range(idx, 1, len, size)) [[unlikely]] {
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = static_cast<int64_t>(idx[j]);
      d[j] = from[(i >= 0) & (i < size) ? i : 0];
    }
    return true;
  }
  for (int64_t j = 0; j < len; ++j) d[j] = from[idx[j]];
  return false;
}

template <class T, class I>
bool gather_row(void* d, const void* from, const void* idx, int64_t len, int64_t size) {
  return gather_row_contiguous(static_cast<T*>(d), static_cast<const T*>(from), static_cast<const I*>(idx), len,
                               size);
}
#endif  // !__AVX2__

// A destination row back from its float accumulators (Note [Scatter
// accumulation in float], index.cpp): an element whose float did not change
// keeps its bits (NaN payloads included), the others round. A select, then
// an unconditional store, so the loop vectorises.
template <class T>
void store_row_back(T* __restrict d, const float* __restrict acc, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const T before = d[k], after = detail::convert<T>(acc[k]);
    const bool same = std::bit_cast<uint32_t>(detail::widen(before)) == std::bit_cast<uint32_t>(acc[k]);
    d[k] = T{static_cast<uint16_t>(same ? before.x : after.x)};
  }
}

// One contiguous slice's update in its own type: d + alpha * v (Add) or
// d * v (Mul), rounded once per update as the pointwise engine does (no FMA
// contraction, CMakeLists.txt: the ISAs only change the vector width, so the
// rounding is the same and only the speed changes; A/B timings of the AVX2
// variant against the baseline in docs/bench_kernels.md).
template <ScatterOp kOp, class T>
void update_slice(T* __restrict d, const T* __restrict v, int64_t n, T alpha) {
  for (int64_t q = 0; q < n; ++q) d[q] = kOp == ScatterOp::Add ? static_cast<T>(d[q] + alpha * v[q]) : d[q] * v[q];
}

// Note [Scatter updates from a float row] (index_table.h) on unit strides.
template <ScatterOp Op, class I, class T>
bool prepare_contiguous_updates(const I* __restrict at, const T* __restrict values, int64_t len, int64_t size,
                                float alpha, float* __restrict operand) {
  return detail::prepare_updates<Op>(at, 1, values, 1, len, size, alpha, operand);
}

template <class T>
detail::FloatRowFns<T> float_row_fns() {
  detail::FloatRowFns<T> fns{};
  fns.store_row_back = store_row_back<T>;
  fns.prepare_int32[0] = prepare_contiguous_updates<ScatterOp::Add, int32_t, T>;
  fns.prepare_int32[1] = prepare_contiguous_updates<ScatterOp::Mul, int32_t, T>;
  fns.prepare_int64[0] = prepare_contiguous_updates<ScatterOp::Add, int64_t, T>;
  fns.prepare_int64[1] = prepare_contiguous_updates<ScatterOp::Mul, int64_t, T>;
  return fns;
}

detail::IndexKernels build_kernels() {
  detail::IndexKernels k{};
#if defined(__AVX2__)
  // The baseline's loops (Note [Check, then copy]); AVX-512 replaces some below.
  std::memcpy(k.gather_row, isa_baseline::index_kernels().gather_row, sizeof(k.gather_row));
#else
  for (const size_t element_size : {1, 2, 4, 8, 16}) {
    detail::dispatch_bits(element_size, [&](auto tag) {
      using T = typename decltype(tag)::type;
      k.gather_row[std::countr_zero(element_size)][0] = gather_row<T, int32_t>;
      k.gather_row[std::countr_zero(element_size)][1] = gather_row<T, int64_t>;
    });
  }
#endif
#if defined(__AVX512F__)
  k.gather_row[2][0] = vector_gather_row<uint32_t, int32_t>;
  k.gather_row[2][1] = vector_gather_row<uint32_t, int64_t>;
  k.gather_row[3][0] = vector_gather_row<uint64_t, int32_t>;
  k.gather_row[3][1] = vector_gather_row<uint64_t, int64_t>;
#endif
  k.update_float[0] = update_slice<ScatterOp::Add, float>;
  k.update_float[1] = update_slice<ScatterOp::Mul, float>;
  k.update_double[0] = update_slice<ScatterOp::Add, double>;
  k.update_double[1] = update_slice<ScatterOp::Mul, double>;
  k.half = float_row_fns<Half>();
  k.bfloat16 = float_row_fns<BFloat16>();
  return k;
}

}  // namespace

const detail::IndexKernels& index_kernels() {
  static const detail::IndexKernels kernels = build_kernels();
  return kernels;
}

}  // namespace mlu::kernels::MLU_ISA_NS
