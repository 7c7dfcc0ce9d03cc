"""Graph replay on mlu against eager mlu, with stock PyTorch on the CPU alongside (same process, same data).

Results and the targets they are measured against: docs/graphs.md.

Two steps, each run three ways: eager on the CPU, eager on mlu, and on mlu captured once into a
torch.mlu.MLUGraph and replayed:
- tiny: 200 element-wise ops on a 64-element tensor (the host-bound extreme: Python, dispatcher, launch);
- gpt: one GPT-mini training step (bench_models' model: 4 layers of 256, sequence 256, batch 8; forward, loss,
  backward, AdamW with capturable=True and foreach on mlu, as a captured step needs);
- gpt_small: the same step for a small GPT (2 layers of 64, sequence 32, batch 4), where the host's per-op cost
  is a large share of the step.
For each: "host us" is the host time to issue one step (synchronized before, not counting the wait after), the
median over steps; "steps/s" runs batches of steps with one synchronize per batch, median batch rate.
--repeat R reports the median of R passes.

    python benchmarks/bench_graphs.py [--cases tiny,gpt] [--repeat 3] [--min-time 1]
        [--out benchmarks/results/bench_graphs.json]
"""
import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time

import torch

import torch_mlu  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import MODELS, steps_per_second, synchronize  # noqa: E402
from gpt import GPT, GPTConfig  # noqa: E402  (bench_models put examples/ on the path)


class GPTLoss(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gpt = GPT(config)

    def forward(self, x, y):
        return self.gpt(x, y)[1]


class TinySteps:
    """200 small element-wise ops; step() returns the result."""

    def __init__(self, device):
        self.x = torch.ones(64, device=device)

    def step(self):
        y = self.x
        for _ in range(100):
            y = y * 1.0001
            y = y + 0.0001
        return y


class GptSteps:
    """One GPT-mini training step; step() returns the loss."""

    def __init__(self, device, model, batch):
        self.model = copy.deepcopy(model).to(device)
        self.batch = tuple(t.to(device) for t in batch)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, foreach=True, capturable=device == "mlu")

    def step(self):
        self.opt.zero_grad(set_to_none=False)
        loss = self.model(*self.batch)
        loss.backward()
        self.opt.step()
        return loss


class Replayed:
    """A steps object captured once (after two eager warm-up steps on the capture stream) and replayed."""

    def __init__(self, steps):
        self.steps = steps
        stream = torch.mlu.Stream()
        stream.wait_stream(torch.mlu.current_stream())
        with torch.mlu.stream(stream):
            for _ in range(2):
                steps.step()
        torch.mlu.current_stream().wait_stream(stream)
        self.graph = torch.mlu.MLUGraph()
        with torch.mlu.graph(self.graph, stream=stream):
            self.out = steps.step()

    def step(self):
        self.graph.replay()
        return self.out


def host_us(runner, device, steps=20):
    samples = []
    for _ in range(steps):
        synchronize(device)
        start = time.perf_counter()
        runner.step()
        samples.append(time.perf_counter() - start)
        synchronize(device)
    return statistics.median(samples) * 1e6


def make_runners(case):
    if case == "tiny":
        return {"eager_cpu": TinySteps("cpu"), "eager_mlu": TinySteps("mlu"), "replay_mlu": Replayed(TinySteps("mlu"))}
    torch.manual_seed(0)
    if case == "gpt":
        model, _, batch = MODELS["gpt"]()
    else:
        model = GPTLoss(GPTConfig(vocab_size=256, block_size=32, n_layer=2, n_head=4, n_embd=64))
        batch = (torch.randint(0, 256, (4, 32)), torch.randint(0, 256, (4, 32)))
    return {"eager_cpu": GptSteps("cpu", model, batch), "eager_mlu": GptSteps("mlu", model, batch),
            "replay_mlu": Replayed(GptSteps("mlu", model, batch))}


def measure(case, min_time, repeat):
    runners = make_runners(case)
    for name, runner in runners.items():
        runner.step()  # warm-up: caches, allocator
    passes = []
    for _ in range(repeat):
        result = {}
        for name, runner in runners.items():
            device = "cpu" if name.endswith("cpu") else "mlu"
            result[name] = {"host_us": host_us(runner, device), "steps_per_s": steps_per_second(runner.step, device, min_time)}
        passes.append(result)
    med = {name: {k: statistics.median(p[name][k] for p in passes) for k in ("host_us", "steps_per_s")}
           for name in runners}
    return {
        "case": case,
        "median": med,
        "passes": passes,
        "host_eager_over_replay": med["eager_mlu"]["host_us"] / med["replay_mlu"]["host_us"],
        "replay_over_eager_mlu_speed": med["replay_mlu"]["steps_per_s"] / med["eager_mlu"]["steps_per_s"],
        "replay_mlu_over_eager_cpu_speed": med["replay_mlu"]["steps_per_s"] / med["eager_cpu"]["steps_per_s"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="tiny,gpt_small,gpt")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per runner and pass (steps/s)")
    parser.add_argument("--out", default="benchmarks/results/bench_graphs.json")
    args = parser.parse_args()
    results = [measure(case, args.min_time, args.repeat) for case in args.cases.split(",")]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                   "threads": torch.get_num_threads(), "repeat": args.repeat, "results": results}, f, indent=1)
    print(f"{'case':9s} {'host us: cpu':>13s} {'eager mlu':>10s} {'replay mlu':>11s} {'eager/replay':>13s}"
          f" | {'steps/s: cpu':>13s} {'eager mlu':>10s} {'replay mlu':>11s} {'replay/eager':>13s}")
    for r in results:
        m = r["median"]
        print(f"{r['case']:9s} {m['eager_cpu']['host_us']:13.1f} {m['eager_mlu']['host_us']:10.1f}"
              f" {m['replay_mlu']['host_us']:11.1f} {r['host_eager_over_replay']:13.1f}"
              f" | {m['eager_cpu']['steps_per_s']:13.2f} {m['eager_mlu']['steps_per_s']:10.2f}"
              f" {m['replay_mlu']['steps_per_s']:11.2f} {r['replay_over_eager_mlu_speed']:13.2f}")
    print("host us: time to issue one step; eager/replay above 1: replay issues faster; replay/eager above 1: "
          "replay runs faster")


if __name__ == "__main__":
    main()
