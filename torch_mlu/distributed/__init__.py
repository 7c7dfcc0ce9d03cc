"""The ``cncl`` distributed backend of mlu.

``import torch_mlu`` registers it with ``torch.distributed`` for the device
``mlu``: ``init_process_group()`` with no backend picks ``cpu:gloo,mlu:cncl``,
``init_process_group("cncl")`` and ``get_default_backend_for_device("mlu")``
work as they do with NCCL on CUDA. The transfers are Gloo's; the backend adds
the device side (communication streams, Work and futures on mlu, reduce ops
Gloo lacks, agreement checks): Note [cncl over Gloo] in
``csrc/distributed/ProcessGroupCNCL.h``.
"""

import datetime
import os

import torch.distributed as dist

from .. import _C, patches
from . import _dtensor

ProcessGroupCNCL = _C.ProcessGroupCNCL

__all__ = ["ProcessGroupCNCL", "dump_cncl_trace", "is_cncl_available", "write_cncl_trace"]


def is_cncl_available():
    """True: the cncl backend is always built (it needs no vendor library)."""
    return True


def dump_cncl_trace(include_collectives=True, include_stack_traces=True, only_active=False):
    """The cncl flight recorder of this process, pickled as NCCL's ``_dump_nccl_trace`` returns it: the last
    collectives of every cncl group (TORCH_CNCL_TRACE_BUFFER_SIZE of them), which
    ``python -m torch.distributed.flight_recorder.fr_trace`` reads (Note [cncl flight recorder] in
    csrc/distributed/FlightRecorderCNCL.h)."""
    return _C._cncl_dump_trace(include_collectives, include_stack_traces, only_active)


def write_cncl_trace(include_stack_traces=True):
    """Writes this rank's flight recorder dump where a timeout writes it (the prefix in
    TORCH_CNCL_DEBUG_INFO_TEMP_FILE, TORCH_FR_DUMP_TEMP_FILE or TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else
    ``~/.cache/torch/comm_lib_trace_rank_``, then the global rank); returns the file's path."""
    return _C._cncl_write_trace(dist.get_rank(), include_stack_traces)




def _attempt_store(store):
    """The group's store, under a prefix of the torchrun attempt.

    Note [cncl keys per restart]: torchrun --max-restarts keeps its store across the attempts it restarts, so a
    key a process of the failed attempt wrote is still there for the next one: Gloo's rendezvous then dials the dead
    processes' addresses (and hangs until the timeout), and the watchdog would answer an old dump request. Keys
    under TORCHELASTIC_RESTART_COUNT are each attempt's own.
    """
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    return store if attempt is None else dist.PrefixStore(f"cncl_attempt_{attempt}/", store)



def _gloo_devices():
    """The network interfaces cncl's transfers use: CNCL_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME),
    a comma-separated list, else Gloo's default (the interface of the host name's address)."""
    for name in ("CNCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        if os.environ.get(name):
            return [dist.ProcessGroupGloo.create_device(interface=i) for i in os.environ[name].split(",") if i]
    return [dist.ProcessGroupGloo.create_default_device()]


def _create_cncl(options, backend_options):
    """Backend creator for ``Backend.register_backend(..., extended_api=True)``.

    The Gloo groups get store prefixes of their own, so their keys never meet
    those of the group's CPU backend. The second one carries the agreement
    checks (Note [Agreement ahead of the transfer]); both share the Gloo devices
    (_gloo_devices), so one socket thread serves them.
    """
    devices = _gloo_devices()
    store = _attempt_store(options.store)
    config = _C._cncl_config()

    def gloo(prefix):
        gloo_options = dist.ProcessGroupGloo._Options()
        # The watchdog, not Gloo, catches a collective past the group's timeout (Note [cncl watchdog]): Gloo's
        # own timeout comes later, and only ends a transfer the watchdog has given up on.
        gloo_options._timeout = options.timeout + datetime.timedelta(seconds=config["transfer_timeout_margin_s"])
        gloo_options._devices = devices
        return dist.ProcessGroupGloo(
            dist.PrefixStore(prefix, store), options.group_rank, options.group_size, gloo_options
        )

    agreement = gloo("cncl_agreement/") if config["check_collectives"] else None
    return ProcessGroupCNCL(gloo("cncl/"), agreement, options.group_rank, options.group_size, options.timeout,
                            store, list(options.global_ranks_in_group or []))


def _register():
    """Registers ``cncl`` for ``mlu``; safe to call more than once."""
    if not dist.is_available():
        return
    if "cncl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("cncl", _create_cncl, extended_api=True, devices=["mlu"])
    patches.set_attr(dist, "ProcessGroupCNCL", ProcessGroupCNCL, "as dist.ProcessGroupNCCL is CUDA's")
    patches.set_attr(dist, "is_cncl_available", is_cncl_available, "as dist.is_nccl_available")
    _dtensor.register_when_dtensor_loads()
