// The software MLU runtime: a CUDA/CNRT-shaped C++ API over simulated devices.
// Include this umbrella header, or the one header per concept it lists.
#pragma once

#include "mlu_runtime/device.h"
#include "mlu_runtime/event.h"
#include "mlu_runtime/fault.h"
#include "mlu_runtime/graph.h"
#include "mlu_runtime/host_trap.h"
#include "mlu_runtime/ipc.h"
#include "mlu_runtime/memcpy.h"
#include "mlu_runtime/memory.h"
#include "mlu_runtime/monitor.h"
#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"
#include "mlu_runtime/tracer.h"
#include "mlu_runtime/virtual_memory.h"
