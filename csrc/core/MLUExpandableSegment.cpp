#include "csrc/core/MLUExpandableSegment.h"

#include <mlu_runtime/device.h>
#include <mlu_runtime/virtual_memory.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

// Runs `fn` with `device` current (the runtime's calls act on the current device).
template <class F>
mlu::mluError_t on_device(int device, F fn) {
  c10::DeviceIndex previous = exchange_device(static_cast<c10::DeviceIndex>(device));
  mlu::mluError_t status = fn();
  exchange_device(previous);
  return status;
}

}  // namespace

std::unique_ptr<ExpandableSegment> ExpandableSegment::reserve(int device, size_t size, size_t page) {
  void* base = nullptr;
  mlu::mluError_t status = on_device(device, [&] { return mlu::mluMemAddressReserve(&base, size); });
  if (status == mlu::mluErrorMemoryAllocation) return nullptr;
  MLU_CHECK(status);
  return std::unique_ptr<ExpandableSegment>(new ExpandableSegment(device, static_cast<char*>(base), size, page));
}

ExpandableSegment::~ExpandableSegment() {
  // At exit the runtime may already refuse; the process gives the range back anyway.
  (void)mlu::mluMemAddressFree(base_);
}

ExpandableSegment::Range ExpandableSegment::map(Range range) {
  const size_t begin = down(static_cast<size_t>(range.ptr - base_));
  const size_t end = up(static_cast<size_t>(range.ptr - base_) + range.size);
  mlu::mluError_t status = mlu::mluMemMap(base_ + begin, end - begin);
  if (status == mlu::mluErrorMemoryAllocation) return {range.ptr, 0};
  MLU_CHECK(status);
  mapped_ += end - begin;
  return {base_ + begin, end - begin};
}

ExpandableSegment::Range ExpandableSegment::unmap(Range range, mlu::mluQueue_t stream) {
  const size_t begin = up(static_cast<size_t>(range.ptr - base_));
  const size_t end = down(static_cast<size_t>(range.ptr - base_) + range.size);
  if (begin >= end) return {range.ptr, 0};
  mlu::mluError_t status = mlu::mluMemUnmapAfter(base_ + begin, end - begin, stream);
  if (status == mlu::mluErrorInvalidResourceHandle) {
    status = mlu::mluMemUnmap(base_ + begin, end - begin);  // the (external) stream is gone: wait for the device
  }
  MLU_CHECK(status);
  mapped_ -= end - begin;
  return {base_ + begin, end - begin};
}

}  // namespace torch_mlu
