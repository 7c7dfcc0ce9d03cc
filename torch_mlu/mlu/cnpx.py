"""torch.mlu.cnpx: annotation ranges and marks, Cambricon's name for torch.cuda.nvtx.

Ranges pushed on a thread tag the mlu work that thread launches inside them: a torch.profiler trace
shows each range as a user annotation on the device rows of the streams it used, spanning its kernels,
and, while a profiler records, as a user annotation on the host thread's row. Marks are zero-length
annotations placed on the current stream where the device reaches them. Calls are cheap when nothing
profiles; push and pop return nesting depths like torch.cuda.nvtx's.
"""

import itertools
import threading
from contextlib import contextmanager

import torch
import torch_mlu._C as _C

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_local = threading.local()
_started = {}  # range_start handle -> its host-side record_function, if a profiler recorded
_started_lock = threading.Lock()
_handles = itertools.count(1)


def _profiling():
    return torch._C._autograd._profiler_enabled()


def _host_range(msg):
    scope = torch.autograd.profiler.record_function(msg)
    scope.__enter__()
    return scope


def range_push(msg):
    """Pushes a range named `msg` on this thread's stack; returns the depth it starts at (0 for the outermost)."""
    if not isinstance(msg, str):
        raise TypeError(f"torch.mlu.cnpx.range_push: msg must be a str, got {type(msg).__name__}")
    stack = getattr(_local, "host", None)
    if stack is None:
        stack = _local.host = []
    stack.append(_host_range(msg) if _profiling() else None)
    return _C._cnpx_range_push(msg)


def range_pop():
    """Pops this thread's innermost range; returns the depth after the pop, or -1 when no range was open."""
    stack = getattr(_local, "host", None)
    if stack:
        scope = stack.pop()
        if scope is not None:
            scope.__exit__(None, None, None)
    return _C._cnpx_range_pop()


def range_start(msg) -> int:
    """Starts a range that may end on another thread; returns the handle to pass to range_end.

    Such a range is a host-side annotation only: device work is tagged by the push/pop ranges of the
    thread that launches it.
    """
    if not isinstance(msg, str):
        raise TypeError(f"torch.mlu.cnpx.range_start: msg must be a str, got {type(msg).__name__}")
    handle = next(_handles)
    if _profiling():
        with _started_lock:
            _started[handle] = _host_range(msg)
    return handle


def range_end(range_id) -> None:
    """Ends the range `range_id` that range_start returned."""
    with _started_lock:
        scope = _started.pop(range_id, None)
    if scope is not None:
        scope.__exit__(None, None, None)


def mark(msg):
    """Places an instant annotation named `msg` on the current mlu stream."""
    if not isinstance(msg, str):
        raise TypeError(f"torch.mlu.cnpx.mark: msg must be a str, got {type(msg).__name__}")
    _C._cnpx_mark(msg)


@contextmanager
def range(msg, *args, **kwargs):
    """Context manager / decorator: range_push(msg.format(*args, **kwargs)) on entry, range_pop on exit."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
