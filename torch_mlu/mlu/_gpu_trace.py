"""Device-trace callbacks for mlu: torch.cuda._gpu_trace's interface, fed by libtorch_mlu.

PyTorch delivers the trace events a backend emits (c10::impl::GPUTrace, csrc/core/MLUTrace.h) to
``torch.<backend>._gpu_trace.<Kind>Callbacks.fire_callbacks``, once ``torch._C._activate_gpu_trace()`` ran.
Streams are identified by ``torch.mlu.Stream.mlu_stream``, events by their runtime handle, memory by the
address of the allocated block. The stream sanitizer (``torch.mlu._sanitizer``) is the main observer.
"""
from collections.abc import Callable

from torch._utils import CallbackRegistry

EventCreationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU event creation")
EventDeletionCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU event deletion")
EventRecordCallbacks: "CallbackRegistry[int, int]" = CallbackRegistry("MLU event record")
EventWaitCallbacks: "CallbackRegistry[int, int]" = CallbackRegistry("MLU event wait")
MemoryAllocationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU memory allocation")
MemoryDeallocationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU memory deallocation")
StreamCreationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU stream creation")
DeviceSynchronizationCallbacks: "CallbackRegistry[[]]" = CallbackRegistry("MLU device synchronization")
StreamSynchronizationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU stream synchronization")
EventSynchronizationCallbacks: "CallbackRegistry[int]" = CallbackRegistry("MLU event synchronization")


def register_callback_for_event_creation(cb: Callable[[int], None]) -> None:
    EventCreationCallbacks.add_callback(cb)


def register_callback_for_event_deletion(cb: Callable[[int], None]) -> None:
    EventDeletionCallbacks.add_callback(cb)


def register_callback_for_event_record(cb: Callable[[int, int], None]) -> None:
    EventRecordCallbacks.add_callback(cb)


def register_callback_for_event_wait(cb: Callable[[int, int], None]) -> None:
    EventWaitCallbacks.add_callback(cb)


def register_callback_for_memory_allocation(cb: Callable[[int], None]) -> None:
    MemoryAllocationCallbacks.add_callback(cb)


def register_callback_for_memory_deallocation(cb: Callable[[int], None]) -> None:
    MemoryDeallocationCallbacks.add_callback(cb)


def register_callback_for_stream_creation(cb: Callable[[int], None]) -> None:
    StreamCreationCallbacks.add_callback(cb)


def register_callback_for_device_synchronization(cb: Callable[[], None]) -> None:
    DeviceSynchronizationCallbacks.add_callback(cb)


def register_callback_for_stream_synchronization(cb: Callable[[int], None]) -> None:
    StreamSynchronizationCallbacks.add_callback(cb)


def register_callback_for_event_synchronization(cb: Callable[[int], None]) -> None:
    EventSynchronizationCallbacks.add_callback(cb)
