"""Convolutions on mlu against stock PyTorch on the CPU (same machine, same run).

Cases: the convolution layers of ResNet-18 and ResNet-50 on 64x64 images at batch 16 (the model suite's
CNN, benchmarks/bench_models.py) and on 224x224 images at batch 4, as `F.conv2d` forward (`fwd`) and forward
plus the input and weight gradients (`train`), float32 and bfloat16, with NCHW (`nchw`) or channels-last
(`cl`) operands on both devices.

Timing: one warm-up call per device, then batches of calls (mlu batches end with torch.mlu.synchronize()),
the median batch per device; --repeat R reports the median of R passes. ratio = cpu time / mlu time (above 1:
mlu faster), mlu with the convolution library it uses by default. Where the build links oneDNN, each case
also runs on mlu with our own kernels (`own us`) and with oneDNN (`dnnl us`): the side-by-side comparison the
library choice rests on (Note [oneDNN convolutions] in kernels/src/conv/conv_dnnl.h).

    python benchmarks/bench_conv.py [--cases 'r18_*'] [--repeat 3] [--min-time 0.3]
        [--out benchmarks/results/bench_conv.json]
"""
import argparse
import fnmatch
import json
import os
import platform
import statistics
import time

import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401 - registers the mlu device

# name: (batch, in channels, out channels, input side, kernel, stride)
LAYERS = {
    "r18_stem": (16, 3, 64, 64, 7, 2),
    "r18_l1_3x3": (16, 64, 64, 16, 3, 1),
    "r18_l2_3x3s2": (16, 64, 128, 16, 3, 2),
    "r18_l2_3x3": (16, 128, 128, 8, 3, 1),
    "r18_l2_down": (16, 64, 128, 16, 1, 2),
    "r18_l3_3x3": (16, 256, 256, 4, 3, 1),
    "r18_l4_3x3": (16, 512, 512, 2, 3, 1),
    "r50_l1_1x1": (4, 64, 256, 56, 1, 1),
    "r50_l1_3x3": (4, 64, 64, 56, 3, 1),
    "r50_l2_1x1": (4, 512, 128, 28, 1, 1),
    "r50_l3_3x3": (4, 256, 256, 14, 3, 1),
    "r50_l4_1x1": (4, 512, 2048, 7, 1, 1),
}

CASES = {}
for layer, shape in LAYERS.items():
    for dtype_name in ("f32", "bf16"):
        for layout in ("nchw", "cl"):
            for mode in ("fwd", "train"):
                CASES[f"{layer}_{dtype_name}_{layout}_{mode}"] = (shape, dtype_name, layout, mode)


def make_inputs(shape, dtype_name, layout, device):
    batch, cin, cout, side, kernel, stride = shape
    dtype = torch.float32 if dtype_name == "f32" else torch.bfloat16
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, cin, side, side, generator=g).to(dtype)
    w = (torch.randn(cout, cin, kernel, kernel, generator=g) / (cin * kernel * kernel) ** 0.5).to(dtype)
    if layout == "cl":
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    x, w = x.to(device).requires_grad_(), w.to(device).requires_grad_()
    return x, w, dict(stride=stride, padding=kernel // 2)


def call(case, device):
    shape, dtype_name, layout, mode = case
    x, w, kw = make_inputs(shape, dtype_name, layout, device)
    if mode == "fwd":
        def run():
            with torch.no_grad():
                return F.conv2d(x, w, **kw)
    else:
        grad = torch.ones_like(F.conv2d(x.detach(), w.detach(), **kw))

        def run():
            return torch.autograd.grad(F.conv2d(x, w, **kw), (x, w), grad)
    return run


def time_us(run, device, min_time):
    sync = torch.mlu.synchronize if device == "mlu" else (lambda: None)
    run()
    sync()
    n, times, spent = 1, [], 0.0
    while spent < min_time or len(times) < 3:
        start = time.perf_counter()
        for _ in range(n):
            run()
        sync()
        elapsed = time.perf_counter() - start
        spent += elapsed
        times.append(elapsed / n * 1e6)
        if elapsed < 0.05:
            n *= 2
    return statistics.median(times)


def run_case(name, case, min_time, libraries):
    result = {"case": name, "cpu_us": time_us(call(case, "cpu"), "cpu", min_time)}
    default = torch_mlu._C._kernel_config()["conv_library"]
    for library in libraries:
        torch_mlu._C._set_conv_library(library)
        try:
            result[f"{library}_us"] = time_us(call(case, "mlu"), "mlu", min_time)
        finally:
            torch_mlu._C._set_conv_library(default)
    result["mlu_us"] = result[f"{default}_us"]
    result["ratio"] = result["cpu_us"] / result["mlu_us"]
    return result


def parse_args(doc, default_out):
    """The options every layer benchmark takes (bench_conv.py, bench_norms.py)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="*", help="comma-separated glob patterns over the case names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per device, library and case")
    parser.add_argument("--out", default=default_out)
    return parser.parse_args()


def run_and_report(args, cases, run_case, columns, config=None):
    """Runs the selected cases --repeat times; writes the medians as JSON and prints the table."""
    names = [n for n in cases if any(fnmatch.fnmatch(n, p) for p in args.cases.split(","))]
    passes = [[run_case(n, cases[n]) for n in names] for _ in range(args.repeat)]
    results = []
    for i, name in enumerate(names):
        runs = [p[i] for p in passes]
        case = dict(runs[0])
        for key in ["cpu_us", "mlu_us", "ratio"] + columns:
            case[key] = round(statistics.median(r[key] for r in runs), 3)
        case["pass_ratios"] = [round(r["ratio"], 3) for r in runs]
        results.append(case)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                   "kernels": config, "threads": torch.get_num_threads(), "repeat": args.repeat,
                   "cases": results}, f, indent=1)
    print(f"{'case':36s} {'cpu us':>11s} {'mlu us':>11s} {'ratio':>6s}" + "".join(f" {c[:-3] + ' us':>11s}"
                                                                              for c in columns))
    for c in results:
        print(f"{c['case']:36s} {c['cpu_us']:11.1f} {c['mlu_us']:11.1f} {c['ratio']:6.2f}"
              + "".join(f" {c[col]:11.1f}" for col in columns))
    ratios = [c["ratio"] for c in results]
    if ratios:
        print(f"geometric mean ratio {statistics.geometric_mean(ratios):.2f}, min {min(ratios):.2f}")
    print(f"(ratio = cpu time / mlu time; medians of batches, median of {args.repeat} pass(es); written to {args.out})")


def main():
    args = parse_args(__doc__, "benchmarks/results/bench_conv.json")
    config = dict(torch_mlu._C._kernel_config())
    libraries = ["own", "dnnl"] if config["dnnl_linked"] else ["own"]
    print(f"mlu convolutions: {config['conv_library']}")
    run_and_report(args, CASES, lambda name, case: run_case(name, case, args.min_time, libraries),
                   [f"{lib}_us" for lib in libraries], config)


if __name__ == "__main__":
    main()
