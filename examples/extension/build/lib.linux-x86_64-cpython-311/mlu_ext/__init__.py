"""mlu_ext: an example extension; importing it registers torch.ops.mlu_ext.muladd."""
import torch

from . import _C  # noqa: F401  (loads the library, whose TORCH_LIBRARY blocks register the op)


def muladd(a: torch.Tensor, b: torch.Tensor, c: float) -> torch.Tensor:
    """a * b + c, elementwise, on mlu or the CPU; differentiable in a and b; works under torch.compile."""
    return torch.ops.mlu_ext.muladd(a, b, c)
