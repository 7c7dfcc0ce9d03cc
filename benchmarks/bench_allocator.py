"""Caching-allocator benchmarks: C++ cached alloc+free, torch.empty on mlu vs the CPU, fragmentation.

Each is measured twice in one process, with fixed segments (the default) and
with expandable_segments:True (switched with _set_allocator_settings, caches
emptied in between):
- cached alloc+free: median ns of one allocate+free pair through the mlu
  caching allocator, timed in C++ (torch_mlu._C._time_cached_alloc_free_ns).
- torch.empty: median time of `torch.empty(n, device=...)` + release from
  Python on mlu and on the CPU in the same run; the ratio is mlu / cpu.
- fragmentation: replays a training-like allocation pattern (persistent
  weights, activations allocated forward and freed backward, gradients,
  optimizer temporaries, varying batch sizes) at two model sizes and four
  seeds, and reports peak reserved / peak allocated.
- models: peak reserved / peak allocated over training steps of the model
  suite of bench_models.py (mlp, cnn, gpt; float32 and bfloat16 autocast),
  then the steady-state training steps per second (float32) and how many
  unmaps happened meanwhile.

    python benchmarks/bench_allocator.py [--repeats 7] [--out benchmarks/results/allocator.json]
"""
import argparse
import json
import os
import random
import statistics
import time

import sys
import warnings

import torch

import torch_mlu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402

SETTINGS = {"fixed": "expandable_segments:False", "expandable": "expandable_segments:True"}

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


def model_memory(name, autocast_dtype, steps, min_time):
    """Peak reserved / peak allocated over `steps` training steps of a bench_models model, from a cold cache;
    with `min_time`, also the steady-state steps per second after them and the unmaps meanwhile."""
    torch.manual_seed(0)
    model, make_opt, batch = bench_models.MODELS[name]()
    torch.mlu.empty_cache()
    torch.mlu.reset_peak_memory_stats()
    trainer = bench_models.Trainer(model, make_opt, batch, "mlu", autocast_dtype)
    for _ in range(steps):
        trainer.step()
    torch.mlu.synchronize()
    allocated, reserved = torch.mlu.max_memory_allocated(), torch.mlu.max_memory_reserved()
    result = {"peak_allocated": allocated, "peak_reserved": reserved, "ratio": reserved / allocated}
    if min_time > 0:
        unmaps = torch.mlu.memory_stats()["num_device_free"]
        result["steps_per_second"] = trainer.steps_per_second(min_time)
        result["unmaps_while_timed"] = torch.mlu.memory_stats()["num_device_free"] - unmaps
    del trainer
    return result


def use_setting(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.mlu.memory._set_allocator_settings(text)
    torch.mlu.empty_cache()


def measure(args):
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
    models = {}
    for name in bench_models.MODELS:
        for dtype_name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
            timed = args.model_time if dtype is None else 0
            models[f"{name}_{dtype_name}"] = model_memory(name, dtype, args.model_steps, timed)
    return {"cached_alloc_free_ns": {str(k): v for k, v in cpp.items()}, "torch_empty": empty,
            "fragmentation": fragmentation, "models": models}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--model-steps", type=int, default=4)
    parser.add_argument("--model-time", type=float, default=2.0, help="seconds of steady-state steps per model")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "allocator.json"))
    args = parser.parse_args()

    results = {}
    for label, text in SETTINGS.items():
        use_setting(text)
        results[label] = measure(args)
    report = {"benchmark": "allocator", "torch": torch.__version__, "repeats": args.repeats, "settings": SETTINGS,
              "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)

    fixed, expandable = results["fixed"], results["expandable"]
    print(f"{'cached alloc+free (C++, median ns)':<36}  {'fixed':>8}  {'expand.':>8}")
    for n in SIZES:
        print(f"  {n:>9} bytes{'':<20}  {fixed['cached_alloc_free_ns'][str(n)]:>8.1f}  "
              f"{expandable['cached_alloc_free_ns'][str(n)]:>8.1f}")
    print(f"{'torch.empty bytes':>18}  {'cpu us':>8}  {'fixed us':>8}  {'ratio':>6}  {'expand. us':>10}  {'ratio':>6}")
    for f, e in zip(fixed["torch_empty"], expandable["torch_empty"]):
        print(f"{f['bytes']:>18}  {f['cpu_us']:>8.2f}  {f['mlu_us']:>8.2f}  {f['ratio']:>6.2f}  {e['mlu_us']:>10.2f}  "
              f"{e['mlu_us'] / e['cpu_us']:>6.2f}")
    print("peak reserved / peak allocated      fixed  expand.  peak allocated")
    for f, e in zip(fixed["fragmentation"], expandable["fragmentation"]):
        allocated = statistics.median(r["peak_allocated"] for r in e["runs"]) / 2**20
        print(f"  pattern, scale {f['scale']} (median of 4 seeds)  {f['median_ratio']:5.3f}  {e['median_ratio']:7.3f}  "
              f"{allocated:8.1f} MiB")
    for case in fixed["models"]:
        f, e = fixed["models"][case], expandable["models"][case]
        print(f"  {case:<34}{f['ratio']:5.3f}  {e['ratio']:7.3f}  {e['peak_allocated'] / 2**20:8.1f} MiB")
    print("steady-state training steps/s (float32)  fixed  expand.  unmaps while timed (expand.)")
    for case in fixed["models"]:
        f, e = fixed["models"][case], expandable["models"][case]
        if "steps_per_second" in f:
            print(f"  {case:<36}{f['steps_per_second']:6.2f}  {e['steps_per_second']:7.2f}  {e['unmaps_while_timed']:4d}")
    print(f"(medians of {args.repeats} runs; models: {args.model_steps} training steps from a cold cache; "
          f"JSON in {args.out})")


if __name__ == "__main__":
    main()
