// Devices of the software MLU.
//
// The runtime simulates N physical devices (TORCH_MLU_DEVICE_COUNT, default 2),
// of which a subset is visible (MLU_VISIBLE_DEVICES, else CN_VISIBLE_DEVICES: a
// comma list of physical ordinals; parsing stops at the first invalid entry,
// as CUDA does). Visible devices are numbered 0..count-1. Each device has its
// own memory capacity (TORCH_MLU_DEVICE_MEMORY, e.g. "8G"; default
// min(16 GiB, host RAM / 4)) and a compute-core count (TORCH_MLU_DEVICE_CORES,
// default: the host's hardware threads). The environment is read once, on the
// first runtime call, and reading it starts no thread (fork-safe).
// The current device is per host thread and starts at 0.
#pragma once

#include <cstddef>

#include "mlu_runtime/status.h"

namespace mlu {

struct mluDeviceProp {
  char name[64];
  size_t totalGlobalMem;     // bytes of device memory (the capacity)
  int major;                 // architecture generation
  int minor;
  int multiProcessorCount;   // compute cores = clusterCount * coresPerCluster
  int clusterCount;
  int coresPerCluster;
  int isIntegrated;          // 0: discrete device memory
  int physicalId;            // ordinal before MLU_VISIBLE_DEVICES remapping
  int directHostAccess;      // 1: the host may read and write device memory in place
                             // (the software MLU's memory is host memory); work
                             // queued on the device must be waited for first
};

// Versions reported by mluDriverGetVersion / mluRuntimeGetVersion (major*1000 + minor*10).
constexpr int kMluRuntimeVersion = 1000;

mluError_t mluGetDeviceCount(int* count);
mluError_t mluGetDevice(int* device);
mluError_t mluSetDevice(int device);
mluError_t mluGetDeviceProperties(mluDeviceProp* prop, int device);
mluError_t mluRuntimeGetVersion(int* version);
mluError_t mluDriverGetVersion(int* version);

// Waits for every queue of the current device; reports the device's sticky error.
mluError_t mluDeviceSynchronize();
// Same for an explicit device, without changing the current one.
mluError_t mluDeviceSynchronizeOn(int device);

}  // namespace mlu
