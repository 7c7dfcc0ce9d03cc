// The per-ISA row routines of spmm_csr (sparse_isa.cpp, Note [Per-ISA
// variants]): rows [begin, end) of the product for Float32 and Float64, whose
// inner loop (a scaled dense row added to an output row) the ISA's vectors
// carry. sparse.cpp splits the rows over the compute threads; the complex
// types run its own generic loop.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/sparse.h"

namespace mlu::kernels::detail {

using SpmmRows = void (*)(const SpmmArgs& args, int64_t begin, int64_t end);

struct SpmmTable {
  SpmmRows f32, f64;
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::SpmmTable& spmm_table())
