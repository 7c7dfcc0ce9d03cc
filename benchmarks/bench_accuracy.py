"""What the accuracy tools cost: training steps of the model suite on mlu, plain and under each tool.

    python benchmarks/bench_accuracy.py [--models mlp cnn gpt] [--steps 3] [--runs 3]
        [--out build/bench_accuracy.json]

For each model of bench_models.py (its model, optimizer and batch), the median over --runs timings of --steps
training steps (forward, loss, backward, optimizer step), synchronized at the end: plain, under
torch_mlu.accuracy.check (every op also run on CPU copies of its inputs and compared; no reproducers), and under
torch_mlu.accuracy.nonfinite_origin (a finiteness flag of every op's inputs and results read back), and under
torch_mlu.accuracy.dump (statistics of every named module's outputs and gradients, every parameter's gradient,
value and update; one read per step), and under torch_mlu.accuracy.overflow_check (every floating-point result
scanned on the device for NaN and Inf, setting the sticky flag; nothing read back). The check's cost is
expected near one CPU re-execution of every op plus the copies; the dump's target is under 1.3x a plain step
(issue 67). Figures in docs/accuracy.md.
"""
import argparse
import json
import os
import sys
import tempfile
from contextlib import nullcontext

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402
from bench_distributed_training import _timed_steps  # noqa: E402
import torch_mlu.accuracy as accuracy  # noqa: E402

TOOLS = {"plain": lambda model, opt, folder: nullcontext(),
         "check": lambda model, opt, folder: accuracy.check(fail_fast=False, reproducer_dir=None),
         "nonfinite_origin": lambda model, opt, folder: accuracy.nonfinite_origin(raise_error=False),
         "dump": lambda model, opt, folder: accuracy.dump(model, folder, optimizer=opt),
         "overflow": lambda model, opt, folder: accuracy.overflow_check()}


def step_seconds(name, tool, steps, runs):
    torch.manual_seed(0)
    model, make_opt, batch = bench_models.MODELS[name]()
    model = model.to("mlu")
    opt = make_opt(model.parameters())
    inputs = tuple(t.to("mlu") for t in batch)

    def step():
        model(*inputs).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    with tempfile.TemporaryDirectory() as folder, TOOLS[tool](model, opt, folder):
        return _timed_steps(step, steps, runs, barrier=lambda: None)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(bench_models.MODELS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="build/bench_accuracy.json")
    args = parser.parse_args()
    rows = []
    print(f"training step on mlu, ms (median of {args.runs} x {args.steps} steps); x = ratio to plain")
    tools = [tool for tool in TOOLS if tool != "plain"]
    print(f"{'model':>6} {'plain':>8}" + "".join(f" {tool[:9]:>9} {'x':>5}" for tool in tools))
    for name in args.models:
        row = {"model": name, **{tool: step_seconds(name, tool, args.steps, args.runs) * 1000 for tool in TOOLS}}
        rows.append(row)
        print(f"{name:>6} {row['plain']:>8.1f}" +
              "".join(f" {row[tool]:>9.1f} {row[tool] / row['plain']:>5.2f}" for tool in tools))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": os.uname().nodename, "cores": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
