// copy: dst[i] = convert(src[i]) over a shape shared by two strided views, for
// any two ScalarTypes, with PyTorch's rules (static_cast; -> Bool is x != 0;
// Half/BFloat16 via float; complex -> real keeps the real part; real -> complex
// is (x, 0)). Preconditions (unchecked): dst and src do not overlap, dst has no
// stride-0 dims, Bool bytes are 0 or 1. NaN or out-of-range floating values
// converted to an integer type give unspecified results (C++ UB, as in torch).
#pragma once

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// Optimised: coalesces shape and both strides, then memcpy (same type, both
// contiguous), tiles (same type, unit strides on different dims: Note
// [Blocked transposing copies]), the pointwise engine's Copy op (a dtype
// conversion of real types, vectorised per ISA), or a strided row loop. src
// strides may be 0 (broadcast).
void copy(void* dst, ScalarType dst_type, const Strides& dst_strides, const void* src,
          ScalarType src_type, const Strides& src_strides, const Shape& shape);

// Scalar reference: converts element by element, unravelling each linear index.
void copy_ref(void* dst, ScalarType dst_type, const Strides& dst_strides, const void* src,
              ScalarType src_type, const Strides& src_strides, const Shape& shape);

}  // namespace mlu::kernels
