// Internal: the arena behind Note [Host-access trap] (mlu_runtime/host_trap.h).
#pragma once

#include <cstddef>

namespace mlu::detail {

// Whether TORCH_MLU_TRAP_HOST_ACCESS=1 (the configuration's value).
bool trap_enabled();
// `bytes` of trapped device memory for `device` (the host-visible, trapped
// address; its device mapping is mluDevicePointer of it), or nullptr when the
// window is exhausted. Records the calling native stack for reports.
void* trap_allocate(size_t bytes, int device);
// Gives back what trap_allocate returned; its pages go back to the host.
void trap_release(void* ptr);

}  // namespace mlu::detail
