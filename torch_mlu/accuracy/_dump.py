"""Recording a run's named modules for comparison with another run (torch_mlu.accuracy.dump; docs/accuracy.md).

Invariants:
- Works on any device (mlu, cpu, cuda through the migration layer): only module and optimizer hooks, no dispatch
  mode, so two runs on different devices record the same names in the same order.
- Records per step: each named module's forward outputs and the gradients reaching them (backward), and
  after each optimizer step every parameter's gradient, value and update (the change the step made). A record is
  (step, kind, name, call, index) -> statistics (numel, mean, std, min, max, norm).
- Statistics stay on the device until the step ends (the optimizer's step, ``Dump.step()``, or leaving the block):
  one read per step. On mlu one kernel launch per module call (its outputs, or their gradients) and three per
  optimizer step (every gradient, value, update), each tensor read once: the dump's cost is about one read of
  what it records (docs/accuracy.md, Cost).
- Full tensors on request (``tensors=True``): CPU copies in ``tensors_<step>.pt``, keyed like the records.
Files: ``meta.json`` (device, model class, torch and torch_mlu versions), ``records.jsonl`` (one record a line).
"""
import json
import os

import torch

STATS = ("numel", "mean", "std", "min", "max", "norm")


def _floating(t):
    return (t.is_floating_point() or t.is_complex()) and t.numel() > 0


def _as_real(t):
    t = t.detach()
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def statistics(tensors, minus=None):
    """A float64 tensor (len(tensors), len(STATS)) on the tensors' device (queued, not read back): the statistics
    of each tensor, or of each difference tensors[i] - minus[i], in double. On mlu one kernel reads each tensor
    once (csrc/aten/TensorStatistics.h); elsewhere the same formulas in torch ops. A NaN anywhere makes every
    statistic but numel NaN, an Inf the norm infinite: the comparison tells them apart by that (_compare_dumps.py)."""
    tensors = [t.detach() for t in tensors]
    minus = None if minus is None else [m.detach() for m in minus]
    if tensors[0].device.type == "mlu":
        import torch_mlu
        return torch_mlu._C._mlu_tensorStatistics(tensors, minus or [])
    rows = []
    for i, t in enumerate(tensors):
        x = _as_real(t)
        if minus is not None:  # subtracted as the kernel does: in float, or in double for float64
            wide = torch.float64 if x.dtype == torch.float64 else torch.float32
            x = x.to(wide) - _as_real(minus[i]).to(wide)
        x = x.double()
        low, high = torch.aminmax(x)
        rows.append(torch.stack([x.new_tensor(float(x.numel())), x.mean(), x.std(correction=0), low, high,
                                 torch.linalg.vector_norm(x)]))
    return torch.stack(rows)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


