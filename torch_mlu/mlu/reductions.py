"""Sharing mlu tensors, storages and events between processes through torch.multiprocessing.

PyTorch 2.13 has no device hook for interprocess sharing: its reducer for storages shares CPU memory only
and refuses an mlu storage ("_share_fd_: only available on CPU"). ``install()`` replaces that reducer, as
Cambricon's torch_mlu does, with one that shares an mlu storage in place, as CUDA does: every mlu allocation
already lives in a shared-memory file, so ``storage._share_mlu_()`` copies and moves nothing (the storage's
address never changes: views, captured graphs, DLPack aliases and extensions keep working) and hands out the
file's descriptor with the storage's offset and size in it (Note [Sharing mlu storages between processes] in
csrc/core/MLUStorageSharing.h). The descriptor travels like a shared CPU storage's
(``multiprocessing.reduction.DupFd``: SCM_RIGHTS under spawn and forkserver), and the receiver maps those bytes
onto its device with ``UntypedStorage._new_shared_mlu``. PyTorch's tensor reducer is kept (views keep their
offset and strides, Parameters stay Parameters, non-leaf tensors that require grad are refused), and so is its
per-process cache, keyed by file, offset and size, so a storage received twice is one storage.

What the receiver sees: the producer's later in-place updates, once the producer's work is synchronised (the
pages are the same; sharing synchronises the producer's device once). Memory stays until the last process
using it drops it, so the producer may exit first. A shared block counts against the device memory of the
process that made it (``torch.mlu.mem_get_info``) and stays allocated in its caching allocator while any
receiver still maps it, even after the producer's tensor is gone: ``torch.mlu.ipc_collect()`` (also run by
``empty_cache``, by each new share and before an out-of-memory error) frees such blocks once the receivers have
let go. A receiver's mapping counts against no device and is outside its caching allocator's statistics.

Events (``torch.mlu.Event``) pickle as already complete: the producer synchronises the event when sending it,
and the receiver gets a new event that has no pending work, so its ``wait`` and ``synchronize`` return at once,
which is what they would do on the shared event at that point. A later ``record`` in the producer does not
reach the receiver's copy (CUDA shares the event itself; a simulated device has no cross-process queue).
"""
import multiprocessing.reduction
import os

import torch
from torch.multiprocessing import reductions as _reductions

import torch_mlu
from torch_mlu import patches

_torch_reduce_storage = _reductions.reduce_storage


def _share_mlu_(self):
    """Shares this mlu storage's memory in place; returns ``(device, fd, nbytes, offset)``.

    ``fd`` is the file the storage's bytes lie in, at ``offset``; it belongs to the storage's memory: it is
    valid while the storage lives (duplicate it to keep it). The storage's address does not change.
    """
    fd, offset, nbytes, device = torch_mlu._C._mlu_share_storage(self)
    return device, fd, nbytes, offset


def _new_shared_mlu(cls, device, fd, nbytes, offset=0):
    """An mlu storage on ``device`` over the memory another process shared (``fd`` of this process)."""
    return torch_mlu._C._mlu_new_shared_storage(fd, offset, nbytes, device)


def _typed_share_mlu_(self):
    return self._untyped_storage._share_mlu_()


def _typed_new_shared_mlu(cls, device, fd, nbytes, dtype=None, offset=0):
    untyped = torch.UntypedStorage._new_shared_mlu(device, fd, nbytes, offset)
    if cls is torch.TypedStorage:
        return torch.TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)
    return cls(wrap_storage=untyped)


def _cache_key(fd, offset, nbytes):
    # One file holds many storages (a caching-allocator segment): the key names the bytes, not just the file.
    return (*_reductions.fd_id(fd), offset, nbytes)


def rebuild_mlu_storage(cls, device, df, nbytes, offset=0):
    fd = df.detach()
    try:
        key = _cache_key(fd, offset, nbytes)
        storage = _reductions.storage_from_cache(cls, key)
        if storage is not None:
            return storage
        storage = torch.UntypedStorage._new_shared_mlu(device, fd, nbytes, offset)
        _reductions.shared_cache[key] = _reductions.StorageWeakRef(storage)  # not a patch: torch's cache, as torch's
        return storage
    finally:
        os.close(fd)


def rebuild_empty_mlu_storage(cls, device):
    return torch.UntypedStorage(0, device=torch.device("mlu", device))


def reduce_storage(storage):
    if storage.device.type != "mlu":
        return _torch_reduce_storage(storage)
    if storage.nbytes() == 0:
        return (rebuild_empty_mlu_storage, (type(storage), storage.device.index))
    device, fd, nbytes, offset = storage._share_mlu_()
    cache_key = _cache_key(fd, offset, nbytes)
    _reductions.shared_cache[cache_key] = _reductions.StorageWeakRef(storage)  # not a patch: torch's cache, as torch's
    return (rebuild_mlu_storage, (type(storage), device, multiprocessing.reduction.DupFd(fd), nbytes, offset))


def rebuild_event(device):
    with torch.mlu.device(device):
        return torch.mlu.Event()


def reduce_event(event):
    if event.device.type != "mlu":
        raise TypeError(f"cannot pickle '{type(event).__name__}' object on {event.device}")
    event.synchronize()  # it arrives complete: see the module's docstring
    return (rebuild_event, (event.device.index,))


def install():
    """Replaces PyTorch's storage reducer and registers the event reducer; adds the Cambricon-named methods."""
    if _reductions.reduce_storage is reduce_storage:
        return
    methods = "Cambricon's torch_mlu names for sharing an mlu storage"
    patches.set_attr(torch.UntypedStorage, "_share_mlu_", _share_mlu_, methods)
    patches.set_attr(torch.UntypedStorage, "_new_shared_mlu", classmethod(_new_shared_mlu), methods)
    patches.set_attr(torch.TypedStorage, "_share_mlu_", _typed_share_mlu_, methods)
    patches.set_attr(torch.TypedStorage, "_new_shared_mlu", classmethod(_typed_new_shared_mlu), methods)
    patches.set_attr(_reductions, "reduce_storage", reduce_storage,
                     "mlu storages are shared in place (torch's reducer shares CPU memory only)")
    reducers = multiprocessing.reduction.ForkingPickler._extra_reducers
    label = "multiprocessing.reduction.ForkingPickler._extra_reducers"
    with patches.recording_items(reducers, "torch's reducers again: ours for storages, torch.mlu's storage classes",
                                 label=label):
        _reductions.init_reductions()
    patches.set_item(reducers, torch.Event, reduce_event, "mlu events pickle (as already complete)", label=label)


def ipc_collect():
    """Frees the memory of shared storages that other processes no longer use (``torch.cuda.ipc_collect``).

    A producer's storage that died while a receiver still mapped its bytes keeps its block allocated, so the
    caching allocator cannot hand those bytes out again; this frees every such block no receiver maps any more.
    """
    torch.mlu._lazy_init()
    torch_mlu._C._mlu_ipc_collect()
