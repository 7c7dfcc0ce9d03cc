// The scalar references of the quantized products (mlu_kernels/quantized_gemm.h):
// each element of C one long double sum of A's elements times the dequantised
// weights, p in order, rounded once to C's dtype.
#include <cmath>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/quantized_gemm.h"

namespace mlu::kernels {
namespace {

float load_float(ScalarType dtype, const void* data, int64_t index) {
  switch (dtype) {
    case ScalarType::Float16:
      return to_float(static_cast<const Half*>(data)[index]);
    case ScalarType::BFloat16:
      return to_float(static_cast<const BFloat16*>(data)[index]);
    default:
      return static_cast<const float*>(data)[index];
  }
}

void store_float(ScalarType dtype, void* data, int64_t index, long double value) {
  const auto v = static_cast<float>(value);
  switch (dtype) {
    case ScalarType::Float16:
      static_cast<Half*>(data)[index] = detail::convert<Half>(v);
      break;
    case ScalarType::BFloat16:
      static_cast<BFloat16*>(data)[index] = detail::convert<BFloat16>(v);
      break;
    default:
      static_cast<float*>(data)[index] = v;
      break;
  }
}

}  // namespace

void int8_weight_gemm_ref(const Int8WeightGemmArgs& args) {
  for (int64_t i = 0; i < args.m; ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      long double sum = 0;
      for (int64_t p = 0; p < args.k; ++p) {
        sum += static_cast<long double>(load_float(args.dtype, args.a, i * args.lda + p)) * args.w[j * args.k + p];
      }
      store_float(args.dtype, args.c, i * args.ldc + j, sum * load_float(args.dtype, args.scales, j));
    }
  }
}

void int4_weight_gemm_ref(const Int4WeightGemmArgs& args) {
  std::vector<int32_t> q(static_cast<size_t>(args.n * args.k));
  int4_unpack(args.w, args.n, args.k, args.layout, q.data());
  for (int64_t i = 0; i < args.m; ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      long double sum = 0;
      for (int64_t p = 0; p < args.k; ++p) {
        const int64_t sz = ((p / args.group_size) * args.n + j) * 2;
        const float w =
            std::fma(static_cast<float>(q[static_cast<size_t>(j * args.k + p)] - 8),
                     load_float(args.dtype, args.scale_zeros, sz), load_float(args.dtype, args.scale_zeros, sz + 1));
        sum += static_cast<long double>(load_float(args.dtype, args.a, i * args.lda + p)) * w;
      }
      store_float(args.dtype, args.c, i * args.ldc + j, sum);
    }
  }
}

void int8_gemm_ref(const Int8GemmArgs& args) {
  for (int64_t i = 0; i < args.m; ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < args.k; ++p) {
        const int64_t at = i * args.a_rs + p * args.a_cs;
        const int64_t a = args.a_dtype == ScalarType::UInt8 ? static_cast<const uint8_t*>(args.a)[at]
                                                            : static_cast<const int8_t*>(args.a)[at];
        sum += a * args.b[p * args.b_rs + j * args.b_cs];
      }
      args.c[i * args.ldc + j] = static_cast<int32_t>(static_cast<uint32_t>(sum));
    }
  }
}

}  // namespace mlu::kernels
