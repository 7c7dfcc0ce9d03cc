"""torch.mlu.Stream and torch.mlu.Event, mirroring torch/cuda/streams.py.

Both are the device-generic torch.Stream / torch.Event of device type mlu
(Stream with torch.cuda's extra methods on top). Streams come from per-device pools (see
csrc/core/MLUStream.h for the stream-id layout); a stream and its events
order work exactly like their CUDA twins.
"""
import torch

import torch_mlu._C as _C

from ._utils import _get_device_index

_MLU_DEVICE_TYPE = int(torch._C._autograd.DeviceType.PrivateUse1)


class Stream(torch.Stream):
    r"""Wrapper around an mlu stream (a runtime queue).

    Args:
        device (torch.device or int, optional): device to allocate the stream
            on. The current device when ``None``.
        priority (int, optional): ``0`` (default) is low priority, a negative
            value high priority (see :func:`torch.mlu.Stream.priority_range`).
    """

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs and "device_index" in kwargs:
            return super().__new__(
                cls,
                stream_id=kwargs["stream_id"],
                device_index=kwargs["device_index"],
                device_type=kwargs.get("device_type", _MLU_DEVICE_TYPE),
            )
        torch.mlu._lazy_init()
        index = _get_device_index(device, optional=True)
        return super().__new__(cls, device=torch.device("mlu", index), priority=priority)

    def wait_event(self, event) -> None:
        r"""Makes all future work submitted to the stream wait for an event."""
        event.wait(self)

    def wait_stream(self, stream) -> None:
        r"""Synchronizes with another stream: future work here waits for the work queued there so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        r"""Records an event (a new one if ``event`` is ``None``) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    @property
    def mlu_stream(self) -> int:
        r"""The runtime queue handle (``mlu::mluQueue_t``) as an int, for C++ extensions."""
        return _C._mlu_streamQueue(self.stream_id, self.device_index)

    @property
    def priority(self) -> int:
        return _C._mlu_streamPriority(self.stream_id, self.device_index)

    @staticmethod
    def priority_range() -> tuple:
        r"""``(least, greatest)`` priorities; lower numbers are higher priority, as in CUDA."""
        return _C._mlu_streamPriorityRange()

    def __eq__(self, other):
        if isinstance(other, torch.Stream):
            return super().__eq__(other)
        return False

    def __hash__(self):
        return hash((self.stream_id, self.device_index))

    def __repr__(self):
        return f"<torch.mlu.Stream device=mlu:{self.device_index} stream_id={self.stream_id}>"


class ExternalStream(Stream):
    r"""Wraps a runtime queue created outside torch_mlu (cf. torch.cuda.ExternalStream).

    Args:
        stream_ptr (int): the ``mlu::mluQueue_t`` handle, as an int.
        device (torch.device or int, optional): the queue's device (default: current).

    The queue must outlive every use of the stream; torch_mlu never destroys it.
    """

    def __new__(cls, stream_ptr, device=None, **kwargs):
        torch.mlu._lazy_init()
        index = _get_device_index(device, optional=True)
        stream_id = _C._mlu_streamFromExternal(int(stream_ptr), index)
        return super().__new__(cls, stream_id=stream_id, device_index=index, device_type=_MLU_DEVICE_TYPE)


class _EventMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Event) and obj.device.type == "mlu"


class Event(metaclass=_EventMeta):
    r"""An mlu event: a point in a stream's work (cf. torch.cuda.Event).

    ``torch.mlu.Event(...)`` returns a ``torch.Event`` of device mlu (and
    ``isinstance(e, torch.mlu.Event)`` holds for any such event): torch's own
    Event methods (``record``, ``wait``, ``query``, ``synchronize``,
    ``elapsed_time``) accept only that exact type for their arguments.

    Args:
        enable_timing (bool, optional): measure time (default ``False``).
        blocking (bool, optional): accepted; host waits always block.
        interprocess (bool, optional): accepted; every mlu event can be sent to
            another process through torch.multiprocessing, where it arrives
            complete (see torch_mlu/mlu/reductions.py).
    """

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        torch.mlu._lazy_init()
        return torch.Event(device="mlu", enable_timing=enable_timing, blocking=blocking)


def _wrap(stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


def current_stream(device=None) -> Stream:
    r"""The current stream of ``device`` (default: the current device) for this thread."""
    torch.mlu._lazy_init()
    return _wrap(torch.accelerator.current_stream(_get_device_index(device, optional=True)))


def default_stream(device=None) -> Stream:
    r"""The default stream of ``device`` (default: the current device)."""
    torch.mlu._lazy_init()
    index = _get_device_index(device, optional=True)
    return Stream(stream_id=0, device_index=index, device_type=_MLU_DEVICE_TYPE)


def set_stream(stream) -> None:
    r"""Sets the current stream (and device, as torch.cuda.set_stream does). ``None`` does nothing."""
    if stream is None:
        return
    if not isinstance(stream, torch.Stream) or stream.device.type != "mlu":
        raise RuntimeError(f"set_stream: expected an mlu stream, got {stream!r}")
    torch.mlu._lazy_init()
    torch.accelerator.set_stream(stream)


def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
    r"""Sets the current stream from its three fields (what Dynamo's generated code calls)."""
    set_stream(Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))


class StreamContext:
    r"""Context manager that selects a given stream (and its device); ``None`` is a no-op."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = _get_device_index(None, optional=True) if stream is not None else -1
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device_index != cur.device_index:
            with torch.mlu.device(cur.device_index):
                self.dst_prev_stream = current_stream(cur.device_index)
        set_stream(cur)

    def __exit__(self, type, value, traceback):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        if self.src_prev_stream.device_index != cur.device_index:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream) -> StreamContext:
    r"""Context manager that selects ``stream`` (cf. torch.cuda.stream)."""
    return StreamContext(stream)
