"""The op-by-op accuracy check: every aten op that runs on mlu is run again on CPU copies of its inputs and the
results compared (torch_mlu.accuracy.check; docs/accuracy.md).

Invariants:
- The program's own results are the mlu op's, untouched: the CPU run only reads copies taken before the op, so
  in-place ops and ops with outputs are compared on their written arguments too.
- What is not compared is listed with the reason (``Report.skipped``): random ops (tag ``nondeterministic_seeded``),
  uninitialised factories, views (they compute nothing), ops outside ``aten`` (collectives, the plugin's own),
  ops the CPU lacks. Indices of ties (sort, topk, max.dim, ...) are checked by what they select, not compared.
- Forward and backward ops both: the mode is thread-local state the autograd engine carries to its device threads;
  the module restriction (``modules``) follows the forward pass through module hooks, and a backward op belongs to
  no module.
"""
import itertools
import os
import threading
import traceback
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from ._references import REFERENCES, bind
from ._reproducer import write_reproducer
from ._tolerance import Difference, difference

aten = torch.ops.aten

# Allocate without writing: nothing to compare.
_UNINITIALISED = {aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default,
                  aten.new_empty.default, aten.new_empty_strided.default}
# Act on the device or the allocator, not on values.
_NOT_VALUES = {aten.record_stream.default, aten.set_.source_Storage, aten.set_.source_Storage_storage_offset,
               aten.set_.source_Tensor, aten.set_.default, aten.resize_.default, aten.lift_fresh.default,
               aten._has_compatible_shallow_copy_type.default}
# (values, indices) results whose indices may pick any of equal values.
_TIE_INDICES = {aten.sort.default, aten.sort.stable, aten.topk.default, aten.kthvalue.default, aten.max.dim,
                aten.min.dim, aten.mode.default, aten.median.dim, aten.nanmedian.dim, aten.cummax.default,
                aten.cummin.default}


class AccuracyError(AssertionError):
    """An mlu op's result left the CPU's: ``.divergence`` says which and by how much."""

    def __init__(self, divergence):
        super().__init__(str(divergence))
        self.divergence = divergence


@dataclass
class Divergence:
    op: str
    phase: str  # "forward" or "backward"
    module: str  # the innermost named module of the forward pass running it ("" where none)
    stack: list  # the Python frames of the program (not of torch or this tool), innermost last
    inputs: list  # "shape dtype device" of each tensor argument
    outputs: list  # (which output, Difference) of those out of tolerance
    reproducer: str = ""  # the reproducer's folder

    def __str__(self):
        lines = [f"mlu and the CPU part ways at {self.op} ({self.phase}"
                 + (f", in module {self.module})" if self.module else ")")]
        for name, diff in self.outputs:
            lines.append(f"  {name}: {diff}")
        lines.append("  inputs: " + ", ".join(self.inputs))
        if self.stack:
            lines.append("  called from:")
            lines += ["    " + line for line in self.stack[-6:]]
        if self.reproducer:
            lines.append(f"  reproducer: python {os.path.join(self.reproducer, 'repro.py')}")
        return "\n".join(lines)


@dataclass
class Report:
    checked: dict = field(default_factory=dict)  # op -> times compared
    divergences: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)  # op -> why it was not compared

    def __str__(self):
        lines = [f"accuracy check: {sum(self.checked.values())} op calls compared ({len(self.checked)} ops), "
                 f"{len(self.divergences)} divergent"]
        lines += [str(d) for d in self.divergences]
        if self.skipped:
            lines.append("not compared: " + ", ".join(f"{op} ({why})" for op, why in sorted(self.skipped.items())))
        return "\n".join(lines)


def _is_mlu(value):
    return isinstance(value, torch.Tensor) and value.device.type == "mlu"


def _to_cpu(value):
    if _is_mlu(value):
        return value.detach().to("cpu")
    if isinstance(value, torch.device) and value.type == "mlu":
        return torch.device("cpu")
    return value


def _describe(value):
    return f"{tuple(value.shape)} {str(value.dtype).replace('torch.', '')} {value.device}"


