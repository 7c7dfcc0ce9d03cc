"""DDP on mlu: does the bucketed all-reduce overlap the backward pass?

    python benchmarks/bench_ddp_overlap.py [--models mlp cnn gpt] [--steps 5] [--runs 5]
        [--out build/bench_ddp_overlap.json]

For each model of the model suite (bench_models.py: its model, optimizer and batch per rank), DDP training steps
with 1 and 2 ranks (one device each): the median step time over --runs timings of --steps steps, and, from one
profiled step (torch.profiler's device rows), the time the communication stream spends in all-reduces and the
share of it during which the compute stream runs a kernel too ("hidden"; bench_distributed_training._overlap).
Ranks share the host's cores, so 2 ranks are not expected to be as fast as 1: the step time's growth less the
all-reduce time that is not hidden is what the ranks' competition for the cores costs; "scaling" is the 2 ranks'
samples per second over 1 rank's (each rank steps a full batch). The ranks run as under torchrun
(LOCAL_WORLD_SIZE set), and the 2-rank rows in three set-ups: the default (all-reduce through shared memory, Note
[cncl shared-memory all-reduce]; the cores split between the ranks, Note [Ranks of one host share its cores]),
all-reduce over Gloo's loopback TCP (CNCL_SHM_DISABLE=1), and every rank's device with all the cores
(TORCH_MLU_DEVICE_CORES). Results: docs/distributed.md.
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_distributed  # noqa: E402  (its spawn helper)
import bench_models  # noqa: E402
from bench_distributed_training import _init, _overlap, _timed_steps  # noqa: E402


def ddp_worker(rank, world, store, name, steps, runs, out_path):
    device = _init(rank, world, store)
    torch.manual_seed(0)
    model, make_opt, batch = bench_models.MODELS[name]()
    ddp = torch.nn.parallel.DistributedDataParallel(model.to(device), device_ids=[device.index])
    opt = make_opt(ddp.parameters())
    inputs = tuple(t.to(device) for t in batch)

    def step():
        ddp(*inputs).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    seconds = _timed_steps(step, steps, runs)
    comm_ms, hidden = _overlap(step)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"model": name, "world": world, "step_ms": seconds * 1000, "comm_ms": comm_ms,
                       "hidden": hidden}, f)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(bench_models.MODELS))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="build/bench_ddp_overlap.json")
    args = parser.parse_args()
    setups = {"default": {}, "gloo tcp": {"CNCL_SHM_DISABLE": "1"},
              "all cores": {"TORCH_MLU_DEVICE_CORES": str(len(os.sched_getaffinity(0)))}}
    rows = []
    for name in args.models:
        for world, setup in [(1, "default")] + [(2, setup) for setup in setups]:
            row = bench_distributed._spawn(ddp_worker, world, name, args.steps, args.runs, env=setups[setup])
            rows.append({**row, "setup": setup})
    print(f"DDP step (median of {args.runs} x {args.steps} steps)")
    print(f"{'model':>6} {'ranks':>5} {'setup':>11} {'ms/step':>8} {'comm ms':>8} {'hidden':>7} {'scaling':>8}")
    for row in rows:
        single = next(r for r in rows if r["model"] == row["model"] and r["world"] == 1)
        row["scaling"] = row["world"] * single["step_ms"] / row["step_ms"]
        print(f"{row['model']:>6} {row['world']:>5} {row['setup']:>11} {row['step_ms']:>8.1f} {row['comm_ms']:>8.1f} "
              f"{row['hidden']:>7.0%} {row['scaling']:>8.2f}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": os.uname().nodename, "cores": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
