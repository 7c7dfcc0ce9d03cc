r"""Device memory management for MLU (mirrors torch/cuda/memory.py name for name).

The statistics come from the MLU caching device allocator in ``torch_mlu._C``;
their structure and naming are those of ``torch.cuda.memory_stats``.
"""
import collections
import contextlib
import ctypes
import os
import pickle
import sys
import warnings
from typing import Any

from typing_extensions import deprecated

import torch
import torch_mlu._C as _C

from . import _lazy_init, is_initialized
from ._utils import _get_device_index
from .monitor import list_gpu_processes

__all__ = [
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_per_process_memory_fraction",
    "set_per_process_memory_fraction",
    "empty_cache",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "reset_accumulated_host_memory_stats",
    "reset_peak_host_memory_stats",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_summary",
    "mem_get_info",
    "memory_snapshot",
    "list_gpu_processes",
    "MemPool",
    "use_mem_pool",
    "MLUPluggableAllocator",
    "change_current_allocator",
    "get_allocator_backend",
]


def caching_allocator_alloc(size, device=None, stream=None):
    r"""Perform a memory allocation using the MLU memory allocator.

    Memory is allocated for a given device and a stream, this function is
    intended to be used for interoperability with other frameworks. Allocated
    memory is released through :func:`~torch.mlu.caching_allocator_delete`.

    Args:
        size (int): number of bytes to be allocated.
        device (torch.device or int, optional): selected device. If it is
            ``None`` the default MLU device is used.
        stream (torch.Stream or int, optional): selected stream, a stream
            object of the device or the id of one (``0``: the default stream).
            If it is ``None`` the current stream of the selected device is used.

    Returns:
        the device pointer, as an ``int``.
    """
    device = _get_device_index(device, optional=True)
    if stream is None:
        stream = torch.accelerator.current_stream(device)
    if isinstance(stream, torch.Stream):
        stream = stream.stream_id
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(
            "Invalid type for stream argument, must be "
            "`torch.Stream` (an MLU stream) or `int` representing the id "
            "of an existing stream"
        )
    with torch.mlu.device(device):
        return _C._mlu_cachingAllocator_raw_alloc(size, stream)


def caching_allocator_delete(mem_ptr):
    r"""Delete memory allocated using the MLU memory allocator.

    Memory allocated with :func:`~torch.mlu.caching_allocator_alloc` is freed
    here. The associated device and stream are tracked inside the allocator.

    Args:
        mem_ptr (int): memory address to be freed by the allocator.
    """
    _C._mlu_cachingAllocator_raw_delete(mem_ptr)


def set_per_process_memory_fraction(fraction, device=None) -> None:
    r"""Set memory fraction for a process.

    The fraction is used to limit the caching allocator to allocated memory on
    an MLU device. The allowed value equals the total visible memory multiplied
    by fraction. Trying to allocate more than the allowed value in a process
    raises an out of memory error in the allocator.

    Args:
        fraction (float): Range: 0~1. Allowed memory equals total_memory * fraction.
        device (torch.device or int, optional): selected device. If it is
            ``None`` the default MLU device is used.
    """
    _lazy_init()
    device = _get_device_index(device, optional=True)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")

    _C._mlu_setMemoryFraction(fraction, device)


def get_per_process_memory_fraction(device=None) -> float:
    r"""Get memory fraction for a process.

    Args:
        device (torch.device or int, optional): selected device. If it is
            ``None`` the default MLU device is used.

    Returns:
        memory fraction, in range 0~1. Allowed memory equals total_memory * fraction.
    """
    _lazy_init()
    device = _get_device_index(device, optional=True)
    return _C._mlu_getMemoryFraction(device)


def empty_cache() -> None:
    r"""Release all unoccupied cached memory currently held by the caching
    allocator (on all devices) so that it can be used by other applications.

    .. note::
        :func:`~torch.mlu.empty_cache` doesn't increase the amount of MLU
        memory available for PyTorch. However, it may help reduce
        fragmentation of MLU memory in certain cases.
    """
    if is_initialized():
        _C._mlu_emptyCache()


