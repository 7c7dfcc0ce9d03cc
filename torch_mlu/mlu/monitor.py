"""Device telemetry across processes, read from the registry `mlu-smi` reads.

Every process using the software MLU keeps a small shared-memory record of its
device memory, queues and busy time (Note [Monitor registry] in
``runtime/include/mlu_runtime/monitor.h``). These functions are the
``torch.cuda`` ones that NVML answers there: they see every process of this
user, not only this one.
"""
import torch_mlu._C as _C

from ._utils import _get_device_index

__all__ = [
    "clock_rate",
    "device_memory_used",
    "list_gpu_processes",
    "memory_usage",
    "power_draw",
    "temperature",
    "utilization",
]


class _NotAvailable(RuntimeError):
    """What the software MLU cannot measure (as NVML's "Not Supported" on GPUs without the sensor)."""


def _not_available(what: str, device) -> None:
    index = _get_device_index(device, optional=True)
    _C._mlu_monitor_device(index)  # a bad device index fails as for every other query
    raise _NotAvailable(
        f"torch.mlu.{what}: not available on mlu:{index}: the software MLU runs on the host's CPU "
        "and has no sensor for it (as nvidia-smi reports 'N/A' on GPUs without one)"
    )


def _device_report(device) -> dict:
    return _C._mlu_monitor_device(_get_device_index(device, optional=True))


def utilization(device=None) -> int:
    r"""Return the percent of time over the past second during which work was
    running on the MLU, as ``mlu-smi`` shows it.

    A queue counts as busy from when it starts a task until it runs out of work;
    the busy time of every process using the device is summed (capped at 100).

    Args:
        device (torch.device or int, optional): selected device. Returns
            statistic for the current device, given by :func:`~torch.mlu.current_device`,
            if :attr:`device` is ``None`` (default).
    """
    return int(round(_device_report(device)["utilization"] * 100))


def device_memory_used(device=None) -> int:
    r"""Return used global (device) memory in bytes as given by ``mlu-smi``:
    what every process holds on the device (their caching allocators' reserves).

    Args:
        device (torch.device or int, optional): selected device. Returns
            statistic for the current device, given by :func:`~torch.mlu.current_device`,
            if :attr:`device` is ``None`` (default).
    """
    return int(_device_report(device)["memory_used"])


def list_gpu_processes(device=None) -> str:
    r"""Return a human-readable printout of the running processes and their MLU
    memory use for a given device.

    This can be useful to display periodically during training, or when
    handling out-of-memory exceptions.

    Args:
        device (torch.device or int, optional): selected device. Returns
            printout for the current device, given by :func:`~torch.mlu.current_device`,
            if :attr:`device` is ``None`` (default).
    """
    index = _get_device_index(device, optional=True)
    report = _C._mlu_monitor_device(index)
    lines = [f"MLU:{index}"]
    if not report["processes"]:
        lines.append("no processes are running")
    for process in report["processes"]:
        mem = process["memory_used"] / (1024 * 1024)
        lines.append(f"process {process['pid']:>10d} uses {mem:>12.3f} MB MLU memory")
    return "\n".join(lines)


def memory_usage(device=None) -> int:
    r"""Return the percent of time over the past second during which global
    (device) memory was being read or written, as ``mlu-smi`` would.

    On the software MLU every task reads or writes device memory for as long
    as it runs (its memory is the host's), so this is the busy share that
    :func:`utilization` reports.

    Args:
        device (torch.device or int, optional): selected device. Returns
            statistic for the current device, given by :func:`~torch.mlu.current_device`,
            if :attr:`device` is ``None`` (default).
    """
    return utilization(device)


def temperature(device=None) -> int:
    r"""The device's temperature in degrees C: not available on the software
    MLU, which has no sensor; raises ``RuntimeError`` saying so."""
    _not_available("temperature", device)


def power_draw(device=None) -> int:
    r"""The device's power draw in mW: not available on the software MLU,
    which has no sensor; raises ``RuntimeError`` saying so."""
    _not_available("power_draw", device)


def clock_rate(device=None) -> int:
    r"""The device's core clock in MHz over the past sample period: not
    available on the software MLU (its kernels run on host cores whose clocks
    it does not sample); raises ``RuntimeError`` saying so."""
    _not_available("clock_rate", device)
