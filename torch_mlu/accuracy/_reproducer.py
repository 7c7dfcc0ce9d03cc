"""A standalone reproducer of one divergent op: its inputs as saved just before it ran, and a script that runs
it on mlu and on the CPU and prints the difference (exit status 1 while they still part ways).

Invariant: the folder holds everything the script needs (``inputs.pt``, ``repro.py``); the script needs only
torch and torch_mlu, so it can be sent to whoever owns the kernel.
"""
import os

import torch
from torch.utils._pytree import treespec_dumps

_SCRIPT = '''"""Reproduces what torch_mlu.accuracy.check found: {op} on mlu is not the CPU's.

    python {folder}/repro.py      (exit status 1 while mlu and the CPU still part ways)
"""
import os
import sys

import torch
import torch_mlu  # noqa: F401
from torch.utils._pytree import tree_flatten, tree_unflatten, treespec_loads

from torch_mlu.accuracy import difference

HERE = os.path.dirname(os.path.abspath(__file__))
saved = torch.load(os.path.join(HERE, "inputs.pt"), weights_only=False)
op = torch.ops.aten.{packet}.{overload}


def arguments(device):
    """The op's (args, kwargs), with what ran on mlu on `device` (fresh copies: the op may write them)."""
    leaves = []
    for i, value in enumerate(saved["leaves"]):
        if i in saved["on_mlu"]:
            value = value.to(device) if isinstance(value, torch.Tensor) else torch.device(device)
        leaves.append(value.clone() if isinstance(value, torch.Tensor) else value)
    return tree_unflatten(leaves, treespec_loads(saved["spec"]))


(mlu_args, mlu_kwargs), (cpu_args, cpu_kwargs) = arguments("mlu"), arguments("cpu")
results = [("output", tree_flatten(op(*mlu_args, **mlu_kwargs))[0], tree_flatten(op(*cpu_args, **cpu_kwargs))[0]),
           ("arguments after the op", tree_flatten((mlu_args, mlu_kwargs))[0],
            tree_flatten((cpu_args, cpu_kwargs))[0])]
diverges = False
for what, actual, expected in results:
    for i, (a, e) in enumerate(zip(actual, expected)):
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor):
            d = difference(a, e, {rtol}, {atol})
            diverges |= d.diverges
            if what == "output" or d.diverges:  # an argument differs only where the op wrote it
                print(f"{{what}} {{i}}: {{'DIVERGES: ' if d.diverges else ''}}{{d}}")
sys.exit(1 if diverges else 0)
'''


def write_reproducer(root, index, func, leaves, spec, on_mlu, rtol, atol):
    """Writes ``root/<index>_<op>/`` (inputs.pt, repro.py) for `func` on the arguments flattened to `leaves`
    (CPU copies, taken before the op ran) and `spec`; `on_mlu`: the leaves that were mlu tensors or the mlu
    device. Returns the folder."""
    packet, overload = func._schema.name.split("::")[1], func._overloadname or "default"
    folder = os.path.join(root, f"{index:03d}_{packet}")
    os.makedirs(folder, exist_ok=True)
    torch.save({"leaves": leaves, "spec": treespec_dumps(spec), "on_mlu": set(on_mlu)},
               os.path.join(folder, "inputs.pt"))
    with open(os.path.join(folder, "repro.py"), "w") as f:
        f.write(_SCRIPT.format(op=str(func), folder=folder, packet=packet, overload=overload, rtol=rtol, atol=atol))
    return folder