class dump:  # noqa: N801 (a context manager)
    """``with torch_mlu.accuracy.dump(model, "runs/mlu", optimizer=opt): train()`` records `model`'s named modules
    (``modules``: only these names and their children) into the folder; compare two folders with
    ``python -m torch_mlu.accuracy compare A B`` (or ``compare_dumps``)."""

    def __init__(self, model, folder, *, optimizer=None, modules=None, tensors=False):
        self.model, self.folder, self.optimizer, self.tensors = model, folder, optimizer, tensors
        self.modules = None if modules is None else tuple(modules)
        self.step_index = 0
        self._pending = []  # (key, device statistics, CPU copy or None)
        self._calls = {}
        self._handles = []
        self._before = None

    def _wanted(self, name):
        return self.modules is None or any(name == m or name.startswith(m + ".") for m in self.modules)

    def _record(self, kind, name, value, call=None):
        if call is None:
            call = self._calls.get((kind, name), 0)
            self._calls[(kind, name)] = call + 1
        tensors = [(index, t) for index, t in enumerate(_tensors(value)) if _floating(t)]
        self._record_batch([((self.step_index, kind, name, call, index), t) for index, t in tensors])

    def _record_batch(self, keyed, minus=None):
        """Records (key, tensor) pairs: one statistics call per device (of the differences with `minus`)."""
        by_device = {}
        for i, (key, t) in enumerate(keyed):
            by_device.setdefault(t.device, []).append(i)
        for indices in by_device.values():
            batch = statistics([keyed[i][1] for i in indices], None if minus is None else [minus[i] for i in indices])
            for row, i in enumerate(indices):
                key, t = keyed[i]
                copy = None
                if self.tensors:
                    copy = (t.detach() - minus[i] if minus is not None else t.detach()).to("cpu", copy=True)
                self._pending.append((key, batch, row, copy))

    def _forward(self, label, out):
        call = self._calls.get(("forward", label), 0)
        self._record("forward", label, out)
        # The gradient reaching each output, keyed by the forward call it belongs to. A hook on the tensor, not
        # a module backward hook: those wrap the outputs and forbid in-place changes to them.
        for index, t in enumerate(_tensors(out)):
            if t.requires_grad and t.grad_fn is not None:
                t.register_hook(lambda g, index=index: self._record_gradient(label, call, index, g))

    def _record_gradient(self, label, call, index, grad):
        if grad is not None and _floating(grad):
            self._record_batch([((self.step_index, "backward", label, call, index), grad)])

    def __enter__(self):
        os.makedirs(self.folder, exist_ok=True)
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        import torch_mlu
        with open(os.path.join(self.folder, "meta.json"), "w") as f:
            json.dump({"device": str(device), "model": type(self.model).__name__, "torch": torch.__version__,
                       "torch_mlu": torch_mlu.__version__, "tensors": self.tensors}, f)
        open(os.path.join(self.folder, "records.jsonl"), "w").close()
        for name, module in self.model.named_modules():
            if not self._wanted(name):
                continue
            label = name or "(model)"
            self._handles.append(module.register_forward_hook(
                lambda m, args, out, label=label: self._forward(label, out)))
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(lambda opt, args, kwargs: self._pre_step()))
            self._handles.append(self.optimizer.register_step_post_hook(lambda opt, args, kwargs: self._post_step()))
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._flush()
        return False

    def _named_parameters(self):
        return [(n, p) for n, p in self.model.named_parameters() if self._wanted(n.rsplit(".", 1)[0] if "." in n
                                                                                  else "")]

    def _keyed(self, kind, named):
        return [((self.step_index, kind, name, 0, 0), t) for name, t in named if _floating(t)]

    def _pre_step(self):
        named = self._named_parameters()
        grads = self._keyed("grad", [(name, p.grad) for name, p in named if p.grad is not None])
        if grads:
            self._record_batch(grads)
        self._before = {name: p.detach().clone() for name, p in named if _floating(p)}

    def _post_step(self):
        named = [(name, p) for name, p in self._named_parameters() if _floating(p)]
        if named:
            self._record_batch(self._keyed("param", named))
            changed = [(name, p) for name, p in named if name in self._before]
            if changed:
                self._record_batch(self._keyed("update", changed), minus=[self._before[name] for name, _ in changed])
        self._before = None
        self.step()

    def step(self):
        """Ends the step: its records are read back and written; the next records belong to the next step."""
        self._flush()
        self.step_index += 1
        self._calls = {}

    def _flush(self):
        if not self._pending:
            return
        batches = {}  # id -> (batch, its rows read back)
        for _, batch, _, _ in self._pending:
            batches.setdefault(id(batch), batch)
        by_device = {}
        for key, batch in batches.items():
            by_device.setdefault(batch.device, []).append(key)
        rows = {}
        for keys in by_device.values():  # one read per device
            values = torch.cat([batches[key] for key in keys]).cpu().tolist()
            offset = 0
            for key in keys:
                rows[key] = values[offset:offset + len(batches[key])]
                offset += len(batches[key])
        with open(os.path.join(self.folder, "records.jsonl"), "a") as f:
            for (step, kind, name, call, index), batch, row, _ in self._pending:
                f.write(json.dumps({"step": step, "kind": kind, "name": name, "call": call, "index": index,
                                    **dict(zip(STATS, rows[id(batch)][row]))}) + "\n")
        if self.tensors:
            path = os.path.join(self.folder, f"tensors_{self._pending[0][0][0]:05d}.pt")
            saved = torch.load(path) if os.path.exists(path) else {}
            saved.update({"/".join(map(str, key)): copy for key, _, _, copy in self._pending})
            torch.save(saved, path)
        self._pending = []
