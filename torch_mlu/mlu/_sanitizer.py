r"""The mlu stream sanitizer: torch.cuda._sanitizer (CSAN) for mlu, plus freed-memory reuse.

It finds kernels that touch the same memory from different streams with nothing ordering them: for every op,
a dispatch mode records which storages the op reads and writes on which stream, and the device trace
(``torch.mlu._gpu_trace``, fed by libtorch_mlu as c10/cuda feeds CSAN) says how streams were ordered since:
event records and waits, stream, event and device synchronizations, allocations and frees. A pair of accesses,
at least one a write, on two streams that no chain of events or synchronizations orders is reported with the
op, the tensor, both streams and both Python stack traces, and the program stops (``MLUSanitizerErrors``).

CSAN's analysis is device-generic and reused as it is (``EventHandler``: per-stream vector clocks and the
per-storage access log). What this module adds:

- accesses are keyed by the storage's base address, not the tensor's, so a view and its base are one buffer;
- an op's stream is the current stream of the device its mlu tensors live on (not of the current device);
- Note [Freed while in use]: the caching allocator hands a freed block to the next allocation on the stream
  that allocated it, at once. So freeing is an access by that stream: a use of the block on another stream
  that is not ordered before the free, and for which ``Tensor.record_stream`` was not called, is reported too
  (when the next op runs: frees happen inside the allocator, where an exception cannot surface).

Enable it with ``TORCH_MLU_SANITIZER=1`` (read when torch_mlu is imported) or
``torch.mlu._sanitizer.enable_mlu_sanitizer()``, as early as possible: work done before is not seen.
Every op goes through Python while it is on, which costs tens of microseconds per op.
"""
import inspect
import sys
import traceback

import torch
import torch.cuda._sanitizer as csan
from torch.utils._python_dispatch import TorchDispatchMode

import torch_mlu._C as _C

from . import _gpu_trace

__all__ = ["MLUSanitizerErrors", "enable_mlu_sanitizer"]

aten = torch.ops.aten


def describe_stream(handle: int) -> str:
    """``mlu:<device> stream <id>`` for a runtime queue handle (what the trace names streams by)."""
    found = _C._mlu_describeQueue(handle)
    return f"mlu:{found[0]} stream {found[1]}" if found is not None else f"queue {handle:#x}"


class UnsynchronizedAccessError(csan.UnsynchronizedAccessError):
    """Two accesses to one buffer from different streams that nothing orders."""

    def __str__(self):
        text = super().__str__()
        text = text.replace("CSAN detected a possible data race", "The mlu stream sanitizer detected a possible "
                            "data race", 1)
        for access in (self.current_access, self.previous_access):
            text = text.replace(f"by stream {access.stream} ", f"by {describe_stream(access.stream)} ", 1)
        return text


class FreedWhileInUseError(csan.SynchronizationError):
    """A block freed (and so reusable by its allocating stream) while another stream may still use it."""

    def __init__(self, data_ptr, allocation_stack_trace, owner, access, free_stack_trace):
        self.data_ptr = data_ptr
        self.allocation_stack_trace = allocation_stack_trace
        self.owner = owner
        self.access = access
        self.free_stack_trace = free_stack_trace

    def __str__(self):
        access = self.access
        lines = [
            "============================",
            f"The mlu stream sanitizer detected memory freed while another stream may still use it: tensor with "
            f"data pointer {self.data_ptr}, allocated on {describe_stream(self.owner)}, which may reuse it at once,",
            f"was last used by {describe_stream(access.stream)} during kernel:",
            f"{access.operator}\n{access.type}" + (" argument(s) " + ", ".join(access.aliases) if access.aliases
                                                   else ""),
            f"With stack trace:\n{''.join(access.stack_trace.format())}",
            "and freed, with nothing ordering that use before the free, with stack trace:",
            "".join(self.free_stack_trace.format()),
            "Call tensor.record_stream(stream) for each other stream that uses it, or make its allocating stream "
            "wait for them (an event, or Stream.wait_stream) before the tensor is freed.",
        ]
        if self.allocation_stack_trace:
            lines.append("Tensor was allocated with stack trace:\n" + "".join(self.allocation_stack_trace.format()))
        return "\n".join(lines)


