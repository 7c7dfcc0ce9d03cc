#include "csrc/core/MLUFunctions.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include <mlu_runtime/device.h>

#include <c10/util/Exception.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUTrace.h"

namespace torch_mlu {

c10::DeviceIndex device_count() noexcept {
  // The runtime reads its configuration once per process: the count never
  // changes, and every op's device checks ask for it.
  static const c10::DeviceIndex count = [] {
    int visible = 0;
    if (mlu::mluGetDeviceCount(&visible) != mlu::mluSuccess) return 0;
    return visible;
  }();
  return count;
}

void check_device_index(c10::DeviceIndex device) {
  const c10::DeviceIndex count = device_count();
  TORCH_CHECK(device >= 0 && device < count, "Invalid device argument: mlu:", static_cast<int>(device),
              " does not exist. ",
              count == 0 ? std::string("No MLU device is visible (check MLU_VISIBLE_DEVICES).")
                         : "There " + std::string(count == 1 ? "is 1 MLU device" : "are " + std::to_string(count) + " MLU devices") +
                               ": use an index from 0 to " + std::to_string(count - 1) + ".");
}

c10::DeviceIndex current_device() {
  int device = 0;
  MLU_CHECK(mlu::mluGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

void set_device(c10::DeviceIndex device) {
  check_device_index(device);
  MLU_CHECK(mlu::mluSetDevice(device));
}

c10::DeviceIndex exchange_device(c10::DeviceIndex device) {
  c10::DeviceIndex previous = current_device();
  if (device >= 0 && device != previous) set_device(device);
  return previous;
}

void device_synchronize(c10::DeviceIndex device) {
  if (device < 0) device = current_device();
  check_device_index(device);
  MLU_CHECK(mlu::mluDeviceSynchronizeOn(device));
  trace::device_synchronization();
}

bool launch_blocking() {
  static const bool blocking = [] {
    for (const char* name : {"MLU_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING"}) {
      const char* value = std::getenv(name);
      if (value != nullptr && std::strcmp(value, "1") == 0) return true;
    }
    return false;
  }();
  return blocking;
}

}  // namespace torch_mlu
