// Detection's box operators with torchvision's semantics (torchvision.ops, its
// CPU kernels csrc/ops/cpu/{nms,roi_align,roi_pool}_kernel.cpp): non-maximum
// suppression and the region-of-interest poolings with their gradients.
//
// Boxes are (x1, y1, x2, y2) with no +1 on widths; rois are [K, 5] rows
// (batch index, x1, y1, x2, y2), contiguous, of the input's dtype. Images are
// contiguous [B, C, H, W]; pooled results [K, C, PH, PW], contiguous.
// Float32 and Float64 compute in their own type, in torchvision's order of
// operations; Float16 and BFloat16 compute in float32 (torchvision has no
// bfloat16 kernel, and computes half in half).
// Invariant: every result is independent of the thread count; the gradients
// add each input plane's contributions in torchvision's order (roi, bin,
// sample), so they are bitwise those of its single-threaded CPU kernel.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/index.h"

namespace mlu::kernels {

// Greedy NMS: `order` lists the n boxes by decreasing score (a stable sort);
// box order[i] is kept unless a kept box before it overlaps it with IoU >
// iou_threshold (strictly; a NaN IoU suppresses nothing). Writes the kept
// boxes' indices to keep, in `order`'s order, and returns their count.
// Float32 or Float64 boxes [n, 4].
int64_t nms(ScalarType type, int64_t n, const void* boxes, const int64_t* order, double iou_threshold, int64_t* keep);

struct RoiProblem {
  ScalarType type = ScalarType::Float32;  // of the image, the rois and the results
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  int64_t rois = 0;                // K
  const void* roi_data = nullptr;  // [K, 5]
  double spatial_scale = 1.0;      // rounded to the compute type first, as torchvision does
  int64_t pooled_height = 1, pooled_width = 1;
  int64_t sampling_ratio = -1;  // roi_align: samples per bin side, <= 0 for ceil(bin size)
  bool aligned = false;         // roi_align: shift the boxes by -0.5 pixel
};

// A roi's batch index outside [0, batch) is reported (the kernels check what
// torchvision reads out of bounds) and that roi's results are left zero.
IndexCheck roi_align_forward(const RoiProblem& p, const void* input, void* output);
// grad [K, C, PH, PW] -> grad_input [B, C, H, W] (written whole).
IndexCheck roi_align_backward(const RoiProblem& p, const void* grad, void* grad_input);
// Max over each bin of the rounded roi; argmax the flat h * W + w of the
// maximum, -1 (and 0) for an empty bin. Float32, Float64, Float16, BFloat16.
IndexCheck roi_pool_forward(const RoiProblem& p, const void* input, void* output, int32_t* argmax);
IndexCheck roi_pool_backward(const RoiProblem& p, const void* grad, const int32_t* argmax, void* grad_input);

}  // namespace mlu::kernels
