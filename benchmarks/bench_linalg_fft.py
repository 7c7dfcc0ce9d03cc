"""Linear algebra, FFT and complex arithmetic on mlu against the stock CPU, in the same run (issue 33).

Batched factorizations and solvers at the sizes of small scientific workloads and of a speech front end: many
small matrices (the batch split over the device's compute cores, one LAPACK call per matrix, the library's own
threading off) and a few larger ones, then FFTs, stft/istft and complex arithmetic. Each device is timed in a child
process of its own (Note [One device per process] below), --repeat passes of --iters calls per case; the figure is
the median per call. Ratio = cpu time / mlu time (above 1: mlu is faster);
the target is at least 1.0. Results: docs/bench_linalg_fft.md.

    python benchmarks/bench_linalg_fft.py [--repeat 7] [--iters 20] [--out benchmarks/results/bench_linalg_fft.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

import torch_mlu  # noqa: F401


def spd(batch, n, dtype):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(batch, n, n, dtype=dtype, generator=g)
    return a @ a.mT + n * torch.eye(n, dtype=dtype)


def general(shape, dtype):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(1))


def cases():
    """(name, fn, inputs) with CPU inputs; fn(*inputs) is timed."""
    out = []
    for batch, n in [(256, 8), (64, 32), (8, 128), (1, 512)]:
        a, b = spd(batch, n, torch.float32), general((batch, n, 4), torch.float32)
        size = f"{batch}x{n}x{n}"
        out += [
            (f"inv {size}", torch.linalg.inv, (a,)),
            (f"solve {size} (4 rhs)", torch.linalg.solve, (a, b)),
            (f"cholesky {size}", torch.linalg.cholesky, (a,)),
            (f"eigh {size}", torch.linalg.eigh, (a,)),
            (f"svd {size}", lambda x: torch.linalg.svd(x, full_matrices=False), (a,)),
            (f"qr {size}", torch.linalg.qr, (a,)),
            (f"det {size}", torch.linalg.det, (a,)),
        ]
    # A speech front end: one second of 16 kHz audio (and a batch of 16), 25 ms window, 10 ms hop; the rfft
    # sizes of the issue (64 x 16384) and its inverse; 2-D transforms of small images; complex products.
    audio, window = general((16000,), torch.float32), torch.hann_window(400)
    batch = general((16, 16000), torch.float32)
    signal = general((64, 16384), torch.float32)
    spectrum = torch.fft.rfft(signal)
    images = general((32, 64, 64), torch.complex64)
    stft = lambda x, w: torch.stft(x, 400, 160, window=w, return_complex=True)  # noqa: E731
    out += [
        ("rfft 64x16384", torch.fft.rfft, (signal,)),
        ("irfft 64x8193", torch.fft.irfft, (spectrum,)),
        ("fft c64 64x16384", torch.fft.fft, (spectrum[:, :-1].contiguous(),)),
        ("fft2 c64 32x64x64", torch.fft.fft2, (images,)),
        ("stft 1s 16kHz", stft, (audio, window)),
        ("stft 16x1s 16kHz", stft, (batch, window)),
        ("stft+log-power 16x1s", lambda x, w: torch.log(stft(x, w).abs().pow(2) + 1e-6), (batch, window)),
        ("istft 16x1s 16kHz", lambda s, w: torch.istft(s, 400, 160, window=w, length=16000),
         (torch.stft(batch, 400, 160, window=window, return_complex=True), window)),
        ("mm c64 256", torch.mm, (general((256, 256), torch.complex64), general((256, 256), torch.complex64))),
        ("mul c64 1M", torch.mul, (general((1 << 20,), torch.complex64), general((1 << 20,), torch.complex64))),
        ("abs c64 1M", torch.abs, (general((1 << 20,), torch.complex64),)),
    ]
    return out


def synchronize(device):
    if device == "mlu":
        torch.mlu.synchronize()


def time_call(fn, inputs, device, iters):
    start = time.perf_counter()
    for _ in range(iters):
        fn(*inputs)
    synchronize(device)
    return (time.perf_counter() - start) / iters


def time_device(device, name_filter, repeat, iters):
    """{case: (median seconds per call, ops that fell back)} for every case on `device` alone."""
    results = {}
    for name, fn, cpu_inputs in cases():
        if name_filter not in name:
            continue
        inputs = tuple(t.to(device) for t in cpu_inputs)
        torch_mlu.reset_fallback_report()
        fn(*inputs)  # warm-up (plans, workspaces, caches)
        synchronize(device)
        fell_back = sorted(torch_mlu.fallback_report())
        times = [time_call(fn, inputs, device, iters) for _ in range(repeat)]
        results[name] = (statistics.median(times), fell_back)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--filter", default="", help="only cases whose name contains this")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_linalg_fft.json"))
    p.add_argument("--device", choices=["cpu", "mlu"], help=argparse.SUPPRESS)  # a child's one device
    args = p.parse_args()
    if args.device:
        json.dump(time_device(args.device, args.filter, args.repeat, args.iters), sys.stdout)
        return
    # Note [One device per process]: each device is timed in a child process of its own. Timed in one process,
    # alternating, the CPU's OpenMP workers spin (GOMP's active wait) after every CPU block and take the cores from
    # the device threads during the mlu block that follows (on 2 cores, rfft 64x16384 read 0.62x alternating
    # and 1.10x in separate phases).
    # The mlu child builds its inputs on the CPU too (stock PyTorch's OpenMP matmuls); with GOMP's default
    # active wait, those workers then spin and took the cores from the first mlu cases (inv / solve / cholesky
    # 256x8x8 read 0.66-0.90x first in the run, 0.94-1.12x run alone). The mlu child's OpenMP waits passively:
    # it times no CPU kernels.
    measured = {}
    for device in ("cpu", "mlu"):
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE") if device == "mlu" else None
        child = subprocess.run([sys.executable, __file__, "--device", device, "--filter", args.filter, "--repeat",
                                str(args.repeat), "--iters", str(args.iters)], capture_output=True, text=True,
                               check=True, env=env)
        measured[device] = json.loads(child.stdout)
    rows = []
    print(f"{'case':32} {'cpu us':>10} {'mlu us':>10} {'ratio':>7}")
    for name in measured["cpu"]:
        cpu_us, mlu_us = 1e6 * measured["cpu"][name][0], 1e6 * measured["mlu"][name][0]
        fell_back = measured["mlu"][name][1]
        rows.append(dict(case=name, cpu_us=cpu_us, mlu_us=mlu_us, ratio=cpu_us / mlu_us, fell_back=fell_back))
        note = f"  (fallback: {', '.join(fell_back)})" if fell_back else ""
        print(f"{name:32} {cpu_us:10.1f} {mlu_us:10.1f} {cpu_us / mlu_us:7.2f}{note}")
    ratios = [r["ratio"] for r in rows]
    if ratios:
        print(f"geometric mean ratio {statistics.geometric_mean(ratios):.2f} over {len(ratios)} cases; "
              f"min {min(ratios):.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(host=platform.processor() or platform.machine(), threads=torch.get_num_threads(),
                       repeat=args.repeat, iters=args.iters, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
