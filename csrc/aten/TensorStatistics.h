// One-pass statistics of many tensors in one kernel, for the accuracy dump
// (torch_mlu/accuracy/_dump.py): numel, mean, std, min, max, norm of each.
//
// Invariants: one launch on the current stream of the tensors' device (all on
// one mlu device), whatever their number; nothing is read back. Each tensor
// is read once (a tensor that is not dense is first made contiguous), its
// elements widened to double (complex: its real view); the bits do not depend
// on the thread count (Note [One-pass statistics] in the kernel library's
// reduce.cpp). Views, dtypes, devices and sizes are checked on the host, with
// errors naming the tensor.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mlu {

// A float64 tensor of shape (len(tensors), 6) on their device: the
// statistics of each tensor, or, with `minus` (one per tensor, same shape and
// dtype), of each difference tensors[i] - minus[i], subtracted in double.
at::Tensor tensor_statistics(at::TensorList tensors, at::TensorList minus);

}  // namespace torch_mlu
