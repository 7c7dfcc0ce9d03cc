// Internal: the hooks of Note [Fault injection] (mlu_runtime/fault.h).
#pragma once

#include <cstddef>
#include <string>

#include "mlu_runtime/queue.h"

namespace mlu::detail {

// True when any rule is set (one relaxed load): the hooks below are called only then.
bool faults_active();
// For a kernel or copy being launched (or replayed from a graph): the reason
// it must fail (a string that lives forever), or nullptr.
const char* fault_for_task(TaskKind kind, const char* name);
// Before a device (host=false) or pinned host allocation: the reason it must fail, or nullptr.
const char* fault_for_allocation(bool host);
// Milliseconds each kernel and copy waits before it runs (0: none).
int fault_delay_ms();
// The injected capacity limit of every device; SIZE_MAX when none.
size_t fault_capacity_limit();
// "" when `spec` is valid; else what is wrong and the grammar (config.cpp).
std::string check_fault_spec(const char* spec);

}  // namespace mlu::detail
