"""The patches of gpu_migration, applied on import and undone by `restore()`.

Note [What migration patches]: a CUDA script reaches the device in five ways, each covered here:
device arguments (torch factories, Tensor / Module methods, the classes that take a device, torch.load
and checkpoints saved on CUDA), the torch.cuda module (cuda_module.py), tensor attributes
(``is_cuda``, ``.cuda()``, legacy type names), the distributed backend name (nccl -> cncl), and the
environment (torch_mlu/utils/cuda_environment.py). Patches live on torch's own modules and classes, so libraries that
call torch see them as the user's code does. Functions a library imported by name before the import
(``from torch import zeros``) keep the original; import gpu_migration first.
"""
import functools
import inspect

import torch
import torch.utils._device
import torch.utils.data

from .. import cuda_environment as env_migration
from . import cuda_module
from .devices import to_mlu, with_mlu_devices
from .patcher import Patcher, warn

# torch.* functions that take a device (factories, loading, defaults).
TORCH_FUNCTIONS = (
    "tensor", "as_tensor", "asarray", "empty", "empty_like", "empty_strided", "empty_permuted", "zeros",
    "zeros_like", "ones", "ones_like", "full", "full_like", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "arange", "range", "linspace", "logspace", "eye", "normal", "scalar_tensor",
    "tril_indices", "triu_indices", "sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
    "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor", "hann_window", "hamming_window",
    "bartlett_window", "blackman_window", "kaiser_window", "from_file", "set_default_device", "get_device_module",
    "get_autocast_dtype", "set_autocast_dtype", "load",
)
TENSOR_METHODS = ("to", "new_tensor", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
                  "pin_memory", "is_pinned")
MODULE_METHODS = ("to", "to_empty")

_patcher = None


def is_applied():
    return _patcher is not None


def apply():
    """Routes CUDA to mlu (idempotent)."""
    global _patcher
    if _patcher is not None:
        return
    patcher = Patcher()
    _migrate_environment(patcher)  # first: before anything reads the device configuration
    # torch's compiler stack reads torch.cuda at import time to set up CUDA's device interface; it is
    # imported anyway by the first optimizer. Import it while torch.cuda is still CUDA's.
    import torch._dynamo  # noqa: F401
    # Filled once and cached: must hold torch's own constructors, not the wrappers below
    # (DeviceContext.__torch_function__ compares against it).
    torch.utils._device._device_constructors()
    _patch_device_arguments(patcher)
    _patch_cuda_module(patcher)
    _patch_tensor_attributes(patcher)
    _patch_autocast(patcher)
    _patch_serialization(patcher)
    _patch_distributed(patcher)
    _patch_profiler(patcher)
    _patcher = patcher


def restore():
    """Undoes every patch: torch is as it was before the import (environment variables included)."""
    global _patcher
    if _patcher is not None:
        _patcher.undo_all()
        _patcher = None


def _migrate_environment(patcher):
    import os
    copied, ignored = env_migration.migrate_environment()
    patcher.call_on_undo(lambda: [os.environ.pop(name, None) for name in copied])
    if ignored:
        warn(f"gpu_migration: {', '.join(ignored)} {'has' if len(ignored) == 1 else 'have'} no mlu equivalent "
             "and will be ignored")


def _patch_device_arguments(patcher):
    for name in TORCH_FUNCTIONS:
        patcher.wrap(torch, name, with_mlu_devices)
    for name in TENSOR_METHODS:
        patcher.wrap(torch.Tensor, name, with_mlu_devices)
    for name in MODULE_METHODS:
        patcher.wrap(torch.nn.Module, name, with_mlu_devices)
    classes = [torch.utils._device.DeviceContext, torch.utils.data.DataLoader, torch.UntypedStorage,
               torch.nn.parallel.DistributedDataParallel, torch.mlu.device]
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
        classes.append(FullyShardedDataParallel)
    except ImportError:
        pass
    for cls in classes:
        patcher.wrap(cls, "__init__", with_mlu_devices)
    patcher.wrap(torch.UntypedStorage, "__new__", _static(with_mlu_devices))
    patcher.set(torch, "Generator", _migrating_generator())
    if hasattr(torch.distributed, "device_mesh"):
        patcher.wrap(torch.distributed.device_mesh, "init_device_mesh", with_mlu_devices, warn_missing=False)
        patcher.wrap(torch.distributed, "init_device_mesh", with_mlu_devices, warn_missing=False)


def _static(wrapper):
    return lambda fn: staticmethod(wrapper(fn))


def _migrating_generator():
    base = torch.Generator

    class _GeneratorMeta(type(base)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, base)

    class Generator(base, metaclass=_GeneratorMeta):
        """torch.Generator that reads device="cuda" as mlu (gpu_migration)."""

        def __new__(cls, device="cpu"):
            return base.__new__(cls, to_mlu(device))

    Generator.__module__ = "torch"
    return Generator


def _patch_cuda_module(patcher):
    cuda = cuda_module.MigratedCudaModule(torch.cuda)
    patcher.set(torch, "cuda", cuda)
    for name, module in cuda_module.submodules(cuda).items():
        patcher.set_module(name, module)


