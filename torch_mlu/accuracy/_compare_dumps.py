"""Comparing two dumps (torch_mlu.accuracy.compare_dumps, ``python -m torch_mlu.accuracy compare A B``).

Invariants: records are matched by (step, kind, name, call, index) and walked in the order run A wrote them (its
execution order), so "first" means first in time. A record's error is relative to the scale of run B's tensor:
with full tensors, max |a - b| / max |b| over the finite elements; from statistics alone, the largest difference
of mean, min, max and RMS over B's RMS. A tensor non-finite in one run and not in the other (or NaN in one,
infinite in the other), or a record only one run has, counts as infinite error; non-finite the same way, as none.
"""
import json
import math
import os
from dataclasses import dataclass

import torch


@dataclass
class RecordError:
    step: int
    kind: str
    name: str
    call: int
    index: int
    error: float

    @property
    def where(self):
        return f"step {self.step} {self.kind:<8} {self.name}" + (f" (call {self.call})" if self.call else "") + (
            f" [{self.index}]" if self.index else "")


@dataclass
class Comparison:
    errors: list  # RecordError, in run A's order
    threshold: float

    @property
    def first(self):
        return next((e for e in self.errors if e.error > self.threshold), None)

    def largest(self, n=10):
        return sorted(self.errors, key=lambda e: -e.error)[:n]

    def by_module(self, kind, step=0):
        """[(name, largest error of its records)] of one kind and step, in execution order."""
        order, worst = [], {}
        for e in self.errors:
            if e.kind == kind and e.step == step:
                if e.name not in worst:
                    order.append(e.name)
                worst[e.name] = max(worst.get(e.name, 0.0), e.error)
        return [(name, worst[name]) for name in order]

    def table(self, top=10):
        lines = [f"{len(self.errors)} records compared; threshold {self.threshold:g} (relative to run B's scale)"]
        first = self.first
        lines.append(f"first divergence: {first.where}: {first.error:.3g}" if first else
                     "no divergence above the threshold")
        lines.append(f"largest {top}:")
        lines.append(f"  {'where':<60} {'error':>10}")
        lines += [f"  {e.where:<60} {e.error:>10.3g}" for e in self.largest(top)]
        return "\n".join(lines)


def _load(folder):
    records = {}
    with open(os.path.join(folder, "records.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            records[(r["step"], r["kind"], r["name"], r["call"], r["index"])] = r
    tensors = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("tensors_") and name.endswith(".pt"):
            tensors.update(torch.load(os.path.join(folder, name)))
    return records, tensors


def _special(r):
    """How a record's tensor is not finite: "nan", "+inf", "-inf", "+-inf", or "" (finite)."""
    if math.isnan(r["norm"]):
        return "nan"
    if math.isinf(r["norm"]):
        return ("+" if r["max"] == math.inf else "") + ("-" if r["min"] == -math.inf else "") + "inf"
    return ""


def _statistics_error(a, b):
    if a["numel"] != b["numel"] or _special(a) != _special(b):
        return math.inf
    if _special(a):
        return 0.0  # non-finite the same way: the moments say nothing more
    root_n = math.sqrt(max(b["numel"], 1))
    # Not the std: derived from the sum and the norm in float32, it cancels where the std is far below the mean
    # (a layer norm's weights), and the RMS and the mean cover it.
    differences = [abs(a["norm"] - b["norm"]) / root_n] + [abs(a[s] - b[s]) for s in ("mean", "min", "max")]
    return max(differences) / max(b["norm"] / root_n, 1e-30)


def _tensor_error(a, b):
    if a.shape != b.shape:
        return math.inf
    a, b = a.double(), b.double()
    if not torch.equal(a.isnan(), b.isnan()) or not torch.equal(a.isinf(), b.isinf()):
        return math.inf
    finite = a.isfinite()
    if not bool(finite.any()):
        return 0.0
    return float((a - b)[finite].abs().max() / b[finite].abs().max().clamp_min(1e-30))


def compare_dumps(folder_a, folder_b, threshold=1e-3):
    """Compares run A's dump with run B's (the reference); returns a Comparison."""
    records_a, tensors_a = _load(folder_a)
    records_b, tensors_b = _load(folder_b)
    errors = []
    for key, a in records_a.items():
        b = records_b.get(key)
        if b is None:
            error = math.inf
        else:
            name = "/".join(map(str, key))
            if name in tensors_a and name in tensors_b:
                error = _tensor_error(tensors_a[name], tensors_b[name])
            else:
                error = _statistics_error(a, b)
        errors.append(RecordError(*key, error))
    errors += [RecordError(*key, math.inf) for key in records_b if key not in records_a]
    return Comparison(errors, threshold)


def plot(comparison, path, step=0):
    """A PNG of each module's relative error at `step`, forward and backward (the gradient reaching its output),
    modules in the forward pass's order."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    forward = comparison.by_module("forward", step)
    names = [name for name, _ in forward]  # the x axis: modules in the forward pass's order
    backward = dict(comparison.by_module("backward", step))
    for kind, rows in (("forward", forward), ("backward", [(n, backward[n]) for n in names if n in backward])):
        if rows:
            ax.plot([names.index(n) for n, _ in rows], [max(e, 1e-12) for _, e in rows], marker="o", label=kind)
    ax.set_xticks(range(len(names)), names, rotation=70, ha="right", fontsize=7)
    ax.axhline(comparison.threshold, color="red", linestyle="--", linewidth=1, label="threshold")
    ax.set_yscale("log")
    ax.set_ylabel("relative error (run A vs run B)")
    ax.set_title(f"relative error per module, step {step}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
