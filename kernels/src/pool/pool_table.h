// The per-ISA pooling loops (pool_isa.cpp): each takes a range of planes of
// one call, so pool.cpp splits the work over the compute threads and the
// loops are compiled for every ISA (Note [Per-ISA variants]). Arguments and
// results as in mlu_kernels/pool.h.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/dtype.h"
#include "mlu_kernels/pool.h"

namespace mlu::kernels::detail {

// What every plane of one max_pool call shares (Note [Max pooling by
// window offsets] in pool_isa.cpp); positions within a plane, below 2^31.
struct MaxPoolPlan {
  const int32_t* first;  // per output: its window's first position (0 where the plane clips the window)
  const int32_t* taps;   // the window's positions less its first, in the window's order
  int64_t tap_count;
  const int64_t* clipped;  // the outputs whose window the plane clips, walked one by one
  int64_t clipped_count;
  bool any_inside;  // false: every window is clipped (then `first` and `taps` are not read)
};

struct PoolFns {
  // max_pool of planes [lo, hi); `wide`: room for one plane in float, where
  // 16-bit planes are widened (the caller's: an ISA file defines no
  // std::vector of its own, Note [Per-ISA variants]).
  void (*max_pool_planes)(const PoolShape& shape, const MaxPoolPlan& plan, ScalarType type, int64_t lo, int64_t hi,
                          const void* input, void* output, int64_t* indices, float* wide);
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::PoolFns& pool_fns())
