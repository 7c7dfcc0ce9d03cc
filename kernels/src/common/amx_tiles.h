// The AMX tile configuration (LDTILECFG's 64-byte operand), shared by the
// ISA files that use tiles (gemm/gemm_amx.cpp, quantized_gemm/quantized_gemm_amx.cpp).
// Palette 1: up to 8 tiles of up to 16 rows of 64 bytes; a tile left at 0
// rows and 0 bytes is unused.
#pragma once

#include <cstdint>

#include "isa_variants.h"

namespace mlu::kernels::detail {
inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  // Tile `tile` as `rows` rows of `bytes` bytes.
  void set(int tile, int tile_rows, int bytes) {
    rows[tile] = static_cast<uint8_t>(tile_rows);
    colsb[tile] = static_cast<uint16_t>(bytes);
  }
};

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::detail
