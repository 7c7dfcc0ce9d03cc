// The pointwise engine, compiled once per ISA (CMake builds this file three
// times with -DMLU_ISA_NS=isa_<name> and that ISA's -m flags).
//
// Note [Block pipeline]
// A range of the iteration space is walked row by row (the innermost dim)
// and each row in blocks of kBlock elements. Per block, an input that already
// is contiguous in the compute type is used in place; any other (another
// dtype, strided, broadcast) is first converted into a stack buffer. The op
// then runs over plain contiguous arrays (auto-vectorised for this ISA, or a
// SLEEF body from vector_math.h), and the result goes straight to the output
// when that is contiguous in the result type, else through a buffer and a
// converting store. So any dtype mix and any strides take one code path, and
// the common case (same dtype, contiguous) copies nothing.
#include "../intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "../convert.h"
#include "../dispatch.h"
#include "ops.h"
#include "table.h"
#include "vector_math.h"

namespace mlu::kernels::MLU_ISA_NS {

namespace {

template <class T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return ScalarType::Bool;
  if constexpr (std::is_same_v<T, uint8_t>) return ScalarType::UInt8;
  if constexpr (std::is_same_v<T, int8_t>) return ScalarType::Int8;
  if constexpr (std::is_same_v<T, int16_t>) return ScalarType::Int16;
  if constexpr (std::is_same_v<T, int32_t>) return ScalarType::Int32;
  if constexpr (std::is_same_v<T, int64_t>) return ScalarType::Int64;
  if constexpr (std::is_same_v<T, float>) return ScalarType::Float32;
  if constexpr (std::is_same_v<T, double>) return ScalarType::Float64;
}

// Float16 <-> float with the F16C instructions, 8 at a time (exact, and
// round-to-nearest-even like half_from_float; only NaN payloads may differ).
// Return false, doing nothing, where this ISA has no F16C.
inline bool half_to_float_f16c([[maybe_unused]] float* dst, [[maybe_unused]] const Half* src, int64_t n) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = to_float(src[i]);
  return true;
#else
  (void)n;
  return false;
#endif
}

inline bool float_to_half_f16c([[maybe_unused]] Half* dst, [[maybe_unused]] const float* src, int64_t n) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = half_from_float(src[i]);
  return true;
#else
  (void)n;
  return false;
#endif
}

// BFloat16 -> float: the 16 bits moved to the top of a 32-bit lane, 16 (8)
// at a time (exact; GCC does not vectorise the scalar conversion's loop).
// Returns false, doing nothing, where this ISA has no 32-bit lane shifts.
inline bool bfloat16_to_float_simd([[maybe_unused]] float* dst, [[maybe_unused]] const BFloat16* src, int64_t n) {
#if defined(__AVX512F__)
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  for (; i < n; ++i) dst[i] = to_float(src[i]);
  return true;
#elif defined(__AVX2__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  for (; i < n; ++i) dst[i] = to_float(src[i]);
  return true;
#else
  (void)n;
  return false;
#endif
}

// Float -> bfloat16 with AVX512-BF16's vcvtneps2bf16, 16 at a time, where
// the CPU has it (this host does; checked at run time, the rest of the TU
// does not assume it). It rounds to nearest even like bfloat16_from_float
// but treats denormal inputs as zero: lanes with 0 < |x| < FLT_MIN (rare) are
// redone with bfloat16_from_float. Only NaN payloads may differ.
#if defined(__AVX512F__)
[[gnu::target("avx512bf16")]] void float_to_bfloat16_avx512bf16(BFloat16* dst, const float* src, int64_t n) {
  const __m512 min_normal = _mm512_set1_ps(std::numeric_limits<float>::min());
  const __m512 zero = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(src + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
    const __mmask16 denormal = _mm512_cmp_ps_mask(_mm512_abs_ps(v), min_normal, _CMP_LT_OQ) &
                               _mm512_cmp_ps_mask(v, zero, _CMP_NEQ_OQ);
    if (denormal != 0) [[unlikely]] {
      for (int k = 0; k < 16; ++k) {
        if ((denormal >> k) & 1) dst[i + k] = bfloat16_from_float(src[i + k]);
      }
    }
  }
  for (; i < n; ++i) dst[i] = bfloat16_from_float(src[i]);
}
const bool kHasAvx512Bf16 = __builtin_cpu_supports("avx512bf16");
#endif

inline bool float_to_bfloat16_native([[maybe_unused]] BFloat16* dst, [[maybe_unused]] const float* src,
                                     [[maybe_unused]] int64_t n) {
#if defined(__AVX512F__)
  if (kHasAvx512Bf16) {
    float_to_bfloat16_avx512bf16(dst, src, n);
    return true;
  }
#endif
  return false;
}

