#include "gemm_integer.h"

#include <algorithm>
#include <type_traits>

#include "mlu_kernels/parallel.h"

namespace mlu::kernels::detail {

namespace {

// Note [Integer products]
// The CPU's integer mm (cpublas::gemm on scalar_t) sums in the element type
// and wraps on overflow. Sums and products modulo 2^bits do not depend on
// their order, so any loop order gives the CPU's bits: each thread takes rows
// of C, kRows at a time, and accumulates A(i, p) * B(p, j0:j0 + kColumns)
// into rows of unsigned accumulators (unsigned: wrapping without undefined
// behaviour; at least 32 bits wide, so 8- and 16-bit products do not go
// through a signed int), which vectorises over a unit-stride row of B; each
// row of B read serves kRows rows of C.
constexpr int64_t kRows = 4;      // rows of C sharing each pass over a row of B
constexpr int64_t kColumns = 512;  // columns per pass: kRows accumulator rows stay in L1

template <class T>
void gemm_typed(const GemmArgs& args) {
  using U = std::make_unsigned_t<T>;
  using Acc = std::conditional_t<(sizeof(U) < 4), uint32_t, U>;
  const auto alpha = static_cast<Acc>(static_cast<int64_t>(args.alpha));
  const auto beta = static_cast<Acc>(static_cast<int64_t>(args.beta));
  const int64_t m = args.m, n = args.n, k = alpha == 0 ? 0 : args.k;
  const int64_t row_groups = (m + kRows - 1) / kRows;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, kRows * n * std::max<int64_t>(k, 1)));
  const auto load = [](const T* p) { return static_cast<Acc>(static_cast<U>(*p)); };
  parallel_for(0, args.batch * row_groups, grain, [&](int64_t lo, int64_t hi) {
    Acc acc[kRows][kColumns];
    for (int64_t g = lo; g < hi; ++g) {
      const int64_t t = g / row_groups, i0 = (g % row_groups) * kRows, rows = std::min(kRows, m - i0);
      const T* a = static_cast<const T*>(args.a.data) + t * args.batch_stride_a + i0 * args.a.row_stride;
      const T* b = static_cast<const T*>(args.b.data) + t * args.batch_stride_b;
      T* c = static_cast<T*>(args.c.data) + t * args.batch_stride_c + i0 * args.c.row_stride;
      for (int64_t j0 = 0; j0 < n; j0 += kColumns) {
        const int64_t cols = std::min(kColumns, n - j0);
        for (int64_t r = 0; r < kRows; ++r) std::fill_n(acc[r], cols, Acc(0));
        for (int64_t p = 0; p < k; ++p) {
          const T* bp = b + p * args.b.row_stride + j0 * args.b.col_stride;
          for (int64_t r = 0; r < rows; ++r) {
            const Acc x = load(a + r * args.a.row_stride + p * args.a.col_stride);
            Acc* __restrict row = acc[r];
            if (args.b.col_stride == 1) {
              for (int64_t j = 0; j < cols; ++j) row[j] += x * load(bp + j);
            } else {
              for (int64_t j = 0; j < cols; ++j) row[j] += x * load(bp + j * args.b.col_stride);
            }
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          T* out = c + r * args.c.row_stride + j0 * args.c.col_stride;
          for (int64_t j = 0; j < cols; ++j) {
            Acc v = alpha * acc[r][j];
            if (beta != 0) v += beta * load(out + j * args.c.col_stride);
            out[j * args.c.col_stride] = static_cast<T>(static_cast<U>(v));
          }
        }
      }
    }
  });
}

}  // namespace

bool is_gemm_integer(ScalarType dtype) {
  return dtype == ScalarType::UInt8 || dtype == ScalarType::Int8 || dtype == ScalarType::Int16 ||
         dtype == ScalarType::Int32 || dtype == ScalarType::Int64;
}

void gemm_integer(const GemmArgs& args) {
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return;
  switch (args.dtype) {
    case ScalarType::UInt8: gemm_typed<uint8_t>(args); break;
    case ScalarType::Int8: gemm_typed<int8_t>(args); break;
    case ScalarType::Int16: gemm_typed<int16_t>(args); break;
    case ScalarType::Int32: gemm_typed<int32_t>(args); break;
    case ScalarType::Int64: gemm_typed<int64_t>(args); break;
    default: break;
  }
}

}  // namespace mlu::kernels::detail
