"""Training kernels on mlu against stock PyTorch on the CPU (same machine, same run); results in docs/bench_kernels.md.

- conv2d at ResNet-18 layer shapes, batch 8: forward, and forward + backward (input and weight
  gradients), contiguous and channels_last;
- layer_norm, softmax and cross_entropy at GPT-mini shapes (batch 8 x 256 tokens, width 256);
- scaled_dot_product_attention at (batch 4, heads 8, seq 512 / 2048, dim 64), forward and forward +
  backward, with the peak memory each device allocates for it (mlu: torch.mlu.max_memory_allocated;
  the CPU's is not tracked by PyTorch, so its column is empty).

Timing as in bench_gemm.py (median of batches, mlu batches end with torch.mlu.synchronize(); --repeat R
reports the median of R passes). ratio = cpu time / mlu time (above 1: mlu faster).

    python benchmarks/bench_kernels.py [--cases 'conv*'] [--repeat 3] [--min-time 0.3]
        [--out benchmarks/results/bench_kernels.json]
"""
import argparse
import fnmatch
import json
import os
import platform
import statistics
import sys

import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401 - registers the mlu device

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gemm import measure  # noqa: E402 - the same timing loop


def conv_case(c_in, c_out, hw, k, stride, backward, channels_last):
    def build():
        x = torch.randn(8, c_in, hw, hw)
        w = torch.randn(c_out, c_in, k, k) * 0.05
        if channels_last:
            x = x.to(memory_format=torch.channels_last)
            w = w.to(memory_format=torch.channels_last)
        if not backward:
            return (x, w), lambda x, w: F.conv2d(x, w, padding=k // 2, stride=stride)
        x.requires_grad_()
        w.requires_grad_()

        def step(x, w):
            y = F.conv2d(x, w, padding=k // 2, stride=stride)
            x.grad = w.grad = None
            y.backward(torch.ones_like(y))
        return (x, w), step
    return build


def leaf(t):
    return t.detach().requires_grad_()


def sdpa_case(seq, backward):
    def build():
        q, k, v = (torch.randn(4, 8, seq, 64) for _ in range(3))
        if not backward:
            return (q, k, v), lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        q, k, v = (t.requires_grad_() for t in (q, k, v))

        def step(q, k, v):
            q.grad = k.grad = v.grad = None
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        return (q, k, v), step
    return build


CASES = {}
for name, (c_in, c_out, hw, k, s) in {"conv1_7x7": (3, 64, 224, 7, 2), "layer1_3x3": (64, 64, 56, 3, 1),
                                      "layer2_3x3": (128, 128, 28, 3, 1), "layer3_3x3": (256, 256, 14, 3, 1),
                                      "layer4_3x3": (512, 512, 7, 3, 1), "down2_1x1": (64, 128, 56, 1, 2)}.items():
    for backward in (False, True):
        for cl in (False, True):
            CASES[f"conv_{name}_{'fwdbwd' if backward else 'fwd'}{'_cl' if cl else ''}"] = conv_case(
                c_in, c_out, hw, k, s, backward, cl)
CASES["layer_norm_2048x256"] = lambda: ((torch.randn(2048, 256), torch.randn(256), torch.randn(256)),
                                        lambda x, w, b: F.layer_norm(x, [256], w, b))
CASES["softmax_16384x256"] = lambda: ((torch.randn(16384, 256),), lambda x: torch.softmax(x, -1))
CASES["cross_entropy_2048x8192"] = lambda: ((torch.randn(2048, 8192), torch.randint(0, 8192, (2048,))),
                                            lambda x, t: F.cross_entropy(x, t))
for seq in (512, 2048):
    CASES[f"sdpa_4x8x{seq}x64_fwd"] = sdpa_case(seq, False)
    CASES[f"sdpa_4x8x{seq}x64_fwdbwd"] = sdpa_case(seq, True)


def to_mlu(t):
    if not isinstance(t, torch.Tensor):
        return t
    m = t.detach().to("mlu")
    if t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous():
        m = m.contiguous(memory_format=torch.channels_last)
    return m.requires_grad_(t.requires_grad)


def run_case(name, build, min_time):
    torch.manual_seed(0)
    args, fn = build()
    cpu = measure(fn, args, lambda: None, min_time, min_reps=3)
    margs = tuple(to_mlu(a) for a in args)
    torch_mlu.reset_fallback_report()
    torch.mlu.synchronize()
    torch.mlu.reset_peak_memory_stats()
    base = torch.mlu.memory_allocated()
    fn(*margs)
    torch.mlu.synchronize()
    peak = torch.mlu.max_memory_allocated() - base
    fallback = torch_mlu.fallback_report()
    mlu = measure(fn, margs, torch.mlu.synchronize, min_time, min_reps=3)
    return {"case": name, "cpu_ms": cpu * 1e3, "mlu_ms": mlu * 1e3, "ratio": cpu / mlu,
            "mlu_peak_mb": peak / 2 ** 20, "native": not fallback, "fallback": fallback}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="*", help="comma-separated glob patterns over the case names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per device and case")
    parser.add_argument("--out", default="benchmarks/results/bench_kernels.json")
    args = parser.parse_args()
    names = [n for n in CASES if any(fnmatch.fnmatch(n, p) for p in args.cases.split(","))]
    passes = [[run_case(n, CASES[n], args.min_time) for n in names] for _ in range(args.repeat)]
    results = []
    for i, name in enumerate(names):
        runs = [p[i] for p in passes]
        case = dict(runs[0])
        for key in ("cpu_ms", "mlu_ms", "ratio", "mlu_peak_mb"):
            case[key] = round(statistics.median(r[key] for r in runs), 4)
        case["pass_ratios"] = [round(r["ratio"], 3) for r in runs]
        results.append(case)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                   "threads": torch.get_num_threads(), "repeat": args.repeat, "cases": results}, f, indent=1)
    print(f"{'case':34s} {'cpu ms':>10s} {'mlu ms':>10s} {'ratio':>6s} {'mlu peak MB':>12s}  fallback")
    for c in results:
        fb = ", ".join(f"{k.removeprefix('aten::')} x{v}" for k, v in c["fallback"].items())
        print(f"{c['case']:34s} {c['cpu_ms']:10.2f} {c['mlu_ms']:10.2f} {c['ratio']:6.2f} {c['mlu_peak_mb']:12.1f}  {fb}")
    geo = statistics.geometric_mean([c["ratio"] for c in results]) if results else float("nan")
    print(f"geomean cpu/mlu over {len(results)} cases: {geo:.3f}; medians of batches, median of {args.repeat} "
          f"pass(es); written to {args.out}")


if __name__ == "__main__":
    main()