class MLUSanitizerErrors(csan.CUDASanitizerErrors):
    """Raised by the op during (or after) which the sanitizer found errors; ``errors`` lists them."""


def _stack() -> traceback.StackSummary:
    stack = traceback.StackSummary.extract(traceback.walk_stack(inspect.currentframe()), lookup_lines=False)
    stack.reverse()
    return stack


class EventHandler(csan.EventHandler):
    """CSAN's analysis, with UnsynchronizedAccessError reported in mlu terms and frees checked."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[int, int] = {}             # block address -> the stream that allocated it
        self.recorded: dict[int, set[int]] = {}      # block address -> streams record_stream named
        self.pending: list[csan.SynchronizationError] = []
        # Note [Synchronizations inside an op]: host synchronizations traced while an op runs (a blocking copy
        # waits for its stream) are applied again once the op's own accesses are logged, since they cover the
        # op's kernels too; CSAN logs the accesses only after the op returned.
        self.in_op = False
        self.synced_in_op: list = []

    def _handle_kernel_launch(self, *args, **kwargs):
        errors = super()._handle_kernel_launch(*args, **kwargs)
        return [UnsynchronizedAccessError(e.data_ptr, e.allocation_stack_trace, e.current_access,
                                          e.previous_access)
                if isinstance(e, csan.UnsynchronizedAccessError) else e for e in errors]

    def _handle_memory_allocation(self, data_ptr: int) -> None:
        super()._handle_memory_allocation(data_ptr)
        self.owners[data_ptr] = torch.mlu.current_stream().mlu_stream
        self.recorded.pop(data_ptr, None)

    def _handle_memory_deallocation(self, data_ptr: int) -> None:
        # Note [Freed while in use]
        owner = self.owners.pop(data_ptr, None)
        recorded = self.recorded.pop(data_ptr, set())
        info = self.tensors_accessed.accesses.get(data_ptr)
        if owner is not None and info is not None:
            uses = list(info.reads) + ([info.write] if info.write is not None else [])
            for access in uses:
                if access.stream == owner or access.stream in recorded:
                    continue
                if not self.syncs.is_ordered_after(owner, access.seq_num, access.stream):
                    self.pending.append(FreedWhileInUseError(data_ptr, info.allocation_stack_trace, owner,
                                                             access, _stack()))
                    break
        super()._handle_memory_deallocation(data_ptr)

    def _handle_device_synchronization(self) -> None:
        super()._handle_device_synchronization()
        if self.in_op:
            self.synced_in_op.append((super()._handle_device_synchronization, ()))

    def _handle_stream_synchronization(self, stream: int) -> None:
        super()._handle_stream_synchronization(stream)
        if self.in_op:
            self.synced_in_op.append((super()._handle_stream_synchronization, (stream,)))

    def _handle_event_synchronization(self, event: int) -> None:
        super()._handle_event_synchronization(event)
        if self.in_op:
            self.synced_in_op.append((super()._handle_event_synchronization, (event,)))

    def replay_synchronizations(self) -> None:
        synced, self.synced_in_op = self.synced_in_op, []
        for handle, args in synced:
            handle(*args)

    def record_stream(self, data_ptr: int, stream: int) -> None:
        self.recorded.setdefault(data_ptr, set()).add(stream)

    def take_pending(self) -> list[csan.SynchronizationError]:
        pending, self.pending = self.pending, []
        return pending


class ArgumentHandler(csan.ArgumentHandler):
    """CSAN's argument parsing for mlu tensors, keyed by storage (a view is its base's buffer)."""

    def _handle_argument(self, value, is_write, metadata_only, name=None, is_output=False):
        if not (isinstance(value, torch.Tensor) and value.device.type == "mlu" and value.layout == torch.strided):
            return
        data_ptr = value.untyped_storage().data_ptr() or id(value)
        if is_write:
            self.dataptrs_written.add(data_ptr)
        elif not metadata_only:
            self.dataptrs_read.add(data_ptr)
        self.tensor_aliases.setdefault(data_ptr, [])
        if name is not None:
            self.tensor_aliases[data_ptr].append(name)
        if is_output:
            self.outputs.add(data_ptr)


def _op_device(args, kwargs):
    for value in torch.utils._pytree.tree_leaves((args, kwargs)):
        if isinstance(value, torch.Tensor) and value.device.type == "mlu":
            return value.device
    return None


class MLUSanitizerDispatchMode(TorchDispatchMode):
    def __init__(self) -> None:
        self.event_handler = EventHandler()
        torch._C._activate_gpu_trace()
        handler = self.event_handler
        _gpu_trace.register_callback_for_event_creation(handler._handle_event_creation)
        _gpu_trace.register_callback_for_event_deletion(handler._handle_event_deletion)
        _gpu_trace.register_callback_for_event_record(handler._handle_event_record)
        _gpu_trace.register_callback_for_event_wait(handler._handle_event_wait)
        _gpu_trace.register_callback_for_memory_allocation(handler._handle_memory_allocation)
        _gpu_trace.register_callback_for_memory_deallocation(handler._handle_memory_deallocation)
        _gpu_trace.register_callback_for_stream_creation(handler._handle_stream_creation)
        _gpu_trace.register_callback_for_device_synchronization(handler._handle_device_synchronization)
        _gpu_trace.register_callback_for_stream_synchronization(handler._handle_stream_synchronization)
        _gpu_trace.register_callback_for_event_synchronization(handler._handle_event_synchronization)
        self.enabled = True  # the callbacks stay registered: disabling the mode makes them no-ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self._raise(self.event_handler.take_pending())
        device = _op_device(args, kwargs)
        if func is aten.record_stream.default:
            tensor, stream = args
            if tensor.device.type == "mlu":
                self.event_handler.record_stream(tensor.untyped_storage().data_ptr(),
                                                 _C._mlu_streamQueue(stream.stream_id, stream.device_index))
            return func(*args, **kwargs)
        is_factory = bool(csan.FACTORY_FUNCTION_REGEX.match(func._schema.name))
        arguments = ArgumentHandler()
        arguments.parse_inputs(func._schema, args, kwargs, is_factory=is_factory)
        handler = self.event_handler
        handler.in_op = True
        try:
            outputs = func(*args, **kwargs)
        finally:
            handler.in_op = False
        device = device or _op_device(outputs, {})  # a factory's device is its output's
        if device is None:  # no mlu tensor in or out: nothing this sanitizer follows
            return outputs
        arguments.parse_outputs(func._schema, outputs, is_factory=is_factory)
        errors = handler._handle_kernel_launch(
            torch.mlu.current_stream(device).mlu_stream,
            arguments.dataptrs_read - arguments.dataptrs_written,
            arguments.dataptrs_written,
            arguments.outputs,
            func._schema,
            arguments.tensor_aliases,
        )
        handler.replay_synchronizations()  # Note [Synchronizations inside an op]
        self._raise(errors + handler.take_pending())
        return outputs

    @staticmethod
    def _raise(errors):
        if errors:
            for error in errors:
                print(error, file=sys.stderr)
            raise MLUSanitizerErrors(errors)


class MLUSanitizer:
    """Owns the dispatch mode for the rest of the program (as torch.cuda._sanitizer.CUDASanitizer)."""

    def __init__(self) -> None:
        self.dispatch = None
        self.enabled = False

    def enable(self):
        if self.enabled:
            return
        if self.dispatch is None:
            self.dispatch = MLUSanitizerDispatchMode()
        self.dispatch.__enter__()
        self.enabled = True

    def disable(self):
        if self.enabled:
            self.dispatch.__exit__(None, None, None)
            self.enabled = False

    def __del__(self):
        if (sys is not None) and (not sys.is_finalizing()) and self.enabled:
            self.disable()


def enable_mlu_sanitizer():
    """Enable the mlu stream sanitizer (see the module's documentation).

    From now on every op on mlu tensors is checked for unsynchronized accesses from different streams; the
    first op that completes a race raises ``MLUSanitizerErrors`` after printing each race to stderr. Enable it
    at the start of the program: what ran before is not known to it.
    """
    mlu_sanitizer.enable()


mlu_sanitizer = MLUSanitizer()