def _patch_tensor_attributes(patcher):
    base_is_cuda = torch._C.TensorBase.is_cuda
    patcher.set(torch.Tensor, "is_cuda", property(lambda t: t.device.type == "mlu" or base_is_cuda.__get__(t),
                                                  doc="True for mlu tensors under gpu_migration"))
    patcher.set(torch.Tensor, "cuda", with_mlu_devices(torch.Tensor.mlu))
    patcher.set(torch.nn.Module, "cuda", with_mlu_devices(torch.nn.Module.mlu))
    patcher.set(torch.UntypedStorage, "cuda", with_mlu_devices(torch.UntypedStorage.mlu))
    patcher.set(torch.TypedStorage, "cuda", with_mlu_devices(torch.TypedStorage.mlu))
    patcher.wrap(torch.Tensor, "type", _legacy_type_names)


def _legacy_type_names(type_fn):
    @functools.wraps(type_fn)
    def type_(self, dtype=None, non_blocking=False, **kwargs):
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            dtype = "torch.mlu." + dtype[len("torch.cuda."):]
        return type_fn(self, dtype, non_blocking, **kwargs)

    return type_


def _patch_autocast(patcher):
    patcher.wrap(torch.amp.autocast_mode.autocast, "__init__", with_mlu_devices)
    patcher.wrap(torch.amp.GradScaler, "__init__", _default_device_mlu)
    for name in ("custom_fwd", "custom_bwd"):
        patcher.wrap(torch.amp, name, with_mlu_devices)
    # The device-less forms (deprecated, CUDA's) now mean mlu.
    is_enabled, set_enabled = torch.is_autocast_enabled, torch.set_autocast_enabled
    patcher.set(torch, "is_autocast_enabled", lambda device_type="mlu": is_enabled(to_mlu(device_type)))

    def set_autocast_enabled(*args):
        return set_enabled("mlu", *args) if len(args) == 1 else set_enabled(to_mlu(args[0]), args[1])

    patcher.set(torch, "set_autocast_enabled", set_autocast_enabled)
    patcher.set(torch, "get_autocast_gpu_dtype", functools.partial(torch.get_autocast_dtype, "mlu"))
    patcher.set(torch, "set_autocast_gpu_dtype", functools.partial(torch.set_autocast_dtype, "mlu"))


def _default_device_mlu(init):
    """GradScaler(device="cuda") is CUDA's default: with no device given, mlu."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        bound = signature.bind_partial(self, *args, **kwargs)
        bound.arguments["device"] = to_mlu(bound.arguments.get("device", "mlu"))
        return init(*bound.args, **bound.kwargs)

    return wrapper


def _patch_serialization(patcher):
    patcher.wrap(torch.serialization, "load", with_mlu_devices)

    def restore_on_mlu(storage, location):
        # Checkpoints saved on CUDA name "cuda:N" locations; without a map_location they load on mlu:N.
        if location.startswith("cuda"):
            return storage.to(device=torch.device(to_mlu(location)))
        return None

    entry = (19, lambda storage: None, restore_on_mlu)  # before torch's cuda entry (priority 20)
    registry = torch.serialization._package_registry
    registry.append(entry)  # undone by the call_on_undo below
    registry.sort(key=lambda e: e[0])  # undone by removing the entry: the others were in order
    patcher.call_on_undo(functools.partial(registry.remove, entry))


def _to_cncl(backend):
    if isinstance(backend, str):
        return backend.replace("nccl", "cncl").replace("cuda:", "mlu:")
    return backend


def _with_cncl(fn):
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        if "backend" in bound.arguments:
            bound.arguments["backend"] = _to_cncl(bound.arguments["backend"])
        if "device_id" in bound.arguments:
            bound.arguments["device_id"] = to_mlu(bound.arguments["device_id"])
        return fn(*bound.args, **bound.kwargs)

    return wrapper


def _patch_distributed(patcher):
    import torch.distributed as dist
    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d
    for owner in (dist, c10d):
        patcher.wrap(owner, "init_process_group", _with_cncl)
        patcher.wrap(owner, "new_group", _with_cncl)
        patcher.set(owner, "is_nccl_available", dist.is_cncl_available)


def _patch_profiler(patcher):
    from torch.autograd import profiler_util
    activity = torch.profiler.ProfilerActivity

    def activities_on_mlu(init):
        @functools.wraps(init)
        def wrapper(self, *args, activities=None, **kwargs):
            if activities is not None:
                activities = [activity.PrivateUse1 if a == activity.CUDA else a for a in activities]
            return init(self, *args, activities=activities, **kwargs)
        return wrapper

    def sort_keys_on_device(table):
        @functools.wraps(table)
        def wrapper(self, *args, sort_by=None, **kwargs):
            if isinstance(sort_by, str):
                sort_by = sort_by.replace("cuda", "device")
            return table(self, *args, sort_by=sort_by, **kwargs)
        return wrapper

    patcher.wrap(torch.profiler.profile, "__init__", activities_on_mlu)
    patcher.wrap(profiler_util.EventList, "table", sort_keys_on_device)
