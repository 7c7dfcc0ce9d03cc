#include "csrc/core/MLUEvent.h"

#include <utility>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUTrace.h"

namespace torch_mlu {

MLUEvent::MLUEvent(bool enable_timing) {
  MLU_CHECK(mlu::mluEventCreateWithFlags(&event_, enable_timing ? mlu::mluEventDefault : mlu::mluEventDisableTiming));
  trace::event_creation(event_);
}

MLUEvent::MLUEvent(MLUEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

MLUEvent& MLUEvent::operator=(MLUEvent&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

MLUEvent::~MLUEvent() {
  if (event_ == nullptr) return;
  trace::event_deletion(event_);
  mlu::mluEventDestroy(event_);
}

void MLUEvent::record(const MLUStream& stream) {
  MLU_CHECK(mlu::mluEventRecord(event_, stream.queue()));
  trace::event_record(event_, stream.queue());
}

void MLUEvent::block(const MLUStream& stream) const {
  MLU_CHECK(mlu::mluQueueWaitEvent(stream.queue(), event_));
  trace::event_wait(event_, stream.queue());
}

bool MLUEvent::query() const {
  mlu::mluError_t status = mlu::mluEventQuery(event_);
  if (status == mlu::mluErrorNotReady) return false;
  MLU_CHECK(status);
  return true;
}

void MLUEvent::synchronize() const {
  MLU_CHECK(mlu::mluEventSynchronize(event_));
  trace::event_synchronization(event_);
}

float MLUEvent::elapsed_time(const MLUEvent& end) const {
  float ms = 0;
  MLU_CHECK(mlu::mluEventElapsedTime(&ms, event_, end.event_));
  return ms;
}

}  // namespace torch_mlu
