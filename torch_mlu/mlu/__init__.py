"""torch.mlu: the MLU device module, mirroring torch.cuda name for name.

Initialisation is lazy, as in torch.cuda: nothing here starts the device
until a tensor is created on it or a call needs it. ``is_available`` and
``device_count`` never initialise the device, so they are safe before fork
(``PYTORCH_CNDEV_BASED_MLU_CHECK=1``, which accelerate sets, changes nothing:
the check is always of that kind).
"""
import threading
import traceback
import warnings
from functools import lru_cache
from typing import Any, Union

import torch
import torch_mlu._C as _C

from ._utils import _get_device_index

_device_t = Union[torch.device, str, int, None]

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []  # callables run at the end of the first initialisation
default_generators: tuple = ()  # one torch.Generator per device, filled by _lazy_init


class DeferredMluCallError(Exception):
    pass


OutOfMemoryError = torch.OutOfMemoryError


def _is_in_bad_fork() -> bool:
    return _C._mlu_isInBadFork()


def is_available() -> bool:
    """True if at least one MLU device is visible. Never initialises the device."""
    return device_count() > 0


def device_count() -> int:
    """Number of visible MLU devices (``MLU_VISIBLE_DEVICES``). Never initialises the device.

    0, with a warning naming the variable, when a ``TORCH_MLU_*`` setting is invalid (as CUDA warns
    "CUDA initialization: ..." and reports no device).
    """
    count = _C._mlu_getDeviceCount()
    if count == 0:
        problem = _C._mlu_configError()
        if problem:
            warnings.warn(f"MLU initialization: {problem}")
    return count


def is_initialized() -> bool:
    return _initialized and not _is_in_bad_fork()


def _lazy_call(callable, **kwargs):
    """Runs ``callable`` now if the device is initialised, else at initialisation."""
    if is_initialized():
        callable()
    else:
        _queued_calls.append((callable, traceback.format_stack()))


def init():
    """Initialises the MLU runtime (done lazily by any MLU work otherwise)."""
    _lazy_init()


def _lazy_init():
    global _initialized
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize MLU in forked subprocess. To use MLU with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        if device_count() == 0:
            problem = _C._mlu_configError()
            if problem:
                raise RuntimeError(f"MLU initialization failed: {problem}")
            raise RuntimeError(
                "No MLU devices are available: check MLU_VISIBLE_DEVICES and TORCH_MLU_DEVICE_COUNT"
            )
        _C._mlu_init()
        global default_generators
        default_generators = tuple(_C._mlu_getDefaultGenerator(i) for i in range(device_count()))
        _tls.is_initializing = True
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    msg = (
                        f"MLU call failed lazily at initialization with error: {str(e)}\n\n"
                        f"MLU call was originally invoked at:\n\n{''.join(orig_traceback)}"
                    )
                    raise DeferredMluCallError(msg) from e
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def current_device() -> int:
    """Index of the current MLU device of this thread."""
    _lazy_init()
    return _C._mlu_getDevice()


def set_device(device: _device_t) -> None:
    """Sets the current MLU device of this thread (a negative index does nothing)."""
    device = _get_device_index(device)
    if device >= 0:
        _C._mlu_setDevice(device)


def _exchange_device(device: int) -> int:
    if device < 0:
        return -1
    _lazy_init()
    return _C._mlu_exchangeDevice(device)


def _maybe_exchange_device(device: int) -> int:
    """Like :func:`_exchange_device`, without initialising the device when it was not (cf. torch.cuda)."""
    if device < 0:
        return -1
    if not is_initialized():
        return device
    return _C._mlu_exchangeDevice(device)


class _DeviceGuard:
    """Makes device ``index`` current for the duration of a ``with`` block (cf. torch.cuda._DeviceGuard).

    What Inductor's generated code uses around the kernels of a compiled graph.
    """

    def __init__(self, index: int):
        self.idx = index
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, type: Any, value: Any, traceback: Any):
        self.idx = _maybe_exchange_device(self.prev_idx)
        return False


