// Devices of the software MLU.
//
// The runtime simulates N physical devices (TORCH_MLU_DEVICE_COUNT, default 2),
// of which a subset is visible (MLU_VISIBLE_DEVICES, else CN_VISIBLE_DEVICES: a
// comma list of physical ordinals; parsing stops at the first invalid entry,
// as CUDA does). Visible devices are numbered 0..count-1. Each device has its
// own memory capacity (TORCH_MLU_DEVICE_MEMORY, e.g. "8G"; default
// min(16 GiB, host RAM / 4)) and a compute-core count (TORCH_MLU_DEVICE_CORES,
// default: the CPUs this process may use, divided among torchrun's
// LOCAL_WORLD_SIZE ranks: Note [Ranks of one host share its cores] in
// runtime/src/config.cpp). The environment is read once, on the
// first runtime call, and reading it starts no thread (fork-safe). A malformed
// or out-of-range value is an error, never silently replaced by the default:
// mluGetDeviceCount and every call that takes a device then return
// mluErrorInitialization with a detail naming the variable and its forms.
// The current device is per host thread and starts at 0.
//
// Note [Forked children]
// A child forked after the runtime started (a queue thread ran or memory was
// allocated) has none of the parent's device threads, and the runtime's locks
// may have been held by threads that do not exist there. Every call that would
// use a device, a queue, an event or device memory therefore returns
// mluErrorForkedChild in such a child, at once and without taking a lock
// (frees included: the child leaks the inherited memory, which its exit
// reclaims). mluGetDeviceCount and mluGetDeviceProperties keep working. A
// child forked before the runtime started may use it normally.
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
// True in a child forked after the runtime started (Note [Forked children]).
bool mluIsForkedChild();
mluError_t mluGetDevice(int* device);
mluError_t mluSetDevice(int device);
mluError_t mluGetDeviceProperties(mluDeviceProp* prop, int device);
// The compute cores each device will have (TORCH_MLU_DEVICE_CORES, else the
// host's CPUs shared among its ranks; the default when the value is bad, which the first
// device call then reports). Unlike every other call it reads the environment
// afresh and does not fix the device configuration, so a library may size its
// thread pool at load time while MLU_VISIBLE_DEVICES can still be set.
int mluConfiguredCoresPerDevice();
mluError_t mluRuntimeGetVersion(int* version);
mluError_t mluDriverGetVersion(int* version);

// Waits for every queue of the current device; reports the device's sticky error.
mluError_t mluDeviceSynchronize();
// Same for an explicit device, without changing the current one.
mluError_t mluDeviceSynchronizeOn(int device);

}  // namespace mlu