// Converts n elements of dtype `type` at `src` (element stride `stride`) into T.
template <class T>
[[gnu::noinline]] void load_block(T* __restrict dst, const void* src, ScalarType type,
                                  int64_t stride, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (type == ScalarType::Float16 && stride == 1 && half_to_float_f16c(dst, static_cast<const Half*>(src), n)) {
      return;
    }
    if (type == ScalarType::BFloat16 && stride == 1 &&
        bfloat16_to_float_simd(dst, static_cast<const BFloat16*>(src), n)) {
      return;
    }
  }
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* s = static_cast<const S*>(src);
    if (stride == 0) {
      std::fill_n(dst, n, detail::convert<T>(s[0]));
    } else if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert<T>(s[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert<T>(s[i * stride]);
    }
  });
}

template <class R>
[[gnu::noinline]] void store_block(void* dst, ScalarType type, int64_t stride,
                                   const R* __restrict src, int64_t n) {
  if constexpr (std::is_same_v<R, float>) {
    if (type == ScalarType::Float16 && stride == 1 && float_to_half_f16c(static_cast<Half*>(dst), src, n)) return;
    if (type == ScalarType::BFloat16 && stride == 1 &&
        float_to_bfloat16_native(static_cast<BFloat16*>(dst), src, n)) {
      return;
    }
  }
  detail::dispatch(type, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* d = static_cast<D*>(dst);
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) d[i] = detail::convert<D>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * stride] = detail::convert<D>(src[i]);
    }
  });
}

