"""Matrix products on mlu against stock PyTorch on the CPU (same machine, same run).

Cases (the shapes the GEMM targets in docs/bench_gemm.md are stated for): torch.mm on square float32 and
bfloat16 matrices of 256..4096,
a batch of 64 small 64x64 products (torch.bmm), and the shapes a transformer and an MLP
training step issue (linear forward/backward as mm with transposed operands, mv).

Timing as in bench_ops.py: one warm-up call per device, then batches of k calls (mlu batches end
with torch.mlu.synchronize()), the median batch per device; --repeat R runs the list R times and
reports the median of the passes. The devices are timed one after the other. GFLOP/s = 2 m n k
(times the batch) / time. ratio = cpu time / mlu time (above 1: mlu faster), mlu with the library its
products use by default on this host (Note [Which library on which host] in
kernels/src/gemm/gemm_vendor.cpp, Note [oneDNN products] in gemm_dnnl.h). Each case also runs on mlu with
every library the build links: our own kernel (`own us`), oneMKL (`mkl us`), oneDNN (`dnnl us`, which takes
16-bit products only: its float32 column is our kernel's), so the table is the side-by-side comparison the
library choice rests on.

The machine's peak comes from build/kernels/mlu_gemm_peak (kernels/tools/gemm_peak.cpp): the
float32 micro-kernel on panels resident in L1 (the FMA units' rate), and where the CPU has AMX a
chain of TDPBF16PS on resident tiles, one thread and all threads, best of three. "% peak" is the
mlu GFLOP/s over the all-threads peak of the case's dtype (bfloat16 against AMX where present).

    python benchmarks/bench_gemm.py [--cases 'mm_f32_*'] [--repeat 3] [--min-time 0.5]
        [--out benchmarks/results/bench_gemm.json]
"""
import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import time

from host_isa import add_isa_argument, force_isa_from_argv, isa_label, isa_report

force_isa_from_argv()  # before torch loads: the caps are read at start-up

import torch  # noqa: E402

import torch_mlu  # noqa: E402,F401 - registers the mlu device


def square(n, dtype):
    return lambda: ((torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)), torch.mm, 2 * n ** 3)


def shaped(fn, shapes, flops, dtype=torch.float32):
    def build():
        return tuple(s().to(dtype) if callable(s) else torch.randn(*s).to(dtype) for s in shapes), fn, flops
    return build


CASES = {}
for n in (256, 512, 1024, 2048, 4096):
    CASES[f"mm_f32_{n}"] = square(n, torch.float32)
for n in (256, 512, 1024, 2048, 4096):
    CASES[f"mm_bf16_{n}"] = square(n, torch.bfloat16)
CASES["bmm_f32_64x64x64x64"] = shaped(torch.bmm, [(64, 64, 64), (64, 64, 64)], 2 * 64 ** 4)
CASES["bmm_bf16_64x64x64x64"] = shaped(torch.bmm, [(64, 64, 64), (64, 64, 64)], 2 * 64 ** 4, torch.bfloat16)
# A GPT-mini layer (batch 8 x seq 256 tokens, width 256, MLP 1024): forward, input and weight gradients.
CASES["linear_fwd_2048x256x1024"] = shaped(lambda x, w: torch.nn.functional.linear(x, w),
                                           [(2048, 256), (1024, 256)], 2 * 2048 * 256 * 1024)
CASES["linear_dgrad_2048x1024x256"] = shaped(torch.mm, [(2048, 1024), (1024, 256)], 2 * 2048 * 1024 * 256)
CASES["linear_wgrad_1024x2048x256"] = shaped(lambda g, x: torch.mm(g.t(), x), [(2048, 1024), (2048, 256)],
                                             2 * 2048 * 1024 * 256)
CASES["attn_scores_bmm_32x256x64x256"] = shaped(lambda q, k: torch.bmm(q, k.transpose(1, 2)),
                                                [(32, 256, 64), (32, 256, 64)], 2 * 32 * 256 * 64 * 256)
# The BERT-style encoder of bench_models.py (batch 64 x 32 tokens, width 384, feed-forward 1536), the MLP's
# skinny batch (128 rows; weight gradient of depth 128), a deep K, and the GPT's products in bfloat16.
for _dt, _tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    CASES[f"bert_qkv_{_tag}_2048x384x1152"] = shaped(lambda x, w: torch.nn.functional.linear(x, w),
                                                     [(2048, 384), (1152, 384)], 2 * 2048 * 384 * 1152, _dt)
    CASES[f"bert_down_{_tag}_2048x1536x384"] = shaped(lambda x, w: torch.nn.functional.linear(x, w),
                                                      [(2048, 1536), (384, 1536)], 2 * 2048 * 1536 * 384, _dt)
    CASES[f"mlp_fwd_{_tag}_128x1024x2048"] = shaped(lambda x, w: torch.nn.functional.linear(x, w),
                                                    [(128, 1024), (2048, 1024)], 2 * 128 * 1024 * 2048, _dt)
    CASES[f"mlp_wgrad_{_tag}_2048x128x1024"] = shaped(lambda g, x: torch.mm(g.t(), x), [(128, 2048), (128, 1024)],
                                                      2 * 2048 * 128 * 1024, _dt)
    CASES[f"deep_k_{_tag}_256x4096x256"] = shaped(torch.mm, [(256, 4096), (4096, 256)], 2 * 256 * 4096 * 256, _dt)
CASES["linear_fwd_bf16_2048x256x1024"] = shaped(lambda x, w: torch.nn.functional.linear(x, w),
                                                [(2048, 256), (1024, 256)], 2 * 2048 * 256 * 1024, torch.bfloat16)
