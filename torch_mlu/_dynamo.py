"""Dynamo's device interface for mlu (cf. CudaInterface in torch/_dynamo/device_interface.py).

Dynamo and Inductor reach a device's runtime only through the interface
registered for it: streams and events (so ``torch.mlu.current_stream()``,
``torch.mlu.stream(s)`` and ``torch.mlu.Event`` are traced), synchronize (which
Inductor's benchmarking relies on), device properties for compile workers.

``torch._dynamo`` is heavy to import, so nothing here runs at ``import
torch``: :func:`register_when_dynamo_loads` registers the interface right
after ``torch._dynamo`` is first imported, which happens before Dynamo
traces anything.

Note [Dynamo does not trace torch_mlu]
At the same time torch_mlu's own Python files join Dynamo's skip list: a call
into ``torch.mlu`` from compiled code (``torch.mlu.stream(s)``,
``current_stream``, ``synchronize``, memory queries) breaks the graph and runs
as written. Traced into, their streams context manager left the stream
switched under Inductor (the restoring ``set_stream`` ended up in a graph of
its own with no outputs), and every C call in them made Dynamo warn.
"""
from typing import Any

import torch

from ._after_import import after_import

_DYNAMO = "torch._dynamo"


def _get_raw_stream(device_index: int) -> int:
    return torch.mlu.current_stream(device_index).mlu_stream


def _make_interface():
    from torch._dynamo.device_interface import DeviceInterface, caching_worker_current_devices
    from torch._dynamo.device_interface import caching_worker_device_properties

    class MluInterface(DeviceInterface):
        device = torch.mlu.device
        Event = torch.mlu.Event
        Stream = torch.mlu.Stream

        class Worker:
            # Compile workers must not touch the device: properties are recorded
            # in the parent before they start (as for cuda).
            @staticmethod
            def set_device(device: int) -> None:
                caching_worker_current_devices["mlu"] = device  # not a patch: the worker API's own table

            @staticmethod
            def current_device() -> int:
                if "mlu" in caching_worker_current_devices:
                    return caching_worker_current_devices["mlu"]
                return torch.mlu.current_device()

            @staticmethod
            def get_device_properties(device: torch.types.Device = None) -> Any:
                if isinstance(device, str):
                    device = torch.device(device)
                if isinstance(device, torch.device):
                    if device.type != "mlu":
                        raise ValueError(f"Expected an mlu device, got {device}")
                    device = device.index
                if device is None:
                    device = MluInterface.Worker.current_device()
                if "mlu" not in caching_worker_device_properties:
                    caching_worker_device_properties["mlu"] = [  # not a patch: the worker API's own table
                        torch.mlu.get_device_properties(i) for i in range(torch.mlu.device_count())
                    ]
                return caching_worker_device_properties["mlu"][device]

        current_device = staticmethod(torch.mlu.current_device)
        set_device = staticmethod(torch.mlu.set_device)
        device_count = staticmethod(torch.mlu.device_count)
        stream = staticmethod(torch.mlu.stream)
        current_stream = staticmethod(torch.mlu.current_stream)
        set_stream = staticmethod(torch.mlu.set_stream)
        _set_stream_by_id = staticmethod(torch.mlu._set_stream_by_id)
        synchronize = staticmethod(torch.mlu.synchronize)
        get_device_properties = staticmethod(torch.mlu.get_device_properties)
        get_raw_stream = staticmethod(_get_raw_stream)
        exchange_device = staticmethod(torch.mlu._exchange_device)
        maybe_exchange_device = staticmethod(torch.mlu._maybe_exchange_device)
        memory_allocated = staticmethod(torch.mlu.memory_allocated)
        is_bf16_supported = staticmethod(torch.mlu.is_bf16_supported)

        @staticmethod
        def is_available() -> bool:
            return torch.mlu.is_available()

        @staticmethod
        def get_compute_capability(device: torch.types.Device = None) -> int:
            major, minor = torch.mlu.get_device_capability(device)
            return major * 10 + minor

    return MluInterface


def register() -> None:
    """Registers the interface for ``mlu`` and each ``mlu:<index>``, and skips torch_mlu's files."""
    from torch._dynamo import trace_rules
    from torch._dynamo.device_interface import register_interface_for_device

    interface = _make_interface()
    register_interface_for_device("mlu", interface)
    for index in range(torch.mlu.device_count()):
        register_interface_for_device(f"mlu:{index}", interface)
    trace_rules.add("torch_mlu")  # not a patch: Dynamo's API (Note [Dynamo does not trace torch_mlu])
    # torch_mlu.ops' functions of tensors go into a graph whole, as calls its tracer follows (their files are
    # skipped like the rest); nms and batched_nms, whose result size depends on the data, break the graph.
    from . import ops

    for fn in (ops.roi_align, ops.roi_pool, ops.box_area, ops.box_iou):
        torch._dynamo.allow_in_graph(fn)


def register_when_dynamo_loads() -> None:
    after_import(_DYNAMO, register, "registers mlu with Dynamo once it is imported")
