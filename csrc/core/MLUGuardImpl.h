// MLUGuardImpl: the c10 device-guard interface for mlu (cf. CUDAGuardImpl).
//
// This one class serves DeviceGuard, torch.Stream / torch.Event,
// torch.accelerator, the autograd engine's device threads and the profiler.
// Events are runtime events created lazily on first record; an event created
// with EventFlag::BACKEND_DEFAULT measures time, PYTORCH_DEFAULT does not.
// deviceCount() never throws.
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace torch_mlu {

struct MLUGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  MLUGuardImpl() = default;
  // What c10's inline guards (MLUGuard.h) construct it with.
  explicit MLUGuardImpl(c10::DeviceType type) {
    TORCH_CHECK(type == static_type, "MLUGuardImpl: expected device type ", static_type, ", got ", type);
  }

  c10::DeviceType type() const override { return static_type; }
  c10::Device exchangeDevice(c10::Device device) const override;
  c10::Device getDevice() const override;
  void setDevice(c10::Device device) const override;
  void uncheckedSetDevice(c10::Device device) const noexcept override;
  c10::DeviceIndex deviceCount() const noexcept override;
  // torch.accelerator.get_device_capability: the dtypes mlu kernels compute in.
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override;

  c10::Stream getStream(c10::Device device) const override;
  c10::Stream getDefaultStream(c10::Device device) const override;
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority = false) const override;
  c10::Stream getNewStream(c10::Device device, int priority = 0) const override;
  c10::Stream exchangeStream(c10::Stream stream) const override;
  bool queryStream(const c10::Stream& stream) const override;
  void synchronizeStream(const c10::Stream& stream) const override;
  void synchronizeDevice(const c10::DeviceIndex device_index) const override;

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override;
  void block(void* event, const c10::Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  double elapsedTime(void* start, void* end, const c10::DeviceIndex device_index) const override;
  void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override;
};

}  // namespace torch_mlu
