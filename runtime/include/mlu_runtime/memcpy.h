// Copies between host and device memory and between devices.
//
// Every copy is a task on a queue, ordered with the other work of that queue.
// The Async forms return at once when the host side is pinned memory
// (mluHostMalloc) or there is no host side; when the host side is pageable
// memory they behave synchronously: they return only after the copy has
// finished, like CUDA's, so the caller may reuse or read the host buffer at
// once. The plain forms run on the default queue of the device involved and
// always wait. Waiting calls are synchronizing calls of their queue (see Note
// [Errors belong to queues] in queue.h). Device ranges are checked against the allocation
// registry: a range that leaves its allocation is mluErrorInvalidValue.
#pragma once

#include <cstddef>

#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

namespace mlu {

enum mluMemcpyKind : int {
  mluMemcpyHostToHost = 0,
  mluMemcpyHostToDevice = 1,
  mluMemcpyDeviceToHost = 2,
  mluMemcpyDeviceToDevice = 3,
  mluMemcpyDefault = 4,  // inferred from the pointers
};

mluError_t mluMemcpy(void* dst, const void* src, size_t bytes, mluMemcpyKind kind);
mluError_t mluMemcpyAsync(void* dst, const void* src, size_t bytes, mluMemcpyKind kind,
                          mluQueue_t queue);
// Device-to-device copy between two devices, on `queue` (of either device).
mluError_t mluMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                              size_t bytes, mluQueue_t queue);

}  // namespace mlu
