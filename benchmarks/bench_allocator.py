"""Caching-allocator benchmarks: C++ cached alloc+free, torch.empty on mlu vs the CPU, fragmentation.

- cached alloc+free: median ns of one allocate+free pair through the mlu
  caching allocator, timed in C++ (torch_mlu._C._time_cached_alloc_free_ns).
- torch.empty: median time of `torch.empty(n, device=...)` + release from
  Python on mlu and on the CPU in the same run; the ratio is mlu / cpu.
- fragmentation: replays a training-like allocation pattern (persistent
  weights, activations allocated forward and freed backward, gradients,
  optimizer temporaries, varying batch sizes) at two model sizes and four
  seeds, and reports peak reserved / peak allocated.

    python benchmarks/bench_allocator.py [--repeats 7] [--out benchmarks/results/allocator.json]
"""
import argparse
import json
import os
import random
import statistics
import time

import torch

import torch_mlu

SIZES = [512, 64 << 10, 1 << 20, 8 << 20]


def time_empty(device, nbytes, iters):
    torch.empty(nbytes, dtype=torch.uint8, device=device)  # warm the cache
    start = time.perf_counter()
    for _ in range(iters):
        torch.empty(nbytes, dtype=torch.uint8, device=device)
    return (time.perf_counter() - start) / iters


def training_pattern(device, steps=30, seed=0, scale=1):
    """Returns (peak allocated, peak reserved) over a training-like run.

    `scale` multiplies every tensor size: scale 1 is a ~70 MiB model, where the
    20 MiB large-pool segments are a coarse grain; scale 4 is ~280 MiB.
    """
    rng = random.Random(seed)
    torch.mlu.empty_cache()
    torch.mlu.reset_peak_memory_stats()
    layers = [rng.choice([256, 512, 1024, 2048]) * 1024 * scale for _ in range(24)]
    weights = [torch.empty(n, dtype=torch.uint8, device=device) for n in layers]
    for step in range(steps):
        batch = rng.choice([8, 12, 16, 24, 32])
        activations = [torch.empty(n // 64 * batch, dtype=torch.uint8, device=device) for n in layers]
        grads = []
        for n, act in zip(reversed(layers), reversed(activations)):
            tmp = torch.empty(act.numel() // 2 + rng.randrange(1, 4096), dtype=torch.uint8, device=device)
            grads.append(torch.empty(n, dtype=torch.uint8, device=device))
            del tmp
        activations.clear()
        for g in grads:  # optimizer step temporaries
            _ = torch.empty(g.numel(), dtype=torch.uint8, device=device)
        grads.clear()
    torch.mlu.synchronize()
    stats = torch.mlu.memory_stats()
    del weights
    return stats["allocated_bytes.all.peak"], stats["reserved_bytes.all.peak"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "allocator.json"))
    args = parser.parse_args()

    cpp = {n: torch_mlu._C._time_cached_alloc_free_ns(n, 20000, args.repeats) for n in SIZES}
    empty = []
    for n in SIZES:
        cpu = statistics.median(time_empty("cpu", n, args.iters) for _ in range(args.repeats))
        mlu = statistics.median(time_empty("mlu", n, args.iters) for _ in range(args.repeats))
        empty.append({"bytes": n, "cpu_us": cpu * 1e6, "mlu_us": mlu * 1e6, "ratio": mlu / cpu})
    fragmentation = []
    for scale in (1, 4):
        ratios = []
        for seed in range(4):
            allocated, reserved = training_pattern("mlu", seed=seed, scale=scale)
            ratios.append({"seed": seed, "peak_allocated": allocated, "peak_reserved": reserved,
                           "ratio": reserved / allocated})
        fragmentation.append({"scale": scale, "runs": ratios,
                              "median_ratio": statistics.median(r["ratio"] for r in ratios)})

    report = {
        "benchmark": "allocator",
        "torch": torch.__version__,
        "repeats": args.repeats,
        "cached_alloc_free_ns": {str(k): v for k, v in cpp.items()},
        "torch_empty": empty,
        "fragmentation": fragmentation,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)

    print("cached alloc+free in C++ (median ns):")
    for n, ns in cpp.items():
        print(f"  {n:>9} bytes  {ns:8.1f} ns")
    print(f"{'torch.empty bytes':>18}  {'cpu us':>8}  {'mlu us':>8}  {'mlu/cpu':>8}")
    for r in empty:
        print(f"{r['bytes']:>18}  {r['cpu_us']:>8.2f}  {r['mlu_us']:>8.2f}  {r['ratio']:>8.2f}")
    for f in fragmentation:
        runs = ", ".join(f"{r['ratio']:.3f}" for r in f["runs"])
        print(f"fragmentation, scale {f['scale']}: peak reserved / peak allocated, median {f['median_ratio']:.3f} "
              f"over seeds ({runs})")
    print(f"(medians of {args.repeats} runs; JSON in {args.out})")


if __name__ == "__main__":
    main()