def memory_stats(device=None) -> dict[str, Any]:
    r"""Return a dictionary of MLU memory allocator statistics for a given device.

    The return value is a flat dictionary of statistics, each of which is a
    non-negative integer, named as :func:`torch.cuda.memory_stats` names them:

    - ``"{allocation,segment,active,inactive_split}.{all,large_pool,small_pool}.{current,peak,allocated,freed}"``:
      numbers of allocation requests, reserved segments, active blocks and
      inactive non-releasable blocks.
    - ``"{allocated,reserved,active,inactive_split,requested}_bytes.{all,large_pool,small_pool}.{current,peak,allocated,freed}"``:
      the corresponding amounts of memory.
    - ``"num_alloc_retries"``, ``"num_ooms"``, ``"num_sync_all_streams"``,
      ``"num_device_alloc"``, ``"num_device_free"``: event counters.
    - ``"max_split_size"``, ``"oversize_allocations.{current,peak,allocated,freed}"``,
      ``"oversize_segments.{current,peak,allocated,freed}"``.

    ``large_pool`` holds blocks of more than 1 MiB, ``small_pool`` the others.

    Args:
        device (torch.device or int, optional): selected device. Returns
            statistics for the current device, given by
            :func:`~torch.mlu.current_device`, if :attr:`device` is ``None``
            (default).
    """
    result = []

    def _format_key(key):
        if isinstance(key, str):
            return key
        if isinstance(key, tuple):
            return "_".join(str(part) for part in key)
        return str(key)

    def _recurse_add_to_result(prefix, obj):
        if isinstance(obj, dict):
            if len(prefix) > 0:
                prefix += "."
            for k, v in obj.items():
                key = _format_key(k)
                _recurse_add_to_result(prefix + key, v)
        else:
            result.append((prefix, obj))

    stats = memory_stats_as_nested_dict(device=device)
    _recurse_add_to_result("", stats)
    result.sort()

    return collections.OrderedDict(result)


def memory_stats_as_nested_dict(device=None) -> dict[str, Any]:
    r"""Return the result of :func:`~torch.mlu.memory_stats` as a nested dictionary."""
    if not is_initialized():
        return {}
    device = _get_device_index(device, optional=True)
    return _C._mlu_memoryStats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    r"""Reset the "accumulated" (historical) stats tracked by the MLU memory allocator.

    See :func:`~torch.mlu.memory_stats` for details. Accumulated stats
    correspond to the `"allocated"` and `"freed"` keys in each individual stat
    dict, as well as `"num_alloc_retries"` and `"num_ooms"`.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).
    """
    device = _get_device_index(device, optional=True)
    return _C._mlu_resetAccumulatedMemoryStats(device)


def reset_peak_memory_stats(device=None) -> None:
    r"""Reset the "peak" stats tracked by the MLU memory allocator.

    See :func:`~torch.mlu.memory_stats` for details. Peak stats correspond to
    the `"peak"` key in each individual stat dict.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).
    """
    device = _get_device_index(device, optional=True)
    return _C._mlu_resetPeakMemoryStats(device)


def host_memory_stats() -> dict[str, Any]:
    r"""Return a dictionary of pinned (host) allocator statistics.

    The keys are those of :func:`torch.cuda.host_memory_stats`:
    ``"{allocations,allocated_bytes,active_requests,active_bytes}.{current,peak,allocated,freed}"``,
    ``"num_host_alloc"``, ``"num_host_free"`` and
    ``"{host_alloc_time,host_free_time}.{total,max,min,count,avg}"``.
    """
    result = []

    def _recurse_add_to_result(prefix, obj):
        if isinstance(obj, dict):
            if len(prefix) > 0:
                prefix += "."
            for k, v in obj.items():
                _recurse_add_to_result(prefix + k, v)
        else:
            result.append((prefix, obj))

    stats = host_memory_stats_as_nested_dict()
    _recurse_add_to_result("", stats)
    result.sort()

    return collections.OrderedDict(result)


