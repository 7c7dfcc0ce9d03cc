// Random sampling kernels that are not element-wise: permutations and
// categorical draws. They follow random.h's determinism rule where an element
// index exists: draw k uses only philox4x32(seed, /*subsequence=*/k, offset),
// so one (seed, offset) always gives the same result.
//
// Both run sequentially within one call (a permutation is inherently serial;
// multinomial rows are independent and small in practice).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

// Writes a uniformly random permutation of 0..n-1 to out[0..n): Fisher–Yates
// from the top, swap i with j = r_i mod (i + 1), r_i the 64 bits u[0],u[1] of
// subsequence i.
void randperm(int64_t* out, int64_t n, uint64_t seed, uint64_t offset);

enum class MultinomialStatus { Ok, NegativeOrNonFinite, ZeroSum, NotEnoughCategories };

// Draws `samples` category indices per row of a rows x categories matrix of
// weights (Float16, BFloat16, Float32 or Float64; element (r, c) at
// probs + r * row_stride + c * col_stride, in elements) into out (row-major,
// rows x samples). With replacement, sample s of row r inverts the row's CDF
// at a uniform draw of subsequence r * samples + s. Without replacement, each
// category c of row r gets the key -log(u) / w (u from subsequence
// r * categories + c) and the `samples` smallest keys win, in order: the
// exponential-race form of sequential sampling without replacement.
// Returns the first problem found (nothing is written past a bad row).
MultinomialStatus multinomial(int64_t* out, const void* probs, ScalarType dtype, int64_t rows, int64_t categories,
                              int64_t row_stride, int64_t col_stride, int64_t samples, bool replacement,
                              uint64_t seed, uint64_t offset);

}  // namespace mlu::kernels
