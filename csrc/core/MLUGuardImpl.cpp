#include "csrc/core/MLUGuardImpl.h"

#include <mlu_runtime/device.h>
#include <mlu_runtime/event.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUTrace.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {
namespace {

c10::Device mlu_device(c10::DeviceIndex index) { return c10::Device(c10::DeviceType::PrivateUse1, index); }

void check_mlu(c10::Device device) {
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "Expected an mlu device, got ", device);
}

}  // namespace

c10::Device MLUGuardImpl::exchangeDevice(c10::Device device) const {
  check_mlu(device);
  return mlu_device(exchange_device(device.index()));
}

c10::Device MLUGuardImpl::getDevice() const { return mlu_device(current_device()); }

void MLUGuardImpl::setDevice(c10::Device device) const {
  check_mlu(device);
  set_device(device.index());
}

void MLUGuardImpl::uncheckedSetDevice(c10::Device device) const noexcept {
  mlu::mluSetDevice(device.index());  // may fail silently by contract
}

c10::DeviceIndex MLUGuardImpl::deviceCount() const noexcept { return device_count(); }

c10::DeviceCapability MLUGuardImpl::getDeviceCapability(c10::Device device) const {
  if (device.index() >= 0) check_device_index(device.index());
  // The dtypes mlu kernels compute in (kernel_dtype in csrc/aten/KernelArgs.cpp), and complex32 and the float8
  // types, which copies convert; tests/test_accelerator_api.py checks the set against what works.
  c10::DeviceCapability capability;
  capability.capability_data.capability_bits = 0;
  auto& types = capability.capability_data.supported_scalar_types;
  types.has_Bool = types.has_Byte = types.has_Char = types.has_Short = types.has_Int = types.has_Long = 1;
  types.has_Half = types.has_BFloat16 = types.has_Float = types.has_Double = 1;
  types.has_ComplexFloat = types.has_ComplexDouble = 1;
  types.has_ComplexHalf = 1;  // storage and conversions only (as on CUDA, few ops take it)
  // Storage and conversions, _scaled_mm (Note [Storage-only types] in kernels/src/common/dispatch.h).
  types.has_Float8_e5m2 = types.has_Float8_e4m3fn = types.has_Float8_e5m2fnuz = types.has_Float8_e4m3fnuz = 1;
  return capability;
}

c10::Stream MLUGuardImpl::getStream(c10::Device device) const { return getCurrentMLUStream(device.index()); }

c10::Stream MLUGuardImpl::getDefaultStream(c10::Device device) const {
  return getDefaultMLUStream(device.index());
}

c10::Stream MLUGuardImpl::getStreamFromGlobalPool(c10::Device device, bool high_priority) const {
  return getStreamFromPool(high_priority, device.index());
}

c10::Stream MLUGuardImpl::getNewStream(c10::Device device, int priority) const {
  return getStreamFromPool(priority < 0, device.index());
}

c10::Stream MLUGuardImpl::exchangeStream(c10::Stream stream) const {
  return exchangeCurrentMLUStream(MLUStream(stream));
}

bool MLUGuardImpl::queryStream(const c10::Stream& stream) const { return MLUStream(stream).query(); }

void MLUGuardImpl::synchronizeStream(const c10::Stream& stream) const { MLUStream(stream).synchronize(); }

void MLUGuardImpl::synchronizeDevice(const c10::DeviceIndex device_index) const {
  device_synchronize(device_index);
}

void MLUGuardImpl::record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                          const c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
              static_cast<int>(device_index), " does not match recording stream's device index ",
              static_cast<int>(stream.device_index()), ".");
  auto* mlu_event = static_cast<mlu::mluEvent_t*>(static_cast<void*>(event));
  if (*mlu_event == nullptr) {
    unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? mlu::mluEventDefault : mlu::mluEventDisableTiming;
    MLU_CHECK(mlu::mluEventCreateWithFlags(mlu_event, flags));
    trace::event_creation(*mlu_event);
  }
  MLU_CHECK(mlu::mluEventRecord(*mlu_event, MLUStream(stream).queue()));
  trace::event_record(*mlu_event, MLUStream(stream).queue());
}

void MLUGuardImpl::block(void* event, const c10::Stream& stream) const {
  if (event == nullptr) return;  // never recorded: nothing to wait for
  MLU_CHECK(mlu::mluQueueWaitEvent(MLUStream(stream).queue(), static_cast<mlu::mluEvent_t>(event)));
  trace::event_wait(event, MLUStream(stream).queue());
}

bool MLUGuardImpl::queryEvent(void* event) const {
  if (event == nullptr) return true;
  mlu::mluError_t status = mlu::mluEventQuery(static_cast<mlu::mluEvent_t>(event));
  if (status == mlu::mluErrorNotReady) return false;
  MLU_CHECK(status);
  return true;
}

void MLUGuardImpl::synchronizeEvent(void* event) const {
  if (event == nullptr) return;
  MLU_CHECK(mlu::mluEventSynchronize(static_cast<mlu::mluEvent_t>(event)));
  trace::event_synchronization(event);
}

double MLUGuardImpl::elapsedTime(void* start, void* end, const c10::DeviceIndex device_index) const {
  TORCH_CHECK(start != nullptr && end != nullptr,
              "Both events must be recorded before calculating elapsed time.");
  float ms = 0;
  MLU_CHECK(mlu::mluEventElapsedTime(&ms, static_cast<mlu::mluEvent_t>(start), static_cast<mlu::mluEvent_t>(end)));
  return ms;
}

void MLUGuardImpl::destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept {
  if (event == nullptr) return;
  trace::event_deletion(event);
  mlu::mluEventDestroy(static_cast<mlu::mluEvent_t>(event));
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, MLUGuardImpl);

}  // namespace torch_mlu
