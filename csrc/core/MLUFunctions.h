// Device management for the glue, mirroring c10/cuda/CUDAFunctions.h.
//
// device_count() never throws and never starts device threads, so it is safe
// before fork (torch.mlu.is_available uses it). Functions taking a device
// index check it and throw a c10::Error saying which indices are valid.
#pragma once

#include <c10/core/Device.h>

namespace torch_mlu {

c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex device);
// Sets `device` and returns the previous one (no change for a negative index).
c10::DeviceIndex exchange_device(c10::DeviceIndex device);
// Throws a c10::Error unless 0 <= device < device_count().
void check_device_index(c10::DeviceIndex device);
// Waits for all work on `device` (the current one for -1).
void device_synchronize(c10::DeviceIndex device = -1);
// True when MLU_LAUNCH_BLOCKING=1 (or CUDA_LAUNCH_BLOCKING=1): every launch waits.
bool launch_blocking();

}  // namespace torch_mlu
