#include <cstring>
#include <optional>
#include <string>

#include "capture.h"
#include "device_state.h"
#include "error_state.h"
#include "fork_state.h"
#include "mlu_runtime/host_trap.h"
#include "mlu_runtime/memcpy.h"
#include "queue_impl.h"
#include "registry.h"
#include "reservation.h"

namespace mlu {
using namespace detail;
namespace {

enum class Side { Pageable, Pinned, Device };

struct Endpoint {
  Side side;
  int device;
};

// Classifies [ptr, ptr + bytes); fails if a registered range is overrun.
mluError_t classify(const void* ptr, size_t bytes, const char* role, Endpoint* out) {
  std::optional<Allocation> a = find_allocation(ptr);
  if (!a) {
    *out = {Side::Pageable, -1};
    return mluSuccess;
  }
  uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  if (begin + bytes > a->base + a->size) {
    return fail(mluErrorInvalidValue, std::string("the ") + role + " range of " + std::to_string(bytes) +
                                          " bytes runs past the end of its allocation");
  }
  if (a->reservation != nullptr && !a->reservation->is_mapped(begin, begin + bytes)) {
    return fail(mluErrorInvalidValue, std::string("the ") + role + " range of " + std::to_string(bytes) +
                                          " bytes touches device memory that is reserved but not mapped");
  }
  *out = {a->device >= 0 ? Side::Device : Side::Pinned, a->device};
  return mluSuccess;
}

mluMemcpyKind infer_kind(const Endpoint& dst, const Endpoint& src) {
  bool d = dst.side == Side::Device, s = src.side == Side::Device;
  if (d && s) return mluMemcpyDeviceToDevice;
  if (d) return mluMemcpyHostToDevice;
  if (s) return mluMemcpyDeviceToHost;
  return mluMemcpyHostToHost;
}

// Launches the copy; waits for it when a host side is pageable or `wait` is set.
mluError_t launch_copy(mluQueue_st* q, void* dst, const void* src, size_t bytes, bool wait) {
  // Checked before launching: a copy that reports failure must not run later.
  if (wait && q->on_own_thread()) {
    return fail(mluErrorInvalidValue, "a task cannot wait for a copy on its own queue");
  }
  if (wait) {
    if (mluError_t s = refuse_if_capturing(q, "a blocking copy (to or from pageable host memory)")) return s;
  }
  uint64_t seq = 0;
  // Device memory is reached through its device mapping (Note [Host-access trap]).
  auto copy = [dst = mluDevicePointer(dst), src = mluDevicePointer(src), bytes] { std::memcpy(dst, src, bytes); };
  if (mluError_t status = launch_task(q, "memcpy", TaskKind::Memcpy, copy, &seq)) return status;
  if (!wait) return mluSuccess;
  q->wait_for(seq);
  return q->take_error(seq);
}

struct CopyPlan {
  mluMemcpyKind kind;
  Endpoint dst, src;
};

mluError_t plan_copy(void* dst, const void* src, size_t bytes, mluMemcpyKind kind, CopyPlan* plan) {
  if (in_forked_child()) return fail_in_forked_child();
  if (kind < mluMemcpyHostToHost || kind > mluMemcpyDefault) return fail(mluErrorInvalidValue, "unknown copy kind");
  if (dst == nullptr || src == nullptr) return fail(mluErrorInvalidValue, "copy with a null pointer");
  if (mluError_t s = classify(dst, bytes, "destination", &plan->dst)) return s;
  if (mluError_t s = classify(src, bytes, "source", &plan->src)) return s;
  mluMemcpyKind actual = infer_kind(plan->dst, plan->src);
  if (kind != mluMemcpyDefault && kind != actual) {
    return fail(mluErrorInvalidMemcpyDirection, "the pointers do not match the requested copy direction");
  }
  plan->kind = actual;
  return mluSuccess;
}

bool has_pageable_side(const CopyPlan& p) {
  return p.dst.side == Side::Pageable || p.src.side == Side::Pageable;
}

}  // namespace

mluError_t mluMemcpyAsync(void* dst, const void* src, size_t bytes, mluMemcpyKind kind, mluQueue_t queue) {
  if (bytes == 0) return mluSuccess;
  CopyPlan plan;
  if (mluError_t s = plan_copy(dst, src, bytes, kind, &plan)) return s;
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  return launch_copy(q, dst, src, bytes, has_pageable_side(plan));
}

mluError_t mluMemcpy(void* dst, const void* src, size_t bytes, mluMemcpyKind kind) {
  if (bytes == 0) return mluSuccess;
  CopyPlan plan;
  if (mluError_t s = plan_copy(dst, src, bytes, kind, &plan)) return s;
  if (mluError_t s = refuse_unsafe_call("mluMemcpy (a synchronous copy)")) return s;
  int device = plan.dst.device >= 0 ? plan.dst.device : plan.src.device >= 0 ? plan.src.device : current_device();
  if (mluError_t s = check_device(device)) return s;
  return launch_copy(default_queue(*device_state(device)), dst, src, bytes, /*wait=*/true);
}

mluError_t mluMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                              mluQueue_t queue) {
  if (mluError_t s = check_device(dst_device)) return s;
  if (mluError_t s = check_device(src_device)) return s;
  if (bytes == 0) return mluSuccess;
  CopyPlan plan;
  if (mluError_t s = plan_copy(dst, src, bytes, mluMemcpyDeviceToDevice, &plan)) return s;
  if (plan.dst.device != dst_device || plan.src.device != src_device) {
    return fail(mluErrorInvalidValue, "the pointers do not belong to the devices given");
  }
  mluError_t status;
  mluQueue_st* q = resolve_queue(queue, &status);
  if (q == nullptr) return status;
  if (q->device != dst_device && q->device != src_device) {
    return fail(mluErrorInvalidValue, "a peer copy must run on a queue of one of its two devices");
  }
  return launch_copy(q, dst, src, bytes, /*wait=*/false);
}

}  // namespace mlu