def host_memory_stats_as_nested_dict() -> dict[str, Any]:
    r"""Return the result of :func:`~torch.mlu.host_memory_stats` as a nested dictionary.

    Unlike the device statistics these need no initialised device: pinning
    memory is host work, so the stats are valid (zeros) from the start.
    """
    return _C._mlu_hostMemoryStats()


def reset_accumulated_host_memory_stats() -> None:
    r"""Reset the "accumulated" (historical) stats tracked by the host memory allocator.

    See :func:`~torch.mlu.host_memory_stats` for details. Accumulated stats
    correspond to the `"allocated"` and `"freed"` keys in each individual stat dict.
    """
    return _C._mlu_resetAccumulatedHostMemoryStats()


def reset_peak_host_memory_stats() -> None:
    r"""Reset the "peak" stats tracked by the host memory allocator.

    See :func:`~torch.mlu.host_memory_stats` for details. Peak stats correspond
    to the `"peak"` key in each individual stat dict.
    """
    return _C._mlu_resetPeakHostMemoryStats()


def reset_max_memory_allocated(device=None) -> None:
    r"""Reset the starting point in tracking maximum MLU memory occupied by tensors for a given device.

    See :func:`~torch.mlu.max_memory_allocated` for details.

    .. warning::
        This function now calls :func:`~torch.mlu.reset_peak_memory_stats`,
        which resets /all/ peak memory stats.
    """
    warnings.warn(
        "torch.mlu.reset_max_memory_allocated now calls torch.mlu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    return reset_peak_memory_stats(device=device)


def reset_max_memory_cached(device=None) -> None:
    r"""Reset the starting point in tracking maximum MLU memory managed by the caching allocator for a given device.

    See :func:`~torch.mlu.max_memory_cached` for details.

    .. warning::
        This function now calls :func:`~torch.mlu.reset_peak_memory_stats`,
        which resets /all/ peak memory stats.
    """
    warnings.warn(
        "torch.mlu.reset_max_memory_cached now calls torch.mlu.reset_peak_memory_stats, "
        "which resets /all/ peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    return reset_peak_memory_stats(device=device)


def memory_allocated(device=None) -> int:
    r"""Return the current MLU memory occupied by tensors in bytes for a given device.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).

    .. note::
        This is likely less than :func:`~torch.mlu.memory_reserved`, since
        the caching allocator keeps freed blocks for reuse.
    """
    return memory_stats(device=device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    r"""Return the maximum MLU memory occupied by tensors in bytes for a given device.

    By default, this returns the peak allocated memory since the beginning of
    this program. :func:`~torch.mlu.reset_peak_memory_stats` can be used to
    reset the starting point in tracking this metric.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).
    """
    return memory_stats(device=device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    r"""Return the current MLU memory managed by the caching allocator in bytes for a given device.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).
    """
    return memory_stats(device=device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    r"""Return the maximum MLU memory managed by the caching allocator in bytes for a given device.

    By default, this returns the peak cached memory since the beginning of
    this program. :func:`~torch.mlu.reset_peak_memory_stats` can be used to
    reset the starting point in tracking this metric.

    Args:
        device (torch.device or int, optional): selected device. The current
            device, given by :func:`~torch.mlu.current_device`, if
            :attr:`device` is ``None`` (default).
    """
    return memory_stats(device=device).get("reserved_bytes.all.peak", 0)


@deprecated(
    "`torch.mlu.memory_cached` has been renamed to `torch.mlu.memory_reserved`",
    category=FutureWarning,
)
def memory_cached(device=None) -> int:
    r"""Deprecated; see :func:`~torch.mlu.memory_reserved`."""
    return memory_reserved(device=device)


@deprecated(
    "`torch.mlu.max_memory_cached` has been renamed to `torch.mlu.max_memory_reserved`",
    category=FutureWarning,
)
def max_memory_cached(device=None) -> int:
    r"""Deprecated; see :func:`~torch.mlu.max_memory_reserved`."""
    return max_memory_reserved(device=device)


def memory_summary(device=None, abbreviated: bool = False) -> str:
    r"""Return a human-readable printout of the current memory allocator statistics for a given device.

    This can be useful to display periodically during training, or when
    handling out-of-memory exceptions.

    Args:
        device (torch.device or int, optional): selected device. Returns
            printout for the current device, given by
            :func:`~torch.mlu.current_device`, if :attr:`device` is ``None``
            (default).
        abbreviated (bool, optional): whether to return an abbreviated summary
            (default: False).
    """
    device = _get_device_index(device, optional=True)
    stats = memory_stats(device=device)

    def _format_size(sz, pref_sz):
        prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_sz < 768 * 1024:
                break
            prefix = new_prefix
            sz //= 1024
            pref_sz /= 1024
        return f"{sz:6d} {prefix}"

    def _format_count(cnt, pref_cnt):
        prefixes = [" ", "K", "M"]
        prefix = prefixes[0]
        for new_prefix in prefixes[1:]:
            if pref_cnt < 750 * 1000:
                break
            prefix = new_prefix
            cnt //= 1000
            pref_cnt /= 1000
        return f"{cnt:7d} {prefix} "

    metrics_to_display = [
        ("allocated_bytes", "Allocated memory", _format_size),
        ("active_bytes", "Active memory", _format_size),
        ("requested_bytes", "Requested memory", _format_size),
        ("reserved_bytes", "MLU reserved memory", _format_size),
        ("inactive_split_bytes", "Non-releasable memory", _format_size),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "MLU reserved segments", _format_count),
        ("inactive_split", "Non-releasable allocs", _format_count),
    ]

    lines = []
    lines.append("=" * 75)
    # one space more than CUDA's texts each, as "MLU" is one letter shorter than "CUDA"
    lines.append(" {_:16} PyTorch MLU memory summary, device ID {device:<18d} ")
    lines.append("-" * 75)
    lines.append(
        "  {_:10} MLU OOMs: {num_ooms:<12d} | {_:6} cnrtMalloc retries: {num_alloc_retries:<8d}  "
    )
    lines.append("=" * 75)
    lines.append("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ")

    for metric_key, metric_name, formatter in metrics_to_display:
        lines.append("-" * 75)
        submetrics = [("all", metric_name)]
        if not abbreviated:
            submetrics.append(("large_pool", "      from large pool"))
            submetrics.append(("small_pool", "      from small pool"))

        current_prefval, peak_prefval, allocated_prefval, freed_prefval = None, None, None, None

        for submetric_key, submetric_name in submetrics:
            prefix = metric_key + "." + submetric_key + "."

            current = stats[prefix + "current"]
            peak = stats[prefix + "peak"]
            allocated = stats[prefix + "allocated"]
            freed = stats[prefix + "freed"]

            if current_prefval is None:
                current_prefval = current
                peak_prefval = peak
                allocated_prefval = allocated
                freed_prefval = freed

            lines.append(
                f" {submetric_name:<21} | {formatter(current, current_prefval)} | {formatter(peak, peak_prefval)} | "
                f"{formatter(allocated, allocated_prefval)} | {formatter(freed, freed_prefval)} ",
            )

    metrics_to_display = [
        ("oversize_allocations", "Oversize allocations", _format_count),
        ("oversize_segments", "Oversize MLU segments", _format_count),
    ]

    for metric_key, metric_name, formatter in metrics_to_display:
        lines.append("-" * 75)

        prefix = metric_key + "."

        current = stats[prefix + "current"]
        peak = stats[prefix + "peak"]
        allocated = stats[prefix + "allocated"]
        freed = stats[prefix + "freed"]

        lines.append(
            f" {metric_name:<21} | {formatter(current, current)} | {formatter(peak, peak)} | "
            f"{formatter(allocated, allocated)} | {formatter(freed, freed)} ",
        )

    lines.append("=" * 75)

    fmt_dict = {"_": "", "device": device}
    for k, v in stats.items():
        fmt_dict[k.replace(".", "-")] = v
    return "|" + "|\n|".join(lines).format(**fmt_dict) + "|\n"


def mem_get_info(device=None) -> tuple[int, int]:
    r"""Return the free and total memory of a given MLU device, in bytes.

    ``free`` is the device capacity less the memory this process holds on the
    device (reserved by the caching allocator); ``total`` is
    ``torch.mlu.get_device_properties(device).total_memory``.

    Args:
        device (torch.device or int or str, optional): selected device. Returns
            statistic for the current device, given by
            :func:`~torch.mlu.current_device`, if :attr:`device` is ``None``
            (default) or if the device index is not specified.
    """
    _lazy_init()
    # optional=True allows `device = torch.device('mlu')` for which device.index is None
    device = _get_device_index(device, optional=True)
    free, total = _C._mlu_memGetInfo(device)
    return int(free), int(total)


def memory_snapshot(mempool_id=None, include_traces=True) -> list[dict[str, Any]]:
    """The allocator's segments on every device (torch.cuda.memory_snapshot's format).

    ``mempool_id``: only the segments of that private pool (``MemPool.id``, ``MLUGraph.pool()``,
    ``graph_pool_handle()``); every segment says its pool in ``segment_pool_id``.
    ``include_traces`` is accepted for torch.cuda compatibility; segments carry no traces.
    """
    segments = _snapshot()["segments"]
    if mempool_id is None:
        return segments
    return [s for s in segments if tuple(s["segment_pool_id"]) == tuple(mempool_id)]


def _record_memory_history(
    enabled: str | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device=None,
    clear_history: bool = False,
) -> None:
    r"""Record stack traces of allocations (and, with ``enabled="all"``, every
    alloc/free event) so that :func:`_snapshot` can say what allocated each block.

    Mirrors ``torch.cuda.memory._record_memory_history``: ``enabled`` is
    ``None`` (off), ``"state"`` (contexts of live allocations) or ``"all"``
    (also the event trace, at most ``max_entries`` entries per device);
    ``context`` chooses which records carry a stack (``None``, ``"state"``,
    ``"alloc"``, ``"all"``); ``stacks`` is ``"python"`` or ``"all"`` (with C++
    frames). Recording covers every mlu device; ``device`` is accepted for
    compatibility.
    """
    _lazy_init()
    _C._mlu_record_memory_history(
        enabled=enabled,
        context=context if enabled else None,
        stacks=stacks,
        max_entries=min(max_entries, 2**63 - 1),
        clear_history=clear_history,
    )


def _snapshot(device=None, augment_with_fx_traces=False) -> dict[str, Any]:
    r"""Snapshot of the mlu allocator in ``torch.cuda.memory._snapshot()``'s format.

    ``{"segments": [...], "device_traces": [[...] per device], "allocator_settings": {...}}``;
    ``torch.cuda._memory_viz`` (``trace_plot``, ``segment_plot``, ``segsum``)
    reads it as it reads a CUDA snapshot.
    """
    _lazy_init()
    return _C._mlu_memorySnapshot()


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False) -> None:
    r"""Pickles :func:`_snapshot` into ``filename`` for https://pytorch.org/memory_viz."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


_oom_snapshot_path: str | None = None
_oom_snapshot_observer_attached = [False]


def _dump_snapshot_on_oom(path: str | None = "mlu_oom_snapshot_{pid}.pickle") -> None:
    r"""Write a memory snapshot (:func:`_snapshot`) to ``path`` whenever the mlu
    allocator runs out of memory, before ``torch.OutOfMemoryError`` is raised;
    the error's message names the file. ``{pid}`` and ``{device}`` in ``path``
    are replaced. ``None`` turns it off. The environment variable
    ``TORCH_MLU_OOM_SNAPSHOT=<path>`` does the same from the start.

    The snapshot holds the segments and blocks at the failure; enable
    :func:`_record_memory_history` too to see the stack that allocated each
    block and the events that led there.
    """
    global _oom_snapshot_path
    _oom_snapshot_path = None if path is None else os.fspath(path)
    if _oom_snapshot_path is not None and not _oom_snapshot_observer_attached[0]:
        _C._mlu_attach_out_of_memory_observer(_write_oom_snapshot)
        _oom_snapshot_observer_attached[0] = True
    shown = "" if _oom_snapshot_path is None else _oom_snapshot_path.replace("{pid}", str(os.getpid()))
    _C._mlu_setOutOfMemorySnapshotPath(shown)


def _write_oom_snapshot(device, requested, total, free) -> None:
    if _oom_snapshot_path is None:
        return
    path = _oom_snapshot_path.replace("{pid}", str(os.getpid())).replace("{device}", str(device))
    try:
        _dump_snapshot(path)
    except OSError as e:
        warnings.warn(f"torch.mlu: could not write the out-of-memory snapshot to {path}: {e}")


def _attach_out_of_memory_observer(observer) -> None:
    r"""Call ``observer(device, requested, total, free)`` on every mlu
    out-of-memory error, before it is raised (as
    ``torch._C._cuda_attach_out_of_memory_observer``): the bytes requested, the
    bytes this process may use, and the bytes free on the device."""
    _lazy_init()
    _C._mlu_attach_out_of_memory_observer(observer)


@deprecated(
    "torch.mlu._set_allocator_settings is deprecated. Use torch._C._accelerator_setAllocatorSettings instead.",
    category=FutureWarning,
)
def _set_allocator_settings(env: str):
    r"""Change the caching allocator's settings (``PYTORCH_MLU_ALLOC_CONF`` syntax)
    for the allocations that follow, e.g. ``"expandable_segments:True"``."""
    return _C._mlu_setAllocatorSettings(env)


def get_allocator_backend() -> str:
    r"""Return the active allocator backend: always ``native`` (the mlu caching
    allocator; ``PYTORCH_MLU_ALLOC_CONF`` may not choose another)."""
    return _C._mlu_getAllocatorBackend()


class _MLUAllocator:
    r"""Wrapper over internal mlu memory allocators."""

    def __init__(self, allocator):
        self._allocator = allocator

    def allocator(self):
        return self._allocator


class MLUPluggableAllocator(_MLUAllocator):
    r"""mlu memory allocator loaded from a so file (as ``torch.cuda.memory.CUDAPluggableAllocator``)."""

    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        r"""Memory allocators are compiled in .so files and loaded dynamically using ctypes.

        To change the active allocator use :func:`torch.mlu.memory.change_current_allocator`.

        Args:
            path_to_so_file(str): Path in the filesystem to the `.so` file containing
                the allocator functions
            alloc_fn_name(str): Name of the function to perform the memory allocation
                in the so file. The signature must be:
                void* alloc_fn_name(ssize_t size, int device, cnrtQueue_t queue);
            free_fn_name(str): Name of the function to perform the memory release
                in the so file. The signature must be:
                void free_fn_name(void* ptr, ssize_t size, int device, cnrtQueue_t queue);

        The functions get device memory from the runtime's C interface
        (``#include <mlu_runtime/cnrt.h>``: ``cnrtMalloc``, ``cnrtFree``; link with
        ``-ltorch_mlu``, see ``torch_mlu.utils.cpp_extension.library_paths()``).
        """
        allocator = ctypes.CDLL(path_to_so_file)
        alloc_fn = ctypes.cast(getattr(allocator, alloc_fn_name), ctypes.c_void_p).value
        free_fn = ctypes.cast(getattr(allocator, free_fn_name), ctypes.c_void_p).value
        if alloc_fn is None:
            raise AssertionError(f"alloc_fn '{alloc_fn_name}' is None")
        if free_fn is None:
            raise AssertionError(f"free_fn '{free_fn_name}' is None")
        self._library = allocator  # keeps the library loaded while the allocator may be used
        self._allocator = _C._mlu_customAllocator(alloc_fn, free_fn)


def change_current_allocator(allocator: _MLUAllocator) -> None:
    r"""Change the currently used memory allocator to be the one provided.

    If the current allocator has already been used (an mlu tensor was created),
    this function raises.

    Args:
        allocator (torch.mlu.memory._MLUAllocator): allocator to be set as the active one.
    """
    _C._mlu_changeCurrentAllocator(allocator.allocator())
    _current_library[0] = getattr(allocator, "_library", None)


_current_library = [None]


def _get_current_allocator() -> _MLUAllocator:
    r"""Return the allocator being currently used."""
    return _MLUAllocator(_C._mlu_getAllocator())


class MemPool(_C._MLUMemPool):
    r"""MemPool represents a pool of memory in the mlu caching allocator
    (as ``torch.cuda.MemPool``): its ID names the pool.

    Args:
        allocator(torch_mlu._C._mlu_MLUPluggableAllocator, optional): where the
            pool's segments come from (``MLUPluggableAllocator(...).allocator()``).
            If ``None`` (default), they come from the device, as for any
            allocation of the caching allocator.
        use_on_oom(bool): whether this pool's free memory may serve an
            allocation outside of the pool that would otherwise run out of
            memory. ``False`` by default.
        no_split(bool): whether the pool's blocks are never split. ``False`` by default.

    The pool lives on the device current when it is created. Dropping the
    MemPool gives its free memory back; blocks still used by tensors return
    to the device when those are freed.
    """

    def __init__(self, allocator=None, use_on_oom: bool = False, no_split: bool = False):
        _lazy_init()
        super().__init__(allocator, True, use_on_oom, no_split)

    @property
    def id(self) -> tuple[int, int]:
        r"""Returns the ID of this pool as a tuple of two ints."""
        return super().id

    @property
    def allocator(self):
        r"""Returns the allocator this MemPool routes allocations to (``None``: the device)."""
        return super().allocator

    def use_count(self) -> int:  # pylint: disable=useless-parent-delegation
        r"""Returns the reference count of this pool."""
        return super().use_count()

    def snapshot(self, include_traces=True):
        r"""Return a snapshot of this pool's segments across all devices
        (:func:`memory_snapshot` limited to the pool)."""
        return memory_snapshot(self.id, include_traces=include_traces)


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device=None):
    r"""A context manager that routes allocations to a given pool.

    Args:
        pool(torch.mlu.MemPool): a MemPool object to be made active so that
            allocations route to this pool.
        device (torch.device or int, optional): selected device. Uses MemPool on
            the current device, given by :func:`~torch.mlu.current_device`,
            if :attr:`device` is ``None`` (default).

    .. note::
        This context manager makes only current thread's allocations route to
        the given pool. If a new thread is spawned inside the context manager
        (e.g. by calling backward) the allocations in that thread will not
        route to the given pool.
    """
    device_index = torch.mlu.current_device() if device is None else _get_device_index(device)
    _C._mlu_beginAllocateCurrentThreadToPool(device_index, pool.id)
    try:
        yield
    finally:
        _C._mlu_endAllocateToPool(device_index, pool.id)
        _C._mlu_releasePool(device_index, pool.id)


if os.environ.get("TORCH_MLU_OOM_SNAPSHOT"):
    _dump_snapshot_on_oom(os.environ["TORCH_MLU_OOM_SNAPSHOT"])
