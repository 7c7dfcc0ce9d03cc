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
// the common case (same dtype, contiguous) copies nothing. (Contiguous
// half-precision operands take a shorter path: Note [Register-converted
// 16-bit floats].)
#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "float16_convert.h"
#include "ops.h"
#include "pointwise_table.h"
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

// Converts n elements of dtype `type` at `src` (element stride `stride`) into T.
template <class T>
[[gnu::noinline]] void load_block(T* __restrict dst, const void* src, ScalarType type,
                                  int64_t stride, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (type == ScalarType::Float16 && stride == 1 && widen_block(dst, static_cast<const Half*>(src), n)) {
      return;
    }
    if (type == ScalarType::BFloat16 && stride == 1 &&
        widen_block(dst, static_cast<const BFloat16*>(src), n)) {
      return;
    }
  }
  detail::dispatch_convertible(type, [&](auto tag) {
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
    if (type == ScalarType::Float16 && stride == 1 && narrow_block(static_cast<Half*>(dst), src, n)) return;
    if (type == ScalarType::BFloat16 && stride == 1 && narrow_block(static_cast<BFloat16*>(dst), src, n)) return;
  }
  detail::dispatch_convertible(type, [&](auto tag) {
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

// Note [Register-converted 16-bit floats]
// An op computed in float whose output and inputs are contiguous bfloat16 (or
// all float16) along the rows -- the common case of a half-precision model --
// skips the block pipeline: two float vectors at a time, the inputs are
// widened, the op applied and the result rounded back (float16_convert.h's
// Lanes), so every byte is loaded and stored once instead of passing through
// three float blocks. An input constant along a row (a scalar, a broadcast
// column) may have any dtype: it is converted once per row. The conversions
// are those of the block pipeline and the op is the same scalar expression on
// the same values, so results are identical (NaN payloads aside). The tail
// goes through zero-padded vectors. Ops with a SLEEF body keep the pipeline:
// their arithmetic, not the conversions, dominates; so does the baseline ISA,
// which has no vector conversions.
template <class Op>
constexpr bool kRegisterConverted = kHasLanes && !VectorBody<Op, float>::kHas && !ops::bool_result<Op>() &&
                                    !std::is_same_v<Op, ops::Copy>;

// One row: in[k] points at n contiguous H, or is null for an input that is
// constant along the row (broadcast, or a scalar), whose value `fill[k]` is.
template <class Op, int N, class H>
void run_row_converted(int64_t n, H* out, const H* const* in, const float* fill, const OpParams& params) {
  const OpParams p = params;  // a local copy: the stores cannot alias it
  // Two vectors per step: as fast as one, and the loop vectoriser (not SLP,
  // which does not if-convert) handles the op's loop.
  constexpr int W = Lanes<H>::W, C = 2 * W;
  float x[N][C], r[C];
  for (int k = 0; k < N; ++k) {
    if (in[k] == nullptr) std::fill_n(x[k], C, fill[k]);
  }
  auto chunk = [&](const H* const* src, H* dst) {
    for (int k = 0; k < N; ++k) {
      if (src[k] == nullptr) continue;
      for (int v = 0; v < C; v += W) Lanes<H>::widen(x[k] + v, src[k] + v);
    }
#pragma GCC unroll 1
    for (int l = 0; l < C; ++l) {
      if constexpr (N == 1) r[l] = Op::template f<float>(p, x[0][l]);
      if constexpr (N == 2) r[l] = Op::template f<float>(p, x[0][l], x[1][l]);
      if constexpr (N == 3) r[l] = Op::template f<float>(p, x[0][l], x[1][l], x[2][l]);
    }
    for (int v = 0; v < C; v += W) Lanes<H>::narrow(dst + v, r + v);
  };
  const H* src[N];
  int64_t i = 0;
  for (; i + C <= n; i += C) {
    for (int k = 0; k < N; ++k) src[k] = in[k] == nullptr ? nullptr : in[k] + i;
    chunk(src, out + i);
  }
  if (i < n) {  // the tail through zero-padded vectors
    H pad[N][C] = {}, result[C];
    for (int k = 0; k < N; ++k) {
      if (in[k] != nullptr) std::copy(in[k] + i, in[k] + n, pad[k]);
      src[k] = in[k] == nullptr ? nullptr : pad[k];
    }
    chunk(src, result);
    std::copy(result, result + (n - i), out + i);
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

// Runs [begin, end) on the register path when the output and every input
// are contiguous `H` along the rows, inputs constant along the rows (of any
// dtype) allowed; returns false, doing nothing, otherwise.
template <class Op, int N, class H>
bool run_range_converted(const Shape& shape, const Operand* operands, const OpParams& params, int64_t begin,
                         int64_t end) {
  constexpr int K = N + 1;
  const int last = shape.ndim - 1;
  constexpr ScalarType kType = std::is_same_v<H, Half> ? ScalarType::Float16 : ScalarType::BFloat16;
  for (int k = 0; k < K; ++k) {
    const int64_t stride = operands[k].strides.v[last];
    const bool row = stride == 1 && operands[k].dtype == kType;
    if (!row && (k == 0 || stride != 0)) return false;
  }
  for_each_segment<K>(shape, operands, begin, end, [&](const int64_t* offsets, int64_t len) {
    const H* in[N];
    float fill[N] = {};
    for (int k = 0; k < N; ++k) {
      const Operand& op = operands[k + 1];
      if (op.strides.v[last] == 1 && op.dtype == kType) {
        in[k] = static_cast<const H*>(op.data) + offsets[k + 1];
      } else {
        in[k] = nullptr;
        load_block(&fill[k], static_cast<const char*>(op.data) + offsets[k + 1] * int64_t(element_size(op.dtype)),
                   op.dtype, 0, 1);
      }
    }
    run_row_converted<Op, N>(len, static_cast<H*>(operands[0].data) + offsets[0], in, fill, params);
  });
  return true;
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
  if constexpr (std::is_same_v<T, float> && kRegisterConverted<Op>) {
    if (run_range_converted<Op, N, BFloat16>(shape, operands, params, begin, end) ||
        run_range_converted<Op, N, Half>(shape, operands, params, begin, end)) {
      return;
    }
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

using namespace detail::kinds;  // the catalogue's kinds tokens

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
