"""One rank of benchmarks/bench_multihost.py, under torchrun (one process per host).

    allreduce: cncl (mlu tensors) and the same group's Gloo (CPU tensors) all_reduce, 1 MB to 64 MB, medians of
               --runs timings (bench_distributed._time_allreduce); rank 0 writes the seconds per call to --out.
    ddp:       GPT-mini DDP training steps (bench_distributed's model and batch per rank); rank 0 writes steps/s.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_distributed import _time_allreduce, gpt_ddp_step  # noqa: E402

SIZES = [1 << 20, 1 << 24, 1 << 26]


def allreduce(args, device):
    rows = []
    for nbytes in SIZES:
        mlu_t, cpu_t = torch.ones(nbytes // 4, device=device), torch.ones(nbytes // 4)
        mlu_s = [_time_allreduce(mlu_t, torch.mlu.synchronize, args.budget) for _ in range(args.runs)]
        cpu_s = [_time_allreduce(cpu_t, lambda: None, args.budget) for _ in range(args.runs)]
        rows.append({"bytes": nbytes, "mlu_s": statistics.median(mlu_s), "cpu_s": statistics.median(cpu_s)})
    return rows


def ddp(args, device):
    step = gpt_ddp_step(device)
    for _ in range(3):
        step()
    torch.mlu.synchronize()
    times = []
    for _ in range(args.runs):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.mlu.synchronize()
        times.append((time.perf_counter() - start) / args.steps)
    return {"s_per_step": statistics.median(times)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--what", choices=["allreduce", "ddp"], required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--budget", type=float, default=0.5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.mlu.set_device(local_rank)
    device = torch.device("mlu", local_rank)
    dist.init_process_group("cpu:gloo,mlu:cncl")
    result = allreduce(args, device) if args.what == "allreduce" else ddp(args, device)
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump({"world": dist.get_world_size(), "result": result}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
