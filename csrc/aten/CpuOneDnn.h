// What the CPU's own kernels pick, where mlu's 16-bit kernels round as they
// do: whether PyTorch's CPU backend hands a 16-bit dtype to oneDNN (whose
// rounding differs from its own loops'). Asked through PyTorch's mkldnn ops,
// so the answer is the installed torch's, on this host, with the user's
// torch.backends.mkldnn setting.
#pragma once

#include <c10/core/ScalarType.h>

namespace torch_mlu {

// Whether the CPU's oneDNN takes `type` (Half or BFloat16) and the user left it enabled.
bool cpu_mkldnn_takes(at::ScalarType type);

}  // namespace torch_mlu
