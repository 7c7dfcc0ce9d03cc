// Internal: the simulated machine, read once from the environment.
// See device.h for the variables and their defaults. Reading the
// configuration allocates a little memory and starts no thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mlu::detail {

struct MachineConfig {
  int physical_count;              // TORCH_MLU_DEVICE_COUNT
  std::vector<int> visible;        // physical ordinal of each visible device
  size_t memory_per_device;        // TORCH_MLU_DEVICE_MEMORY
  int cores_per_device;            // TORCH_MLU_DEVICE_CORES
  bool trap_host_access = false;   // TORCH_MLU_TRAP_HOST_ACCESS (Note [Host-access trap])
  // Empty, or what is wrong with the first invalid variable and what it
  // accepts (the fields then hold the defaults, but no device may be used).
  std::string error;
};

// The configuration read on the first call (later changes are not seen).
const MachineConfig& machine_config();
// Reads the environment now (tests).
MachineConfig read_config();
// TORCH_MLU_DEVICE_CORES now (the host's hardware threads when unset); on a
// bad value, the default and the problem in `error`.
int read_cores_per_device(std::string& error);

// Parses "123", "64K", "512M", "8G", "8GB" (powers of 1024). Returns 0 when
// malformed (including a sign or leading blank) or too large for size_t.
size_t parse_byte_size(const char* text);
// Parses a visible-devices list against `physical_count` devices.
std::vector<int> parse_visible_devices(const char* text, int physical_count);

}  // namespace mlu::detail
