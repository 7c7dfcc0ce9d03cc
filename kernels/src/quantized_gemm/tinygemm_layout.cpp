// int4_pack_tinygemm / int4_unpack_tinygemm (mlu_kernels/quantized_gemm.h).
//
// Note [The tinygemm layout]
// CUDA's int4 weight-only product reads B straight into the registers of
// the tensor cores' m16n8k16 instruction, so its packing is that
// instruction's B fragment: per tile of 8 columns (n) and pair of 16-deep k
// tiles, lane t (0..31) holds column n = tile * 8 + t / 4, one int32 per
// pair of k tiles, whose nibble s (bits 4s..4s+3) is the value at
//   k = kt0 * 16 + 2 (t % 4) + 8 (s % 4) + s / 4,  kt0 = ko * inner_k_tiles + 2 j
// for word j of the lane's inner_k_tiles / 2 words. The input bytes hold
// even k in the high nibble (PyTorch's _group_quantize_tensor for non-CPU
// devices). A weight packed on CUDA therefore loads on mlu unchanged; the
// product converts it to the host layout first (quantized_gemm.h), which
// costs a pass over the weight per call.
#include <cstdint>

#include "mlu_kernels/parallel.h"
#include "mlu_kernels/quantized_gemm.h"

namespace mlu::kernels {
namespace {

// Where nibble s of word (tile, ko, t, j) comes from.
struct Source {
  int64_t n, k;
};
inline Source source(int64_t tile, int64_t ko, int64_t t, int64_t j, int64_t s, int64_t inner_k_tiles) {
  const int64_t kt0 = ko * inner_k_tiles + 2 * j;
  return {tile * 8 + t / 4, kt0 * 16 + 2 * (t % 4) + 8 * (s % 4) + s / 4};
}

}  // namespace

void int4_pack_tinygemm(const uint8_t* bytes, int64_t n, int64_t k, int64_t inner_k_tiles, int32_t* packed) {
  const int64_t k_tiles = k / (inner_k_tiles * 16), words = inner_k_tiles / 2;
  parallel_for(0, n / 8, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t tile = lo; tile < hi; ++tile) {
      for (int64_t ko = 0; ko < k_tiles; ++ko) {
        for (int64_t t = 0; t < 32; ++t) {
          for (int64_t j = 0; j < words; ++j) {
            uint32_t word = 0;
            for (int64_t s = 0; s < 8; ++s) {
              const Source at = source(tile, ko, t, j, s, inner_k_tiles);
              const uint8_t byte = bytes[at.n * (k / 2) + at.k / 2];
              const uint32_t q = (at.k & 1) == 0 ? byte >> 4 : byte & 15;
              word |= q << (4 * s);
            }
            packed[((tile * k_tiles + ko) * 32 + t) * words + j] = static_cast<int32_t>(word);
          }
        }
      }
    }
  });
}

void int4_unpack_tinygemm(const int32_t* packed, int64_t n, int64_t k, int64_t inner_k_tiles, int32_t* values) {
  const int64_t k_tiles = k / (inner_k_tiles * 16), words = inner_k_tiles / 2;
  parallel_for(0, n / 8, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t tile = lo; tile < hi; ++tile) {
      for (int64_t ko = 0; ko < k_tiles; ++ko) {
        for (int64_t t = 0; t < 32; ++t) {
          for (int64_t j = 0; j < words; ++j) {
            const auto word = static_cast<uint32_t>(packed[((tile * k_tiles + ko) * 32 + t) * words + j]);
            for (int64_t s = 0; s < 8; ++s) {
              const Source at = source(tile, ko, t, j, s, inner_k_tiles);
              values[at.n * k + at.k] = static_cast<int32_t>((word >> (4 * s)) & 15);
            }
          }
        }
      }
    }
  });
}

}  // namespace mlu::kernels