def _program_stack():
    """The caller's frames outside torch and this package, as 'file:line in function: code'."""
    torch_dir = os.path.dirname(torch.__file__)
    own_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = []
    for frame in traceback.extract_stack()[:-3]:
        if frame.filename.startswith((torch_dir, own_dir)) or "<frozen" in frame.filename:
            continue
        frames.append(f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line or ''}".rstrip(": "))
    return frames


class check(TorchDispatchMode):  # noqa: N801 (a context manager, named as torch.no_grad is)
    """Runs each aten op of the block on mlu and on CPU copies of its inputs, and compares the results.

    ``with torch_mlu.accuracy.check() as report: loss = model(x); loss.backward()`` -- at the first op out of
    tolerance an ``AccuracyError`` names it, with its Python stack, shapes, dtypes and error statistics, and a
    standalone reproducer is written under ``reproducer_dir`` (``None``: none). ``fail_fast=False`` collects every
    divergence in the report instead. ``rtol``/``atol``: torch.testing's per-dtype defaults unless given.
    ``ops``: only these ops (``"mm"``, ``"aten.mm"`` or ``"aten.mm.default"``); ``modules``: only ops run inside
    these named submodules of ``model`` (forward ops; a name covers its children).
    """

    def __init__(self, *, rtol=None, atol=None, fail_fast=True, ops=None, modules=None, model=None,
                 reproducer_dir="accuracy_reproducers"):
        super().__init__()
        if modules is not None and model is None:
            raise ValueError("torch_mlu.accuracy.check: `modules` names submodules of `model`; pass model=...")
        self.rtol, self.atol, self.fail_fast = rtol, atol, fail_fast
        self.ops = None if ops is None else set(ops)
        self.modules = None if modules is None else tuple(modules)
        self.model = model
        self.reproducer_dir = reproducer_dir
        self.report = Report()
        self._lock = threading.Lock()
        self._module_stack = []
        self._hooks = []
        self._count = itertools.count()

    # ---- module context (forward only) ----

    def __enter__(self):
        if self.model is not None:
            names = {id(m): name for name, m in self.model.named_modules()}

            def pre(module, args):
                self._module_stack.append(names.get(id(module)))

            def post(module, args, output):
                self._module_stack.pop()

            self._hooks = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
                           torch.nn.modules.module.register_module_forward_hook(post, always_call=True)]
        super().__enter__()
        return self.report

    def __exit__(self, *exc):
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        return super().__exit__(*exc)

    def _current_module(self):
        return next((name for name in reversed(self._module_stack) if name), "")

    def _selected(self, func, module, backward):
        if self.ops is not None:
            packet = func.overloadpacket.__name__
            if not ({packet, f"aten.{packet}", str(func)} & self.ops):
                return False
        if self.modules is not None:
            return not backward and any(module == m or module.startswith(m + ".") for m in self.modules)
        return True

    def _skip(self, func, why):
        with self._lock:
            self.report.skipped.setdefault(str(func), why)

    # ---- the check ----

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves, spec = tree_flatten((args, kwargs))
        on_mlu = any(_is_mlu(v) for v in leaves) or any(
            isinstance(v, torch.device) and v.type == "mlu" for v in leaves)
        if not on_mlu:
            return func(*args, **kwargs)
        backward = torch._C._current_graph_task_id() != -1
        module = "" if backward else self._current_module()
        why = self._why_not_compared(func)
        if why or not self._selected(func, module, backward):
            if why:
                self._skip(func, why)
            return func(*args, **kwargs)
        cpu_args, cpu_kwargs = tree_map(_to_cpu, (args, kwargs))
        inputs = [_describe(v) for v in leaves if isinstance(v, torch.Tensor)]
        saved = [_to_cpu(v) for v in leaves] if self.reproducer_dir else None  # before the op writes any
        out = func(*args, **kwargs)
        try:
            if func in REFERENCES:
                expected = REFERENCES[func](bind(func, cpu_args, cpu_kwargs))
                if expected is None:
                    self._skip(func, "random (dropout)")
                    return out
            else:
                expected = func(*cpu_args, **cpu_kwargs)
        except (NotImplementedError, RuntimeError) as e:
            self._skip(func, f"the CPU cannot run it: {str(e).splitlines()[0][:80]}")
            return out
        diffs = self._compare(func, args, kwargs, out, cpu_args, cpu_kwargs, expected)
        with self._lock:
            self.report.checked[str(func)] = self.report.checked.get(str(func), 0) + 1
        if diffs:
            divergence = Divergence(str(func), "backward" if backward else "forward", module, _program_stack(),
                                    inputs, diffs)
            if saved is not None:
                on_mlu = [i for i, v in enumerate(leaves) if _is_mlu(v) or isinstance(v, torch.device)]
                divergence.reproducer = write_reproducer(self.reproducer_dir, next(self._count), func, saved, spec,
                                                         on_mlu, self.rtol, self.atol)
            with self._lock:
                self.report.divergences.append(divergence)
            if self.fail_fast:
                raise AccuracyError(divergence)
        return out

    @staticmethod
    def _why_not_compared(func):
        if func.namespace != "aten":
            return "not an aten op"
        if func in _UNINITIALISED:
            return "uninitialised memory"
        if func in _NOT_VALUES:
            return "acts on memory, not values"
        if torch.Tag.nondeterministic_seeded in func.tags and func not in REFERENCES:
            return "random"
        if func.is_view:
            return "a view"
        return ""

    def _compare(self, func, args, kwargs, out, cpu_args, cpu_kwargs, expected):
        pairs = []
        outs, _ = tree_flatten(out, is_leaf=lambda x: x is None)
        refs, _ = tree_flatten(expected, is_leaf=lambda x: x is None)
        if len(outs) != len(refs):
            return [("result", Difference(1, 1, float("inf"), float("inf"), 0, 0,
                                          f"{len(outs)} results vs the CPU's {len(refs)}"))]
        for i, (o, e) in enumerate(zip(outs, refs)):
            if func in _TIE_INDICES and i == 1:
                continue  # checked through the values (below)
            pairs.append((f"output {i}", o, e))
        # Arguments the op writes (in-place and out= ops), compared after it.
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = kwargs.get(arg.name, args[i] if i < len(args) and not arg.kwarg_only else None)
            ref = cpu_kwargs.get(arg.name, cpu_args[i] if i < len(cpu_args) and not arg.kwarg_only else None)
            if _is_mlu(value) and isinstance(ref, torch.Tensor):
                pairs.append((f"argument {arg.name}", value, ref))
        diffs = []
        for name, o, e in pairs:
            if e is None:
                continue  # a result the reference does not compute (_references.py)
            if isinstance(o, torch.Tensor) and isinstance(e, torch.Tensor):
                d = difference(o, e, self.rtol, self.atol)
            elif isinstance(o, (int, float, bool)) and isinstance(e, (int, float, bool)):
                d = difference(torch.tensor(o), torch.tensor(e), self.rtol, self.atol)
            else:
                continue
            if d.diverges:
                diffs.append((name, d))
        if func in _TIE_INDICES and not diffs:
            diffs += self._check_tie_indices(func, args, kwargs, outs)
        return diffs

    def _check_tie_indices(self, func, args, kwargs, outs):
        """The mlu indices must select the mlu values from the input (any of equal values will do)."""
        values, indices = outs[0], outs[1]
        source = args[0]
        if not (isinstance(indices, torch.Tensor) and source.dim() > 0):
            return []
        position = [a.name for a in func._schema.arguments].index("dim")
        dim = kwargs.get("dim", args[position] if position < len(args) else -1)
        index = indices if indices.dim() == source.dim() else indices.unsqueeze(dim)
        value = values if values.dim() == source.dim() else values.unsqueeze(dim)
        picked = source.detach().cpu().gather(dim, index.cpu())
        d = difference(picked, value.detach().cpu(), 0.0, 0.0)
        return [("indices (what they select)", d)] if d.diverges else []
