"""flex_attention compiled for mlu: Inductor's CPU C++ template.

Note [Compiled flex_attention on mlu]
Inductor's lowering of the flex_attention higher-order op (torch/_inductor/kernel/flex/flex_attention.py) picks a
template by device name: "cpu" a C++ one (flex_cpu.lower_cpu: CppFlexAttentionTemplate, a blocked flash-style
loop over the block mask with score_mod and mask_mod inlined), "mps" Metal, any other device Triton. mlu
generates C++ (Note [Inductor's view of mlu]), so its inputs take the CPU's template, which MluCppScheduling
renders and launches like any other C++ kernel of the graph. As on the CPU, that template computes the forward
only: a compiled call that needs the log-sum-exp (inputs that require grad, return_lse) never reaches it on mlu,
which compiles PyTorch's dense math instead (Note [Compiled flex_attention training on mlu]); on the CPU such
calls are refused.
"""
import torch
from torch._inductor import lowering as inductor_lowering
from torch._inductor.kernel.flex import flex_cpu

from .. import patches

_HOP = torch.ops.higher_order.flex_attention


def install() -> None:
    lower = inductor_lowering.lowerings[_HOP]

    def lower_flex_attention(query, *args, **kwargs):
        if query.get_device().type == "mlu":
            return flex_cpu.lower_cpu(query, *args, **kwargs)
        return lower(query, *args, **kwargs)

    patches.set_item(inductor_lowering.lowerings, _HOP, lower_flex_attention,
                     "mlu takes the CPU's C++ template (Note [Compiled flex_attention on mlu])",
                     label="torch._inductor.lowering.lowerings")
