// Precompiled header of libtorch_mlu: the heavy torch headers most glue
// translation units include. Only stable, widely used headers belong here.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/TensorUtils.h>
#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
