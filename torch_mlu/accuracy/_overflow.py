"""The overflow check: a sticky per-device flag that every op producing a NaN or an Inf sets, read on the device
without a sync (torch_mlu.accuracy.overflow_check; docs/accuracy.md).

Invariants (Note [Overflow flag] in csrc/aten/OverflowCheck.h): while the check is on, each floating-point mlu
result of an aten op is scanned by a kernel queued after the op on its stream, which sets its device's flag if
the result holds a NaN or an Inf; only clear_overflow_flag resets it. overflow_flag() returns the flag as a 0-d
bool tensor on the device, filled in stream order: reading it costs no host sync until the program asks for its
value. The program's results are untouched, and the check is process-wide (every thread, every device).
"""
import contextlib

import torch

import torch_mlu


def _index(device):
    if device is None:
        return torch.mlu.current_device()
    device = torch.device("mlu", device) if isinstance(device, int) else torch.device(device)
    if device.type != "mlu":
        raise ValueError(f"the overflow flag belongs to an mlu device, not to {device}")
    return torch.mlu.current_device() if device.index is None else device.index


@contextlib.contextmanager
def overflow_check(enabled=True):
    """Within the block every op that produces a NaN or an Inf on mlu sets its device's overflow flag (or, with
    ``enabled=False``, none does); the previous state returns on exit."""
    was = torch_mlu._C._mlu_setOverflowCheck(bool(enabled))
    try:
        yield
    finally:
        torch_mlu._C._mlu_setOverflowCheck(was)


def is_overflow_check_enabled():
    return torch_mlu._C._mlu_overflowCheckEnabled()


def overflow_flag(device=None):
    """The overflow flag of ``device`` (default: the current one) as a 0-d bool tensor on it, read in the order of
    its current stream: True when an op checked since the last ``clear_overflow_flag`` made a NaN or an Inf."""
    return torch_mlu._C._mlu_overflowFlag(_index(device))


def clear_overflow_flag(device=None):
    """Resets the overflow flag of ``device`` (default: the current one), in the order of its current stream."""
    torch_mlu._C._mlu_clearOverflowFlag(_index(device))