// Runs the op over contiguous arrays of one block.
template <class Op, class T, int N, class R>
inline void run_block(int64_t n, R* __restrict out, const T* const* in, const OpParams& params) {
  const OpParams p = params;  // a local copy: the stores cannot alias it
  if constexpr (VectorBody<Op, T>::kHas) {
    VectorBody<Op, T>::run(n, out, in, p);
  } else if constexpr (std::is_same_v<T, bool>) {
    // GCC does not vectorise loops that load `bool` (the byte must be 0 or
    // 1); the same loop on bytes, tested against 0, it does.
    auto* o = reinterpret_cast<uint8_t*>(out);
    const auto* a = reinterpret_cast<const uint8_t*>(in[0]);
    if constexpr (N == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(Op::template f<bool>(p, a[i] != 0));
    } else if constexpr (N == 2) {
      const auto* b = reinterpret_cast<const uint8_t*>(in[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(Op::template f<bool>(p, a[i] != 0, b[i] != 0));
    } else {
      const auto* b = reinterpret_cast<const uint8_t*>(in[1]);
      const auto* c = reinterpret_cast<const uint8_t*>(in[2]);
      for (int64_t i = 0; i < n; ++i) {
        o[i] = static_cast<uint8_t>(Op::template f<bool>(p, a[i] != 0, b[i] != 0, c[i] != 0));
      }
    }
  } else if constexpr (N == 1) {
    const T* a = in[0];
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template f<T>(p, a[i]);
  } else if constexpr (N == 2) {
    const T* a = in[0];
    const T* b = in[1];
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template f<T>(p, a[i], b[i]);
  } else {
    const T* a = in[0];
    const T* b = in[1];
    const T* c = in[2];
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template f<T>(p, a[i], b[i], c[i]);
  }
}

// Visits [begin, end) of the iteration space as row segments:
// segment(offsets, length), offsets[k] in elements of operand k.
template <int K, class F>
inline void for_each_segment(const Shape& shape, const Operand* operands, int64_t begin,
                             int64_t end, F&& segment) {
  const int last = shape.ndim - 1;
  int64_t index[kMaxDims] = {};
  int64_t offsets[K] = {};
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % shape.sizes[d];
    rest /= shape.sizes[d];
    for (int k = 0; k < K; ++k) offsets[k] += index[d] * operands[k].strides.v[d];
  }
  int64_t remaining = end - begin;
  while (remaining > 0) {
    const int64_t len = std::min(shape.sizes[last] - index[last], remaining);
    segment(static_cast<const int64_t*>(offsets), len);
    remaining -= len;
    if (remaining == 0) return;
    // The row is finished (remaining > 0): back to its start, then step the
    // outer dims odometer style.
    for (int k = 0; k < K; ++k) offsets[k] -= index[last] * operands[k].strides.v[last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      for (int k = 0; k < K; ++k) offsets[k] += operands[k].strides.v[d];
      if (++index[d] < shape.sizes[d]) break;
      for (int k = 0; k < K; ++k) offsets[k] -= operands[k].strides.v[d] * shape.sizes[d];
      index[d] = 0;
    }
  }
}

template <class Op, class T, int N>
void run_range(const Shape& shape, const Operand* operands, const OpParams& params,
               int64_t begin, int64_t end) {
  using R = std::conditional_t<ops::bool_result<Op>(), bool, T>;
  constexpr int K = N + 1;
  const int last = shape.ndim - 1;
  int64_t inner[K];
  bool direct[K];
  for (int k = 0; k < K; ++k) {
    inner[k] = operands[k].strides.v[last];
    const ScalarType want = k == 0 ? dtype_of<R>() : dtype_of<T>();
    direct[k] = inner[k] == 1 && operands[k].dtype == want;
  }
  for_each_segment<K>(shape, operands, begin, end, [&](const int64_t* offsets, int64_t len) {
    for (int64_t j = 0; j < len; j += kBlock) {
      const int64_t n = std::min(kBlock, len - j);
      if constexpr (std::is_same_v<Op, ops::Copy>) {
        // A conversion with one side already in the compute type converts
        // straight between the operands (no copy through a block in between).
        const int64_t out_at = offsets[0] + j * inner[0], in_at = offsets[1] + j * inner[1];
        auto* out_base = static_cast<char*>(operands[0].data) + out_at * static_cast<int64_t>(element_size(operands[0].dtype));
        const auto* in_base = static_cast<const char*>(operands[1].data) +
                              in_at * static_cast<int64_t>(element_size(operands[1].dtype));
        if (direct[0] && !direct[1]) {
          load_block(reinterpret_cast<T*>(out_base), in_base, operands[1].dtype, inner[1], n);
          continue;
        }
        if (direct[1] && !direct[0]) {
          store_block(out_base, operands[0].dtype, inner[0], reinterpret_cast<const T*>(in_base), n);
          continue;
        }
      }
      T buffers[N][kBlock];
      const T* in[N];
      for (int k = 0; k < N; ++k) {
        const Operand& op = operands[k + 1];
        const int64_t at = offsets[k + 1] + j * inner[k + 1];
        if (direct[k + 1]) {
          in[k] = static_cast<const T*>(op.data) + at;
        } else {
          const char* base = static_cast<const char*>(op.data) +
                             at * static_cast<int64_t>(element_size(op.dtype));
          load_block(buffers[k], base, op.dtype, inner[k + 1], n);
          in[k] = buffers[k];
        }
      }
      const int64_t out_at = offsets[0] + j * inner[0];
      if (direct[0]) {
        run_block<Op, T, N>(n, static_cast<R*>(operands[0].data) + out_at, in, params);
      } else {
        R result[kBlock];
        run_block<Op, T, N>(n, result, in, params);
        char* base = static_cast<char*>(operands[0].data) +
                     out_at * static_cast<int64_t>(element_size(operands[0].dtype));
        store_block(base, operands[0].dtype, inner[0], result, n);
      }
    }
  });
}

constexpr int F = 1, I = 2, B = 4;
constexpr int FI = F | I, FIB = F | I | B, IB = I | B;

template <class Op, int N, int Kinds>
void fill_row(detail::PointwiseRange* row) {
  using namespace detail;
  if constexpr (Kinds & B) row[kComputeBool] = &run_range<Op, bool, N>;
  if constexpr (Kinds & I) {
    row[kComputeUInt8] = &run_range<Op, uint8_t, N>;
    row[kComputeInt8] = &run_range<Op, int8_t, N>;
    row[kComputeInt16] = &run_range<Op, int16_t, N>;
    row[kComputeInt32] = &run_range<Op, int32_t, N>;
    row[kComputeInt64] = &run_range<Op, int64_t, N>;
  }
  if constexpr (Kinds & F) {
    row[kComputeFloat] = &run_range<Op, float, N>;
    row[kComputeDouble] = &run_range<Op, double, N>;
  }
}

detail::PointwiseTable build_table() {
  detail::PointwiseTable table{};
#define MLU_POINTWISE_ROW(name, arity, kinds) \
  fill_row<ops::name, arity, kinds>(table.fn[static_cast<int>(PointwiseOp::name)]);
  MLU_POINTWISE_OPS(MLU_POINTWISE_ROW)
#undef MLU_POINTWISE_ROW
  return table;
}

}  // namespace

const detail::PointwiseTable& pointwise_table() {
  static const detail::PointwiseTable table = build_table();
  return table;
}

}  // namespace mlu::kernels::MLU_ISA_NS
