// The pointwise engine's complex compute types (ComplexFloat, ComplexDouble):
// which ops they have and the kernel that runs them. Internal; pointwise.cpp
// routes complex `compute` here.
#pragma once

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels::detail {

bool complex_supports(PointwiseOp op);

// pointwise() for a complex `compute` (precondition: complex_supports(op)),
// over operands already coalesced, split over the compute threads.
void complex_pointwise(PointwiseOp op, ScalarType compute, const Shape& shape, const Operand* operands,
                       const OpParams& params);

}  // namespace mlu::kernels::detail
