"""What the debugging and monitoring tools cost: mlu with each one on, against mlu without and the CPU.

Workloads, each timed in a fresh process per configuration (the sanitizer stays on for a process's life):
- tiny_op: `x.add_(1)` on 16 elements, microseconds per op (the launch path: the monitor's busy accounting and
  the fault-injection check sit on it);
- mlp_step: a training step of a 512 -> 1024 -> 1024 -> 10 MLP, batch 64, Adam (milliseconds).
Configurations: cpu; mlu; mlu with TORCH_MLU_MONITOR=0 (no monitor record); mlu with a fault-injection rule
that never fires (rules active: every launch consults them); mlu with the stream sanitizer.
Reports the median of --repeats runs per configuration, writes JSON and prints each time with its ratio to
plain mlu and to the CPU.

    python benchmarks/bench_debug_tools.py [--repeats 5] [--out benchmarks/results/debug_tools.json]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

WORKER = r"""
import json, sys, time, statistics
import torch, torch_mlu
device, iters = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)

def tiny():
    x = torch.ones(16, device=device)
    for _ in range(200):
        x.add_(1)
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        x.add_(1)
    sync()
    return (time.perf_counter() - start) / iters * 1e6

def sync():
    if device == "mlu":
        torch.mlu.synchronize()

def mlp():
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(device)
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(64, 512, device=device), torch.randint(0, 10, (64,), device=device)
    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    sync()
    steps = max(5, iters // 200)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - start) / steps * 1e3

print(json.dumps({"tiny_op_us": tiny(), "mlp_step_ms": mlp()}))
"""

CONFIGS = {
    "cpu": ("cpu", {}),
    "mlu": ("mlu", {}),
    "mlu, no monitor record": ("mlu", {"TORCH_MLU_MONITOR": "0"}),
    "mlu, fault rules active": ("mlu", {"TORCH_MLU_FAULT_INJECT": "kernel:never_launched"}),
    "mlu, stream sanitizer": ("mlu", {"TORCH_MLU_SANITIZER": "1"}),
}


def run(device, env, iters):
    result = subprocess.run([sys.executable, "-c", WORKER, device, str(iters)], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "debug_tools.json"))
    args = parser.parse_args()
    runs = {name: [] for name in CONFIGS}
    for _ in range(args.repeats):  # configurations interleaved, so drift of the host hits them alike
        for name, (device, env) in CONFIGS.items():
            iters = args.iters // 20 if "sanitizer" in name else args.iters
            runs[name].append(run(device, env, iters))
    medians = {name: {key: statistics.median(r[key] for r in values) for key in values[0]}
               for name, values in runs.items()}
    report = {"host": platform.processor() or platform.machine(), "cores": os.cpu_count(), "medians": medians,
              "runs": runs}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"{'configuration':28} {'tiny op us':>10} {'/mlu':>6} {'/cpu':>6} {'mlp step ms':>12} {'/mlu':>6} {'/cpu':>6}")
    base, cpu = medians["mlu"], medians["cpu"]
    for name, m in medians.items():
        print(f"{name:28} {m['tiny_op_us']:10.2f} {m['tiny_op_us'] / base['tiny_op_us']:6.2f} "
              f"{m['tiny_op_us'] / cpu['tiny_op_us']:6.2f} {m['mlp_step_ms']:12.2f} "
              f"{m['mlp_step_ms'] / base['mlp_step_ms']:6.2f} {m['mlp_step_ms'] / cpu['mlp_step_ms']:6.2f}")


if __name__ == "__main__":
    main()
