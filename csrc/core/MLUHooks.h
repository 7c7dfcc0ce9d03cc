// MLUHooks: PyTorch's PrivateUse1 hooks for mlu (cf. CUDAHooks).
// Registered once at library load. isBuilt/isAvailable never initialise the
// device; init() marks the runtime initialised (it is idempotent and is run by
// at::globalContext().lazyInitDevice through torch.mlu._lazy_init).
#pragma once

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace torch_mlu {

struct MLUHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override;
  void init() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
  bool isPinnedPtr(const void* data) const override;
  c10::Allocator* getPinnedMemoryAllocator() const override;
  at::Device getDeviceFromPtr(void* data) const override;
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index = -1) const override;
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override;
};

bool is_initialized();

}  // namespace torch_mlu
