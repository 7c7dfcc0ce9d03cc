"""Basic device operations on mlu against stock PyTorch on the CPU, in one run.

Each case times the same operation on the CPU (the baseline) and on mlu
(including a final synchronize, so queued work is counted). Reports the median
of --repeats runs of --iters iterations each, writes JSON and prints a table
of ratios (mlu time / cpu time: below 1 means mlu is faster).

    python benchmarks/bench_basic.py [--repeats 7] [--iters 50] [--out benchmarks/results/basic.json]
"""
import argparse
import json
import os
import platform
import statistics
import time
import warnings

import torch

import torch_mlu

N = 1 << 20  # elements in the large cases (4 MiB of float32)


def timed(fn, sync, iters):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def cases():
    host = torch.randn(N)
    dev = host.to("mlu")
    host_2d, dev_2d = host.view(1024, 1024), dev.view(1024, 1024)
    out_host, out_dev = torch.empty(N), torch.empty(N, device="mlu")
    pinned = host.pin_memory()
    tiny_host, tiny_dev = torch.empty(1), torch.empty(1, device="mlu")
    return {
        # name: (cpu op, mlu op)
        "fill_ 1M float32": (lambda: out_host.fill_(1.5), lambda: out_dev.fill_(1.5)),
        "copy_ 1M float32 contiguous": (lambda: out_host.copy_(host), lambda: out_dev.copy_(dev)),
        "copy_ 1M float32 transposed": (lambda: out_host.view(1024, 1024).copy_(host_2d.t()),
                                        lambda: out_dev.view(1024, 1024).copy_(dev_2d.t())),
        "to(float16) 1M": (lambda: host.to(torch.float16), lambda: dev.to(torch.float16)),
        "host->device 4 MiB pageable": (lambda: out_host.copy_(host), lambda: out_dev.copy_(host)),
        "host->device 4 MiB pinned": (lambda: out_host.copy_(pinned), lambda: out_dev.copy_(pinned, non_blocking=True)),
        "device->host 4 MiB": (lambda: out_host.copy_(host), lambda: out_host.copy_(dev)),
        "fill_ 1 element (launch cost)": (lambda: tiny_host.fill_(1.0), lambda: tiny_dev.fill_(1.0)),
        "item() (round trip)": (lambda: host[0].item(), lambda: dev[0].item()),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "basic.json"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    results = []
    for name, (cpu_fn, mlu_fn) in cases().items():
        cpu_times = [timed(cpu_fn, lambda: None, args.iters) for _ in range(args.repeats)]
        mlu_times = [timed(mlu_fn, torch.mlu.synchronize, args.iters) for _ in range(args.repeats)]
        cpu_med, mlu_med = statistics.median(cpu_times), statistics.median(mlu_times)
        results.append({"case": name, "cpu_us": cpu_med * 1e6, "mlu_us": mlu_med * 1e6, "ratio": mlu_med / cpu_med,
                        "cpu_runs_us": [t * 1e6 for t in cpu_times], "mlu_runs_us": [t * 1e6 for t in mlu_times]})

    report = {
        "benchmark": "basic",
        "torch": torch.__version__,
        "torch_mlu": torch_mlu.__version__,
        "machine": platform.machine(),
        "cpu_threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "iters": args.iters,
        "results": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)

    width = max(len(r["case"]) for r in results)
    print(f"{'case':<{width}}  {'cpu us':>10}  {'mlu us':>10}  {'mlu/cpu':>8}")
    for r in results:
        print(f"{r['case']:<{width}}  {r['cpu_us']:>10.1f}  {r['mlu_us']:>10.1f}  {r['ratio']:>8.2f}")
    print(f"(medians of {args.repeats} runs x {args.iters} iterations; JSON in {args.out})")


if __name__ == "__main__":
    main()
