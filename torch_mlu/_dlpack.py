"""DLPack for mlu tensors: ``torch.from_dlpack``, ``torch.utils.dlpack.to_dlpack`` and ``__dlpack__``.

PyTorch 2.13's C++ DLPack conversion handles the PrivateUse1 device (as ``kDLExtDev`` with the device index,
both ways, sharing memory), but ``Tensor.__dlpack_device__`` tests ``self.device.type == "privateuse1"``, which
a renamed backend's tensors never satisfy, and so raises "Unknown device type mlu for Dlpack" for every mlu
tensor; ``torch.from_dlpack(mlu_tensor)`` asks it first. ``install()`` wraps ``__dlpack_device__`` to answer
for mlu tensors what PyTorch answers for a PrivateUse1 one, and leaves every other tensor to PyTorch.
Nothing is synchronised on export: a consumer on mlu sees the producer's queued work in stream order, as a
CUDA consumer on the producer's stream does.
"""
import torch
from torch.overrides import has_torch_function_unary
from torch.utils.dlpack import DLDeviceType

from . import patches


def install():
    original = torch.Tensor.__dlpack_device__
    if getattr(original, "_mlu_aware", False):
        return

    def __dlpack_device__(self):
        if not has_torch_function_unary(self) and self.device.type == "mlu":
            return (DLDeviceType.kDLExtDev, self.device.index)
        return original(self)

    __dlpack_device__._mlu_aware = True
    __dlpack_device__.__doc__ = original.__doc__
    patches.set_attr(torch.Tensor, "__dlpack_device__", __dlpack_device__,
                     'mlu tensors answer kDLExtDev (torch tests device.type == "privateuse1")')
