"""torch.compile on mlu against eager mlu and against stock PyTorch on the CPU (same process, same data).

Results and the targets they are measured against: docs/compile.md (Performance).

For each model of the model suite (benchmarks/bench_models.py: mlp, cnn, gpt), training steps per second
(forward, loss, backward, optimizer step, gradients reset) of four trainers built from one initial model:
eager mlu, compiled mlu, eager cpu, compiled cpu (Inductor's CPU backend). "Compiled" means
torch.compile(model) (AOTAutograd: forward and backward) and torch.compile(optimizer.step), the default
Inductor backend, mode "default". Plus each device's compile time: the first compiled step (tracing, Inductor,
C++ compiles into a fresh cache directory, and the step itself) minus one steady compiled step.

Each measurement runs batches of steps (one synchronize per batch) for --min-time seconds; passes alternate
the four trainers; --repeat R reports the median of R passes (compile times come from the first pass).

    python benchmarks/bench_compile.py [--models gpt] [--repeat 3] [--min-time 2]
        [--out benchmarks/results/bench_compile.json]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

# A fresh Inductor cache, so compile times include the C++ compiles (set before Inductor is imported).
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_compile_")

import torch  # noqa: E402

import torch_mlu  # noqa: E402,F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402
from bench_models import MODELS, synchronize  # noqa: E402


class Trainer(bench_models.Trainer):
    """bench_models' trainer (float32), eager or compiled; step() queues one training step."""

    def __init__(self, model, make_opt, batch, device, compiled):
        super().__init__(model, make_opt, batch, device, autocast_dtype=None)
        self.forward = torch.compile(self.model) if compiled else self.model
        self.opt_step = torch.compile(self.opt.step) if compiled else self.opt.step

    def step(self):
        loss = self.forward(*self.batch)
        loss.backward()
        self.opt_step()
        self.opt.zero_grad(set_to_none=True)
        return loss

    def timed_step(self):
        synchronize(self.device)
        start = time.perf_counter()
        loss = self.step().item()
        synchronize(self.device)
        return time.perf_counter() - start, loss


VARIANTS = (("mlu", False), ("mlu", True), ("cpu", False), ("cpu", True))


def variant_name(device, compiled):
    return f"{'compiled' if compiled else 'eager'}_{device}"


def warm_compiler():
    """Builds Inductor's precompiled C++ header once, so neither device's compile time pays for it."""
    torch.compile(lambda t: t * 2 + 1)(torch.ones(8))


def measure_model(name, min_time, repeat):
    torch.manual_seed(0)
    model, make_opt, batch = MODELS[name]()
    trainers, first_loss, compile_s = {}, {}, {}
    for device, compiled in VARIANTS:
        key = variant_name(device, compiled)
        trainer = Trainer(model, make_opt, batch, device, compiled)
        first, first_loss[key] = trainer.timed_step()
        steady = min(trainer.timed_step()[0] for _ in range(2))
        if compiled:
            compile_s[device] = first - steady
        trainers[key] = trainer
    passes = []
    for _ in range(repeat):
        passes.append({key: t.steps_per_second(min_time) for key, t in trainers.items()})
    rates = {key: statistics.median(p[key] for p in passes) for key in trainers}
    return {
        "model": name,
        "steps_per_s": {k: round(v, 3) for k, v in rates.items()},
        "pass_rates": passes,
        "compiled_mlu_over_eager_mlu": round(rates["compiled_mlu"] / rates["eager_mlu"], 3),
        "compiled_mlu_over_compiled_cpu": round(rates["compiled_mlu"] / rates["compiled_cpu"], 3),
        "eager_mlu_over_eager_cpu": round(rates["eager_mlu"] / rates["eager_cpu"], 3),
        "compile_s": {k: round(v, 2) for k, v in compile_s.items()},
        "compile_mlu_over_cpu": round(compile_s["mlu"] / compile_s["cpu"], 3),
        "first_loss": first_loss,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,gpt", help="comma-separated names of bench_models' models")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds per trainer and pass")
    parser.add_argument("--out", default="benchmarks/results/bench_compile.json")
    args = parser.parse_args()
    warm_compiler()
    results = [measure_model(name, args.min_time, args.repeat) for name in args.models.split(",")]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                   "threads": torch.get_num_threads(), "repeat": args.repeat,
                   "fallback": torch_mlu.fallback_report(), "models": results}, f, indent=1)
    print(f"{'model':6s} {'eager mlu':>10s} {'compiled mlu':>13s} {'eager cpu':>10s} {'compiled cpu':>13s}"
          f" {'c.mlu/e.mlu':>12s} {'c.mlu/c.cpu':>12s} {'compile s mlu/cpu':>18s}")
    for r in results:
        s = r["steps_per_s"]
        print(f"{r['model']:6s} {s['eager_mlu']:10.2f} {s['compiled_mlu']:13.2f} {s['eager_cpu']:10.2f}"
              f" {s['compiled_cpu']:13.2f} {r['compiled_mlu_over_eager_mlu']:12.2f}"
              f" {r['compiled_mlu_over_compiled_cpu']:12.2f}"
              f" {r['compile_s']['mlu']:8.1f}/{r['compile_s']['cpu']:.1f} ({r['compile_mlu_over_cpu']:.2f})")
    print("steps/s; c. = compiled, e. = eager; ratios above 1: the first is faster (compile: slower)")


if __name__ == "__main__":
    main()
