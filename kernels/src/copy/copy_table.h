// The per-ISA pieces of the copy kernel (copy_isa.cpp, Note [Per-ISA
// variants]): the register transposes of the blocked transposing copy (Note
// [Blocked transposing copies]) and the reversed row copy. copy.cpp plans the
// loops, splits the work over the compute threads and calls these per block
// or row.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/dtype.h"

namespace mlu::kernels::detail {

// A square register transpose (register_transpose.h) for one element size:
// run(d, ld_d, s, ld_s) writes the transpose of the size x size block whose
// rows are s, s + ld_s, ... as the rows d, d + ld_d, ...
template <class T>
struct TransposeBlock {
  int64_t size = 0;  // 0: none for this element size and ISA
  void (*run)(T* d, int64_t ld_d, const T* s, int64_t ld_s) = nullptr;
};

// A row read backwards (a flip along the innermost dim): d[i] =
// convert(s[-i]) for i < n, element types as the table entry says.
using ReversedRow = void (*)(void* d, const void* s, int64_t n);

constexpr int kNumScalarTypes = static_cast<int>(ScalarType::Float8_e5m2fnuz) + 1;

struct CopyKernels {
  // By element size (the bits types of dispatch_bits).
  TransposeBlock<uint16_t> transpose16;
  TransposeBlock<uint32_t> transpose32;
  TransposeBlock<uint64_t> transpose64;
  // Within one dtype, moved as bits: by log2 of the element size (1 to 16 bytes).
  ReversedRow reversed_bits[5];
  // Converting: [to][from], by ScalarType.
  ReversedRow reversed[kNumScalarTypes][kNumScalarTypes];
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::CopyKernels& copy_kernels())