CASES["linear_wgrad_bf16_1024x2048x256"] = shaped(lambda g, x: torch.mm(g.t(), x), [(2048, 1024), (2048, 256)],
                                                  2 * 2048 * 1024 * 256, torch.bfloat16)
CASES["mv_f32_4096x4096"] = shaped(torch.mv, [(4096, 4096), (4096,)], 2 * 4096 * 4096)


def measure(fn, args, sync, min_time, min_reps=5):
    fn(*args)
    sync()
    start = time.perf_counter()
    fn(*args)
    sync()
    single = max(time.perf_counter() - start, 1e-7)
    k = max(1, min(10000, int(min_time / min_reps / single)))
    runs = []
    begin = time.perf_counter()
    while len(runs) < min_reps or (time.perf_counter() - begin < min_time and len(runs) < 30):
        t = time.perf_counter()
        for _ in range(k):
            fn(*args)
        sync()
        runs.append((time.perf_counter() - t) / k)
    return statistics.median(runs)


def libraries():
    """The GEMM libraries this build can run products on (mlu_kernels/gemm.h GemmLibrary)."""
    config = torch_mlu._C._kernel_config()
    return ["own"] + [lib for lib in ("mkl", "dnnl") if config.get(f"{lib}_linked")]


def run_case(name, build, min_time):
    torch.manual_seed(0)
    args, fn, flops = build()
    cpu = measure(fn, args, lambda: None, min_time)
    margs = tuple(a.to("mlu") for a in args)
    torch_mlu.reset_fallback_report()
    fn(*margs)
    torch.mlu.synchronize()
    fallback = torch_mlu.fallback_report()
    mlu = measure(fn, margs, torch.mlu.synchronize, min_time)
    result = {"case": name, "cpu_us": cpu * 1e6, "mlu_us": mlu * 1e6, "ratio": cpu / mlu,
              "cpu_gflops": flops / cpu / 1e9, "mlu_gflops": flops / mlu / 1e9, "native": not fallback}
    default = torch_mlu._C._kernel_config()["gemm_library"]
    for library in libraries():
        if library == default:
            result[f"{library}_us"] = mlu * 1e6
            continue
        torch_mlu._C._set_gemm_library(library)
        try:
            result[f"{library}_us"] = measure(fn, margs, torch.mlu.synchronize, min_time) * 1e6
        finally:
            torch_mlu._C._set_gemm_library(default)
    return result


def machine_peak():
    """The peak probe's JSON (see the module docstring), or {} when it is not built."""
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "kernels", "mlu_gemm_peak")
    if not os.path.exists(probe):
        return {}
    out = subprocess.run([probe, "0.3"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def percent_of_peak(case, peak):
    key = "amx_bf16_gflops_all" if "bf16" in case["case"] and "amx_bf16_gflops_all" in peak else "float32_gflops_all"
    if "f64" in case["case"] or key not in peak or ("bf16" in case["case"] and key == "float32_gflops_all"):
        return None
    return 100.0 * case["mlu_gflops"] / peak[key]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="*", help="comma-separated glob patterns over the case names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per device and case")
    parser.add_argument("--out", default="benchmarks/results/bench_gemm.json")
    add_isa_argument(parser)
    args = parser.parse_args()
    isa = isa_report()
    print(f"instruction sets: {isa_label(isa)}; mlu kernels {isa['mlu_kernels_isa']}"
          f"{' + AMX' if isa['mlu_amx'] else ''}, ATen {isa['aten_cpu_capability']}", flush=True)
    patterns = args.cases.split(",")
    names = [n for n in CASES if any(fnmatch.fnmatch(n, p) for p in patterns)]
    peak = machine_peak()
    passes = [[run_case(n, CASES[n], args.min_time) for n in names] for _ in range(args.repeat)]
    results = []
    for i, name in enumerate(names):
        runs = [p[i] for p in passes]
        case = dict(runs[0])
        for key in ("cpu_us", "mlu_us", "ratio", "cpu_gflops", "mlu_gflops", "own_us", "mkl_us", "dnnl_us"):
            if key in case:
                case[key] = round(statistics.median(r[key] for r in runs), 4)
        case["pass_ratios"] = [round(r["ratio"], 3) for r in runs]
        share = percent_of_peak(case, peak)
        case["mlu_percent_of_peak"] = None if share is None else round(share, 1)
        results.append(case)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(), "isa": isa,
                   "kernels": dict(torch_mlu._C._kernel_config()), "threads": torch.get_num_threads(),
                   "repeat": args.repeat, "peak": peak, "cases": results}, f, indent=1)
    if peak:
        print("peak (GFLOP/s, mlu_gemm_peak): " + ", ".join(f"{k} {v}" for k, v in peak.items()))
    print(f"mlu products: {torch_mlu._C._kernel_config()['gemm_library']}")
    libs = libraries()
    print(f"{'case':34s} {'cpu us':>11s} {'mlu us':>11s} {'cpu GF/s':>9s} {'mlu GF/s':>9s} {'% peak':>7s} {'ratio':>6s}"
          + "".join(f" {lib + ' us':>11s}" for lib in libs))
    for c in results:
        share = "" if c["mlu_percent_of_peak"] is None else f"{c['mlu_percent_of_peak']:.0f}%"
        per_library = "".join(f" {c[lib + '_us']:11.1f}" for lib in libs)
        print(f"{c['case']:34s} {c['cpu_us']:11.1f} {c['mlu_us']:11.1f} {c['cpu_gflops']:9.1f} "
              f"{c['mlu_gflops']:9.1f} {share:>7s} {c['ratio']:6.2f}{per_library}{'' if c['native'] else '  (fallback)'}")
    print(f"(ratio = cpu time / mlu time; medians of batches, median of {args.repeat} pass(es); written to {args.out})")


if __name__ == "__main__":
    main()
