// Internal: whether this process is a child forked after the runtime started.
// See Note [Forked children] in device.h.
//
// The runtime counts as started once it has started a device thread or
// allocated memory; a fork after that marks the child (pthread_atfork, set up
// at the start). Checking is one relaxed atomic load, so every entry point
// that touches a device, queue, event or allocation checks first.
#pragma once

#include "mlu_runtime/status.h"

namespace mlu::detail {

void note_runtime_started();
bool in_forked_child();
// mluErrorForkedChild, with the detail explaining why.
mluError_t fail_in_forked_child();

}  // namespace mlu::detail
