// dyn_quant_int4_gemm (mlu_kernels/quantized_gemm.h): PyTorch's
// _dyn_quant_matmul_4bit on hosts without KleidiAI, reproduced bit for bit.
//
// Note [Dynamic int4 quantisation]
// PyTorch's reference kernels (aten/src/ATen/native/cpu/int4mm_kernel.cpp,
// ref_dyn_quant_matmul_4bit_*) quantise each row of A asymmetrically to
// int8: scale = 255 / (max(0, max A) - min(0, min A)), a zero point nudged
// to an integer, q = clamp(round(a * scale) + zero_point, -128, 127). The
// products are exact int32 sums of (q - zero_point) (w - 8), so their order
// does not matter; what must match is every float operation after them, in
// the CPU's order: channelwise float(sum) * w_scale * (1 / scale) + bias,
// groupwise the per-block float(sum) * w_scale added up in block order, then
// * (1 / scale) + bias. The two zero-point tests differ in their order of
// additions as the CPU's do. BFloat16 rows are read as float and the result
// is truncated to BFloat16 (the CPU's kernel drops the low bits).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "../common/verbose_call.h"
#include "mlu_kernels/parallel.h"
#include "mlu_kernels/quantized_gemm.h"

namespace mlu::kernels {
namespace {

struct QuantizedRow {
  float recip_scale;
  int32_t zero_point;  // the nudged zero point, added to round(a * scale)
};

// One row of A (as float) to int8; `groupwise` picks the zero-point test's order.
QuantizedRow quantize_row(const float* a, int64_t k, bool groupwise, int8_t* q) {
  float max0 = -FLT_MAX, min0 = FLT_MAX;
  for (int64_t p = 0; p < k; ++p) {
    max0 = std::max(a[p], max0);
    min0 = std::min(a[p], min0);
  }
  constexpr float qmin = -128.0f, qmax = 127.0f;
  const float rmin = std::min(0.0f, min0), rmax = std::max(0.0f, max0);
  const float scale = rmin == rmax ? 1.f : (qmax - qmin) / (rmax - rmin);
  const float recip = scale != 0 ? 1.0f / scale : 0.0f;
  const float descaled_min = rmin * scale, descaled_max = rmax * scale;
  const bool from_min =
      groupwise ? qmin + descaled_min + qmax + descaled_max > 0 : (qmin + descaled_min) + (qmax + descaled_max) > 0;
  float zp = from_min ? qmin - descaled_min : qmax - descaled_max;
  zp = std::min(std::max(zp, qmin), qmax);
  const auto nudged = static_cast<int32_t>(std::lrintf(zp));
  for (int64_t p = 0; p < k; ++p) {
    const int32_t v = static_cast<int32_t>(std::round(a[p] * scale)) + nudged;
    q[p] = static_cast<int8_t>(std::min(std::max(v, -128), 127));
  }
  return {recip, nudged};
}

// sum over p in [p0, p1) of (q - zero_point) (w - 8), w row j's nibbles.
int32_t block_sum(const int8_t* q, const uint8_t* w, int64_t p0, int64_t p1, int32_t zero_point) {
  int32_t sum = 0;
  for (int64_t p = p0; p < p1; ++p) {
    const int32_t wv = ((p & 1) == 0 ? (w[p / 2] & 15) : (w[p / 2] >> 4)) - 8;
    sum += (q[p] - zero_point) * wv;
  }
  return sum;
}

}  // namespace

void dyn_quant_int4_gemm(const DynQuantInt4GemmArgs& args) {
  detail::VerboseCall call("dyn_quant_int4_gemm");
  if (call) {
    call.describe(args.dtype, "m%lld n%lld k%lld block%lld", static_cast<long long>(args.m),
                  static_cast<long long>(args.n), static_cast<long long>(args.k),
                  static_cast<long long>(args.block_size));
  }
  const int64_t m = args.m, n = args.n, k = args.k, bs = args.block_size;
  if (m <= 0 || n <= 0 || bs <= 0) return;
  const bool bf16 = args.dtype == ScalarType::BFloat16;
  const bool groupwise = bs != k;
  const int64_t blocks = (k + bs - 1) / bs;
  std::vector<float> rows(static_cast<size_t>(k));
  std::vector<int8_t> q(static_cast<size_t>(m * k));
  std::vector<QuantizedRow> params(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const float* row = static_cast<const float*>(args.a) + i * k;
    if (bf16) {
      const auto* in = static_cast<const uint16_t*>(args.a) + i * k;
      for (int64_t p = 0; p < k; ++p) {
        const uint32_t bits = static_cast<uint32_t>(in[p]) << 16;
        std::memcpy(&rows[static_cast<size_t>(p)], &bits, sizeof bits);
      }
      row = rows.data();
    }
    params[static_cast<size_t>(i)] = quantize_row(row, k, groupwise, q.data() + i * k);
  }
  const int64_t w_stride = (k + 1) / 2;
  parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, m * k)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < m; ++i) {
      const QuantizedRow rp = params[static_cast<size_t>(i)];
      const int8_t* qi = q.data() + i * k;
      for (int64_t j = lo; j < hi; ++j) {
        const uint8_t* w = args.w + j * w_stride;
        float acc;
        if (!groupwise) {
          acc = static_cast<float>(block_sum(qi, w, 0, k, rp.zero_point)) * args.scales[j];
        } else {
          acc = 0.0f;
          for (int64_t b = 0; b < blocks; ++b) {
            const int32_t s = block_sum(qi, w, b * bs, std::min(k, (b + 1) * bs), rp.zero_point);
            acc += static_cast<float>(s) * args.scales[j * blocks + b];
          }
        }
        acc = acc * rp.recip_scale;
        if (args.bias != nullptr) acc += args.bias[j];
        if (bf16) {
          acc = std::min(std::max(acc, -3.38953139e+38f), 3.38953139e+38f);
          uint32_t bits;
          std::memcpy(&bits, &acc, sizeof bits);
          static_cast<uint16_t*>(args.c)[i * n + j] = static_cast<uint16_t>(bits >> 16);
        } else {
          acc = std::min(std::max(acc, -FLT_MAX), FLT_MAX);
          static_cast<float*>(args.c)[i * n + j] = acc;
        }
      }
    }
  });
}

}  // namespace mlu::kernels
