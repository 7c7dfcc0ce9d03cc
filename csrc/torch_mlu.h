// The public C++ API of torch_mlu, for extensions and libtorch programs
// (docs/extending.md). Installed with the package under torch_mlu/include;
// link libtorch_mlu (CMake: find_package(TorchMLU), target torch_mlu::torch_mlu;
// setuptools: torch_mlu.utils.cpp_extension.MLUExtension).
//
//   MLUStream.h            streams: getCurrentMLUStream, getStreamFromPool, ...
//   MLUGuard.h             MLUGuard, OptionalMLUGuard, MLUStreamGuard
//   MLUEvent.h             MLUEvent: record, block, query, synchronize, elapsed_time
//   MLULaunch.h            launch_kernel: run host code as a kernel on a stream
//   MLUFunctions.h         device_count, current_device, set_device, device_synchronize
//   MLUCachingAllocator.h  the caching allocator (raw_alloc, record_stream, statistics)
//   MLUException.h         MLU_CHECK: a runtime status as a C++ exception
//   mlu_runtime/*.h        the software MLU's runtime (queues, events, memory)
//   mlu_kernels/parallel.h parallel_for over the device's compute cores
//   mlu_kernels/gemm.h     the matrix-multiplication kernel
#pragma once

#include <mlu_kernels/gemm.h>
#include <mlu_kernels/parallel.h>
#include <mlu_runtime/mlu_runtime.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUEvent.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUGuard.h"
#include "csrc/core/MLULaunch.h"
#include "csrc/core/MLUStream.h"
