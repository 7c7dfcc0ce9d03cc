#include "csrc/core/MLUHooks.h"

#include <atomic>

#include <ATen/Context.h>

#include <mlu_runtime/memory.h>

#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUGeneratorImpl.h"
#include "csrc/core/MLUHostAllocator.h"
#include "csrc/core/MLUStorage.h"

namespace torch_mlu {
namespace {
std::atomic<bool> g_initialized{false};
}

bool is_initialized() { return g_initialized.load(); }

bool MLUHooks::isAvailable() const { return device_count() > 0; }

void MLUHooks::init() const {
  TORCH_CHECK(device_count() > 0, "No MLU device is visible: torch_mlu found 0 devices (check ",
              "MLU_VISIBLE_DEVICES and TORCH_MLU_DEVICE_COUNT).");
  g_initialized.store(true);
}

bool MLUHooks::hasPrimaryContext(c10::DeviceIndex device_index) const {
  return is_initialized() && device_index >= 0 && device_index < device_count();
}

c10::DeviceIndex MLUHooks::deviceCount() const { return device_count(); }
void MLUHooks::setCurrentDevice(c10::DeviceIndex device) const { set_device(device); }
c10::DeviceIndex MLUHooks::getCurrentDevice() const { return current_device(); }
c10::DeviceIndex MLUHooks::exchangeDevice(c10::DeviceIndex device) const { return exchange_device(device); }
c10::DeviceIndex MLUHooks::maybeExchangeDevice(c10::DeviceIndex device) const {
  if (device < 0 || device >= device_count()) return -1;
  return exchange_device(device);
}

bool MLUHooks::isPinnedPtr(const void* data) const { return torch_mlu::isPinnedPtr(data); }
c10::Allocator* MLUHooks::getPinnedMemoryAllocator() const {
  at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);  // as CUDA: pinning initialises the device
  return getMLUHostAllocator();
}

at::Device MLUHooks::getDeviceFromPtr(void* data) const {
  mlu::mluPointerAttributes attributes{};
  mlu::mluPointerGetAttributes(&attributes, data);
  TORCH_CHECK(attributes.type == mlu::mluMemoryTypeDevice, "The pointer ", data,
              " is not mlu device memory allocated by torch_mlu.");
  return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(attributes.device));
}

const at::Generator& MLUHooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return getDefaultMLUGenerator(device_index);
}

at::Generator MLUHooks::getNewGenerator(c10::DeviceIndex device_index) const {
  return createMLUGenerator(device_index);
}

void MLUHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const {
  resize_storage_bytes(storage, new_bytes);
}

namespace {
// Loading libtorch_mlu makes the device: the name (so a libtorch program
// without Python can say torch::Device("mlu:0") and torch::manual_seed seeds
// mlu) and the hooks. torch_mlu/__init__.py still renames the backend from
// Python too, which also names it in torch's Python modules; registering the
// same name twice is allowed.
struct RegisterHooks {
  RegisterHooks() {
    c10::register_privateuse1_backend("mlu");
    at::RegisterPrivateUse1HooksInterface(new MLUHooks());
  }
} g_register_hooks;
}  // namespace

}  // namespace torch_mlu
