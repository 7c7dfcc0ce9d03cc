"""Profiler overhead: the GPT-mini training step with torch.profiler on and off, mlu and stock CPU alike.

Results and the target they are measured against: docs/profiler.md (profiling with device activities on
costs at most 20% more wall time than profiling off).

The step is bench_models' GPT-mini (4 layers of 256, sequence 256, batch 8, AdamW), float32. For each device,
"off" runs --steps steps with no profiler; "on" runs them inside torch.profiler.profile with the CPU activity
and, on mlu, the MLU (PrivateUse1) activity: every kernel recorded, linked and exported. Wall time of the steps
(synchronized at the end), the median over --repeat passes that alternate off and on; "exit ms" is the profiler's
post-processing when the context closes (collecting and linking the events), reported apart.

    python benchmarks/bench_profiler.py [--steps 4] [--repeat 5] [--out benchmarks/results/bench_profiler.json]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

import torch_mlu  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import MODELS, synchronize  # noqa: E402


def make_step(device):
    torch.manual_seed(0)
    model, make_opt, (x, y) = MODELS["gpt"]()
    model = model.to(device)
    opt = make_opt(model.parameters())
    x, y = x.to(device), y.to(device)

    def step():
        loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def timed(step, device, steps, activities):
    """(seconds for `steps` steps, seconds the profiler took to close; 0 without one)."""
    synchronize(device)
    if activities is None:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        return time.perf_counter() - start, 0.0
    prof = profile(activities=activities)
    prof.__enter__()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    stepped = time.perf_counter()
    prof.__exit__(None, None, None)
    closed = time.perf_counter()
    events = [e for e in prof.events() if e.device_type != torch.autograd.DeviceType.CPU]
    if device == "mlu" and not events:
        raise RuntimeError("the mlu profile recorded no device events")
    return stepped - start, closed - stepped


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_profiler.json"))
    args = p.parse_args()
    activities = {"cpu": [ProfilerActivity.CPU], "mlu": [ProfilerActivity.CPU, ProfilerActivity.MLU]}
    results = {}
    for device in ("cpu", "mlu"):
        step = make_step(device)
        for _ in range(2):
            step()  # warm-up: allocator, caches, kernels
        timed(step, device, 1, activities[device])  # the profiler's own first-use set-up
        off, on, exits = [], [], []
        for _ in range(args.repeat):
            off.append(timed(step, device, args.steps, None)[0])
            seconds, exit_seconds = timed(step, device, args.steps, activities[device])
            on.append(seconds)
            exits.append(exit_seconds)
        off_s, on_s = statistics.median(off), statistics.median(on)
        results[device] = {"off_ms_per_step": 1e3 * off_s / args.steps, "on_ms_per_step": 1e3 * on_s / args.steps,
                           "overhead": on_s / off_s - 1, "exit_ms": 1e3 * statistics.median(exits),
                           "passes_overhead": [round(b / a - 1, 3) for a, b in zip(off, on)]}
    print(f"{'device':8} {'off ms/step':>12} {'on ms/step':>11} {'overhead':>9} {'exit ms':>8}  passes")
    for device, r in results.items():
        print(f"{device:8} {r['off_ms_per_step']:12.1f} {r['on_ms_per_step']:11.1f} {100 * r['overhead']:8.1f}% "
              f"{r['exit_ms']:8.1f}  {r['passes_overhead']}")
    print(f"mlu off / cpu off (steps/s ratio): {results['cpu']['off_ms_per_step'] / results['mlu']['off_ms_per_step']:.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": platform.node(), "torch": torch.__version__, "steps": args.steps, "results": results}, f,
                  indent=1)


if __name__ == "__main__":
    main()
