"""Where does the first NaN or Inf come from? (torch_mlu.accuracy.nonfinite_origin; docs/accuracy.md)

Invariants: an op is the origin when one of its floating-point results (or the arguments it writes) holds a NaN
or an Inf while every floating-point tensor it read was finite; ops that only pass non-finite values on are not
reported. The program's results are untouched; each mlu op costs one device-to-host read of a flag per result.
Forward and backward ops both (as the accuracy check: _check.py).
"""
import threading
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ._check import _describe, _is_mlu, _program_stack


@dataclass
class NonFiniteOrigin:
    op: str
    phase: str
    results: list  # (which result, "n NaN, m Inf of k")
    inputs: list  # "shape dtype device [min, max]" of each tensor argument (no range for those it wrote)
    stack: list

    def __str__(self):
        lines = [f"the first non-finite value comes from {self.op} ({self.phase}), whose inputs were all finite"]
        lines += [f"  {name}: {what}" for name, what in self.results]
        lines.append("  inputs: " + ", ".join(self.inputs))
        if self.stack:
            lines.append("  called from:")
            lines += ["    " + line for line in self.stack[-6:]]
        return "\n".join(lines)


class NonFiniteError(FloatingPointError):
    """An op made a NaN or an Inf out of finite inputs: ``.origin`` says which and where."""

    def __init__(self, origin):
        super().__init__(str(origin))
        self.origin = origin


def _floating(value):
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()) and value.numel()


def _finite_flag(tensors):
    """A 0-d mlu bool tensor (queued, not read): whether every element of `tensors` is finite; None for none."""
    if not tensors:
        return None
    return torch.stack([t.detach().isfinite().all() for t in tensors]).all()


def _with_range(t):
    t = t.detach()
    if not _floating(t):
        return _describe(t)
    values = torch.view_as_real(t) if t.is_complex() else t
    return f"{_describe(t)} [{float(values.min()):.4g}, {float(values.max()):.4g}]"


class nonfinite_origin(TorchDispatchMode):  # noqa: N801 (a context manager)
    """Stops at the first mlu op that turns finite inputs into a NaN or an Inf: raises ``NonFiniteError`` (or,
    with ``raise_error=False``, keeps the first origin in ``.origin`` and lets the program go on)."""

    def __init__(self, raise_error=True):
        super().__init__()
        self.raise_error = raise_error
        self.origin = None
        self._lock = threading.Lock()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves, _ = tree_flatten((args, kwargs))
        if not any(_is_mlu(v) for v in leaves):
            return func(*args, **kwargs)
        # Read before the op, which may write its inputs; both flags come back in one read after it.
        inputs_finite = _finite_flag([v for v in leaves if _floating(v) and _is_mlu(v)])
        out = func(*args, **kwargs)
        if self.origin is not None:
            return out
        results = [(f"output {i}", o) for i, o in enumerate(tree_flatten(out)[0]) if _floating(o) and _is_mlu(o)]
        results += list(self._written(func, args, kwargs))
        results_finite = _finite_flag([t for _, t in results])
        if results_finite is None:
            return out
        if inputs_finite is None:
            inputs_finite = torch.ones((), dtype=torch.bool, device=results_finite.device)
        results_ok, inputs_ok = torch.stack([results_finite, inputs_finite]).tolist()
        if results_ok or not inputs_ok:
            return out
        counts = []
        for name, t in results:
            nan, inf = int(t.detach().isnan().sum()), int(t.detach().isinf().sum())
            if nan or inf:
                counts.append((name, f"{nan} NaN, {inf} Inf of {t.numel()}"))
        origin = NonFiniteOrigin(str(func), "backward" if torch._C._current_graph_task_id() != -1 else "forward",
                                 counts, [_describe(v) + " (written by the op)" if any(v is w for _, w in results)
                                          else _with_range(v) for v in leaves if isinstance(v, torch.Tensor)],
                                 _program_stack())
        with self._lock:
            if self.origin is None:
                self.origin = origin
        if self.raise_error:
            raise NonFiniteError(origin)
        return out

    @staticmethod
    def _written(func, args, kwargs):
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = kwargs.get(arg.name, args[i] if i < len(args) and not arg.kwarg_only else None)
            if _floating(value) and _is_mlu(value):
                yield (f"argument {arg.name}", value)
