// Ops whose PyTorch implementation is device-generic code (it only calls other
// ATen ops) but which native_functions.yaml registers for CPU and CUDA alone:
// mlu registers the same exported at::native functions, so they run natively
// on top of mlu's kernels instead of through the CPU fallback. Each one was
// read in PyTorch 2.13's source to be generic; one that touches host data or
// checks the device type does not belong here, nor one whose result layout
// differs from the CPU's dedicated kernel (channel_shuffle: the generic path
// returns a contiguous tensor where the CPU keeps channels-last).
#include <ATen/ops/count_nonzero_native.h>
#include <ATen/ops/mvlgamma_native.h>
#include <ATen/ops/remainder_native.h>
#include <ATen/ops/rsub_native.h>

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/GenericNativeOps.inc"