class device:
    """Context manager that changes the current MLU device.

    Args:
        device (torch.device or int or str): device index to select. A negative
            index or ``None`` leaves the device unchanged.
    """

    def __init__(self, device: Any):
        self.idx = _get_device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _exchange_device(self.idx)

    def __exit__(self, type: Any, value: Any, traceback: Any):
        _exchange_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of ``obj`` (a tensor or storage) current.

    Does nothing when ``obj`` is not on an MLU device.
    """

    def __init__(self, obj):
        idx = obj.get_device() if getattr(obj, "is_mlu", False) else -1
        super().__init__(idx if idx >= 0 else None)


def synchronize(device: _device_t = None) -> None:
    """Waits for all work on all streams of ``device`` (default: the current one).

    Errors from device tasks (a device-side index error, for example) are
    raised here, as torch.AcceleratorError naming the failed op.
    """
    _lazy_init()
    _C._mlu_synchronize(_get_device_index(device, optional=True))


class _MLUDeviceProperties:
    """Properties of one MLU device (cf. torch.cuda's _CudaDeviceProperties)."""

    def __init__(self, props: dict):
        self.name: str = props["name"]
        self.total_memory: int = props["total_memory"]
        self.major: int = props["major"]
        self.minor: int = props["minor"]
        self.multi_processor_count: int = props["multi_processor_count"]
        self.cluster_count: int = props["cluster_count"]
        self.core_num_per_cluster: int = props["core_num_per_cluster"]
        self.is_integrated: bool = props["is_integrated"]
        self.physical_id: int = props["physical_id"]
        # The AMD architecture name of torch.cuda's properties: empty, there is none. Code that takes
        # torch.version.hip's branch when torch.version.cuda is None (Inductor's cache key, under gpu_migration)
        # reads it.
        self.gcnArchName: str = ""

    def __repr__(self):
        return (
            f"_MLUDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


@lru_cache(maxsize=None)
def _cached_properties(index: int) -> _MLUDeviceProperties:
    return _MLUDeviceProperties(_C._mlu_getDeviceProperties(index))


def get_device_properties(device: _device_t = None) -> _MLUDeviceProperties:
    """Properties of ``device`` (default: the current one)."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    if index < 0 or index >= device_count():
        raise AssertionError(f"Invalid device id: mlu:{index} (there are {device_count()} MLU devices)")
    return _cached_properties(index)


def get_device_name(device: _device_t = None) -> str:
    """Name of ``device`` (default: the current one)."""
    return get_device_properties(device).name


def get_device_capability(device: _device_t = None) -> tuple:
    """``(major, minor)`` architecture version of ``device``."""
    props = get_device_properties(device)
    return props.major, props.minor


def _sleep(cycles: int) -> None:
    """Keeps the current stream busy for ``cycles`` cycles of a 1 GHz clock (cf. torch.cuda._sleep)."""
    _lazy_init()
    _C._mlu_sleep(int(cycles))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is supported from architecture 5 on (all software MLUs)."""
    return is_available() and get_device_capability()[0] >= 5


def get_amp_supported_dtype() -> list:
    """The dtypes ``torch.autocast("mlu")`` casts to: float16 and bfloat16."""
    return [torch.float16, torch.bfloat16]


def is_autocast_enabled() -> bool:
    """Whether autocast is on for mlu in this thread (``torch.is_autocast_enabled("mlu")``)."""
    return torch.is_autocast_enabled("mlu")


def set_autocast_enabled(enabled: bool) -> None:
    """Turns autocast for mlu on or off in this thread (``torch.set_autocast_enabled("mlu", enabled)``)."""
    torch.set_autocast_enabled("mlu", enabled)


def get_autocast_dtype() -> torch.dtype:
    """The dtype autocast casts to on mlu (float16 unless set)."""
    return torch.get_autocast_dtype("mlu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    """Sets the dtype autocast casts to on mlu (float16 or bfloat16)."""
    torch.set_autocast_dtype("mlu", dtype)


# Inductor looks up torch.mlu.Scheduling the first time it compiles a graph
# (torch._inductor.codegen.common.init_backend_registration): that imports the
# backend, which registers itself with its config (importing it only then
# keeps `import torch` fast). There is deliberately no
# torch.mlu.CppWrapperCodegen: finding one, Inductor would register the
# backend a second time, without its config.
_INDUCTOR_CODEGENS = ("Scheduling", "PythonWrapperCodegen", "WrapperFxCodegen")


def __getattr__(name: str):
    if name == "_sanitizer":  # imported on first use: importing it activates the device trace
        import torch_mlu.mlu._sanitizer

        return torch_mlu.mlu._sanitizer
    if name in _INDUCTOR_CODEGENS:
        try:
            import torch_mlu._inductor
        except AttributeError as e:  # Inductor's getattr(torch.mlu, name, None) would read it as "no backend"
            raise ImportError(f"torch_mlu's Inductor backend failed to import: {e}") from e

        return getattr(torch_mlu._inductor, name)
    raise AttributeError(f"module 'torch.mlu' has no attribute '{name}'")


from . import (  # noqa: E402,F401
    _gpu_trace, amp, cncl, cnpx, fault_injection, graphs, legacy_types, memory, monitor, random, reductions, storage)
from .graphs import (  # noqa: E402
    MLUGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)
from .random import *  # noqa: F403,E402
from .legacy_types import *  # noqa: F403,E402
from .storage import *  # noqa: F403,E402
from .reductions import ipc_collect  # noqa: E402
from .memory import *  # noqa: F403,E402
from .monitor import *  # noqa: F403,E402
from .streams import (  # noqa: E402
    _set_stream_by_id,  # noqa: F401  (torch.cuda has it too)
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = legacy_types.__all__ + storage.__all__ + monitor.__all__ + [
    "Event",
    "ExternalStream",
    "MLUGraph",
    "MLUPluggableAllocator",
    "MemPool",
    "change_current_allocator",
    "get_allocator_backend",
    "use_mem_pool",
    "OutOfMemoryError",
    "Stream",
    "StreamContext",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "current_stream",
    "default_generators",
    "default_stream",
    "current_device",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "ipc_collect",
    "get_amp_supported_dtype",
    "get_autocast_dtype",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "graph",
    "graph_pool_handle",
    "get_per_process_memory_fraction",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "init",
    "initial_seed",
    "is_available",
    "is_autocast_enabled",
    "is_bf16_supported",
    "is_current_stream_capturing",
    "is_initialized",
    "make_graphed_callables",
    "manual_seed",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "reset_accumulated_host_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_host_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]
