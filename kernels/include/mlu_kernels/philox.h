// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC'11): a counter-based generator with no state. One call maps a 128-bit
// counter and a 64-bit key to four 32-bit outputs through ten rounds. The
// outputs are bit-identical to Random123's philox4x32_10, curand's
// Philox4_32_10 and PyTorch's at::Philox4_32: at::Philox4_32(seed, subsequence,
// offset) returns, as its first four draws, philox4x32(seed, subsequence,
// offset) below (the offset counts 128-bit blocks, not single draws).
// Everything is constexpr; there are no preconditions.
#pragma once

#include <array>
#include <cstdint>

namespace mlu::kernels {

// The Weyl sequence added to the key after each round, and the multipliers.
inline constexpr uint32_t kPhilox10A = 0x9E3779B9;
inline constexpr uint32_t kPhilox10B = 0xBB67AE85;
inline constexpr uint32_t kPhiloxSA = 0xD2511F53;
inline constexpr uint32_t kPhiloxSB = 0xCD9E8D57;

struct PhiloxKey {
  uint64_t seed;
};

namespace detail {

constexpr std::array<uint32_t, 4> philox_round(const std::array<uint32_t, 4>& c,
                                               const std::array<uint32_t, 2>& k) {
  const uint64_t product0 = static_cast<uint64_t>(kPhiloxSA) * c[0];
  const uint64_t product1 = static_cast<uint64_t>(kPhiloxSB) * c[2];
  const auto hi0 = static_cast<uint32_t>(product0 >> 32);
  const auto lo0 = static_cast<uint32_t>(product0);
  const auto hi1 = static_cast<uint32_t>(product1 >> 32);
  const auto lo1 = static_cast<uint32_t>(product1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace detail

// The raw block function. counter[0] is the least significant word of the
// 128-bit counter, key[0] the low word of the key (Random123's word order).
constexpr std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                                std::array<uint32_t, 2> key) {
  for (int round = 0; round < 9; ++round) {
    counter = detail::philox_round(counter, key);
    key[0] += kPhilox10A;
    key[1] += kPhilox10B;
  }
  return detail::philox_round(counter, key);
}

// The block for key (seed & 0xffffffff, seed >> 32) and counter
// (counter_lo & 0xffffffff, counter_lo >> 32, counter_hi & 0xffffffff,
// counter_hi >> 32): PyTorch's (seed, subsequence = counter_hi, offset = counter_lo).
constexpr std::array<uint32_t, 4> philox4x32(uint64_t seed, uint64_t counter_hi, uint64_t counter_lo) {
  return philox4x32_10({static_cast<uint32_t>(counter_lo), static_cast<uint32_t>(counter_lo >> 32),
                        static_cast<uint32_t>(counter_hi), static_cast<uint32_t>(counter_hi >> 32)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

constexpr std::array<uint32_t, 4> philox4x32(PhiloxKey key, uint64_t counter_hi, uint64_t counter_lo) {
  return philox4x32(key.seed, counter_hi, counter_lo);
}

}  // namespace mlu::kernels
