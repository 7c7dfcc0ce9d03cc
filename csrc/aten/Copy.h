// Copies on mlu: the one implementation behind copy_, .to(), .cpu(), .mlu(),
// fill_ from a device tensor and item().
//
// Note [Copy paths]
// - mlu -> mlu, same device: one strided, dtype-converting kernel on the
//   current stream (through a temporary when source and destination overlap).
// - cpu <-> mlu: the data crosses as one byte copy of a dense block; dtype
//   conversion and restriding happen on the side where they are cheap
//   (conversion on the host before an upload, on the device before a
//   download). Pageable host memory makes the copy synchronous; pinned memory
//   with non_blocking=True leaves it asynchronous on the current stream.
// - mlu:a -> mlu:b: a peer copy on b's current stream, ordered after a's
//   current stream by an event, and a's stream then waits for the copy so the
//   source cannot be reused under it (as CUDA's copy_device_to_device does).
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mlu {

// dst and src on the same mlu device, src already broadcast to dst's shape.
void copy_on_device(const at::Tensor& dst, const at::Tensor& src);

}  // namespace torch_mlu
