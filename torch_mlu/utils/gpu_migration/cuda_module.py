"""What ``torch.cuda`` is while gpu_migration is applied: torch.mlu under CUDA's names.

Every name torch.mlu has resolves to it (functions with their device arguments converted from CUDA);
the CUDA-only names map to their mlu counterparts (CUDAGraph -> MLUGraph, nvtx -> cnpx, nccl -> cncl).
A name torch.mlu lacks stays CUDA's own (torch's internals read a few), with a warning for public ones.

Note [Capability under migration]: CUDA scripts gate features on the compute capability
(``>= (8, 0)`` for bfloat16 and TF32 paths, ``>= (7, 0)`` for tensor-core kernels). The software MLU
has what those gates ask for, so torch.cuda reports 8.0 (torch.mlu keeps the MLU's own 5.9).
"""
import types

import torch

from .devices import to_mlu, with_mlu_devices
from .patcher import warn

CUDA_CAPABILITY = (8, 0)


def get_device_capability(device=None):
    torch.mlu.get_device_properties(to_mlu(device))  # validates the device as CUDA would
    return CUDA_CAPABILITY


class DeviceProperties:
    """torch.mlu's device properties with the capability of Note [Capability under migration]."""

    def __init__(self, mlu_properties):
        self._mlu = mlu_properties

    major, minor = CUDA_CAPABILITY

    def __getattr__(self, name):
        if name == "_mlu":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self._mlu, name)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self._mlu.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self._mlu.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self._mlu.multi_processor_count}, is_integrated={self._mlu.is_integrated})")


def get_device_properties(device=None):
    return DeviceProperties(torch.mlu.get_device_properties(to_mlu(device)))


class device(torch.mlu.device):
    def __init__(self, device):
        super().__init__(to_mlu(device))


class Stream(torch.mlu.Stream):
    def __new__(cls, device=None, priority=0, **kwargs):
        return super().__new__(cls, to_mlu(device), priority, **kwargs)


def _nccl_module():
    nccl = types.ModuleType("torch.cuda.nccl", "torch.cuda.nccl under gpu_migration: torch.mlu.cncl.")
    nccl.is_available = torch.mlu.cncl.is_available
    nccl.version = torch.mlu.cncl.version
    return nccl


class _MigratedMemoryModule(types.ModuleType):
    """torch.cuda.memory under gpu_migration: torch.mlu.memory, with the CUDA-named classes renamed."""

    _RENAMED = {"CUDAPluggableAllocator": "MLUPluggableAllocator", "_CUDAAllocator": "_MLUAllocator"}

    def __init__(self):
        super().__init__("torch.cuda.memory", torch.mlu.memory.__doc__)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(torch.mlu.memory, self._RENAMED.get(name, name))

    def __dir__(self):
        return sorted(set(dir(torch.mlu.memory)) | set(self._RENAMED))


class MigratedCudaModule(types.ModuleType):
    def __init__(self, original):
        super().__init__("torch.cuda", __doc__)
        self._original = original
        self.__dict__.update(
            is_available=torch.mlu.is_available,
            device_count=torch.mlu.device_count,
            get_device_capability=get_device_capability,
            get_device_properties=get_device_properties,
            device=device,
            Stream=Stream,
            CUDAGraph=torch.mlu.MLUGraph,
            CUDAPluggableAllocator=torch.mlu.memory.MLUPluggableAllocator,
            nvtx=torch.mlu.cnpx,
            nccl=_nccl_module(),
            memory=_MigratedMemoryModule(),
            amp=torch.mlu.amp,
            get_arch_list=lambda: [],
            get_gencode_flags=lambda: "",
        )
        self._wrapped = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._wrapped:
            return self._wrapped[name]
        try:
            value = getattr(torch.mlu, name)
        except AttributeError:
            # torch's own code reads CUDA internals (torch._dynamo: torch.cuda._CudaDeviceProperties) and
            # some CUDA features have no mlu counterpart: those names stay CUDA's, as without the import.
            value = getattr(self._original, name)
            if not name.startswith("_"):
                warn(f"torch.cuda.{name} has no mlu counterpart: it is CUDA's own (gpu_migration)")
            self._wrapped[name] = value
            return value
        if callable(value) and not isinstance(value, type):
            value = with_mlu_devices(value)
        self._wrapped[name] = value
        return value

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(torch.mlu)))


def submodules(cuda):
    """sys.modules entries for `import torch.cuda.<name>` / `from torch.cuda.<name> import ...`."""
    return {
        "torch.cuda": cuda,
        "torch.cuda.amp": torch.mlu.amp,
        "torch.cuda.random": torch.mlu.random,
        "torch.cuda.memory": cuda.memory,
        "torch.cuda.graphs": torch.mlu.graphs,
        "torch.cuda.streams": torch.mlu.streams,
        "torch.cuda.nvtx": torch.mlu.cnpx,
        "torch.cuda.nccl": cuda.nccl,
    }
