"""Recording a run's named modules for comparison with another run (torch_mlu.accuracy.dump; docs/accuracy.md).

Invariants:
- Works on any device (mlu, cpu, cuda through the migration layer): only module and optimizer hooks, no dispatch
  mode, so two runs on different devices record the same names in the same order.
- Records per step: each named module's forward outputs and the gradients reaching them (backward), and
  after each optimizer step every parameter's gradient, value and update (the change the step made). A record is
  (step, kind, name, call, index) -> statistics (numel, mean, std, min, max, norm).
- Statistics stay on the device until the step ends (the optimizer's step, ``Dump.step()``, or leaving the block):
  one read per step, so a statistics-only dump costs a few reductions per tensor, not a wait per module.
- Full tensors on request (``tensors=True``): CPU copies in ``tensors_<step>.pt``, keyed like the records.
Files: ``meta.json`` (device, model class, torch and torch_mlu versions), ``records.jsonl`` (one record a line).
"""
import json
import os

import torch

STATS = ("numel", "mean", "std", "min", "max", "norm")


def statistics(t):
    """A float64 vector of STATS for `t`, on its device (queued, not read back): three passes over the tensor
    (sum, norm, min and max), the standard deviation from those. A NaN anywhere makes the norm NaN, an Inf
    infinite (and the min or max infinite): the comparison tells them apart by that (_compare_dumps.py)."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    n = t.numel()
    total = t.sum(dtype=torch.float32 if t.element_size() < 4 else None).double()
    norm = torch.linalg.vector_norm(t).double()
    low, high = torch.aminmax(t)
    mean = total / n
    std = (norm.square() / n - mean.square()).clamp_min(0).sqrt()
    return torch.stack([t.new_tensor(float(n), dtype=torch.float64), mean, std, low.double(), high.double(), norm])


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
        for index, t in enumerate(_tensors(value)):
            if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
                continue
            copy = t.detach().to("cpu", copy=True) if self.tensors else None
            self._pending.append(((self.step_index, kind, name, call, index), statistics(t), copy))

    def _forward(self, label, out):
        call = self._calls.get(("forward", label), 0)
        self._record("forward", label, out)
        # The gradient reaching each output, keyed by the forward call it belongs to. A hook on the tensor, not
        # a module backward hook: those wrap the outputs and forbid in-place changes to them.
        for index, t in enumerate(_tensors(out)):
            if t.requires_grad and t.grad_fn is not None:
                t.register_hook(lambda g, index=index: self._record_gradient(label, call, index, g))

    def _record_gradient(self, label, call, index, grad):
        if grad is not None and grad.numel():
            copy = grad.detach().to("cpu", copy=True) if self.tensors else None
            self._pending.append(((self.step_index, "backward", label, call, index), statistics(grad), copy))

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

    def _pre_step(self):
        self._before = {}
        for name, p in self._named_parameters():
            if p.grad is not None:
                self._record("grad", name, p.grad)
            self._before[name] = p.detach().clone()

    def _post_step(self):
        for name, p in self._named_parameters():
            self._record("param", name, p)
            if name in self._before:
                self._record("update", name, p.detach() - self._before[name])
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
        by_device = {}
        for i, (_, stats, _) in enumerate(self._pending):
            by_device.setdefault(stats.device, []).append(i)
        values = [None] * len(self._pending)
        for indices in by_device.values():  # one read per device
            rows = torch.stack([self._pending[i][1] for i in indices]).cpu().tolist()
            for i, row in zip(indices, rows):
                values[i] = row
        with open(os.path.join(self.folder, "records.jsonl"), "a") as f:
            for ((step, kind, name, call, index), _, _), row in zip(self._pending, values):
                f.write(json.dumps({"step": step, "kind": kind, "name": name, "call": call, "index": index,
                                    **dict(zip(STATS, row))}) + "\n")
        if self.tensors:
            path = os.path.join(self.folder, f"tensors_{self._pending[0][0][0]:05d}.pt")
            saved = torch.load(path) if os.path.exists(path) else {}
            saved.update({"/".join(map(str, key)): copy for key, _, copy in self._pending})
            torch.save(saved, path)
        self._pending = []
