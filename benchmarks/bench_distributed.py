"""cncl vs Gloo on CPU tensors: all_reduce bus bandwidth, and DDP throughput.

    python benchmarks/bench_distributed.py [--runs 5] [--out build/bench_distributed.json]

all_reduce: ranks in one "cpu:gloo,mlu:cncl" group time all_reduce of the same
float32 buffer as an mlu tensor (cncl, on its communication stream, timed to
the device's completion) and as a CPU tensor (the group's Gloo), 1 KB to 64 MB.
Bus bandwidth = 2 (n - 1) / n x bytes / time (NCCL's convention); the ratio is
mlu / CPU (1.0 = the device adds nothing). Measured with the agreement check on
(the default) and off (TORCH_CNCL_CHECK_COLLECTIVES=0). Medians of --runs.

DDP: GPT-mini training steps per second with 1 and 2 ranks (same batch per rank).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB .. 64 MB


def _init(rank, world, store, backend):
    torch.mlu.set_device(rank % torch.mlu.device_count())
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    return torch.device("mlu", torch.mlu.current_device())


def _time_allreduce(tensor, sync, budget_s=0.25):
    """Seconds per all_reduce; every rank runs the same number (agreed while nothing is in flight)."""
    for _ in range(3):
        dist.all_reduce(tensor)
    sync()
    start = time.perf_counter()
    for _ in range(3):
        dist.all_reduce(tensor)
    sync()
    estimate = (time.perf_counter() - start) / 3
    count = torch.tensor([max(5, int(budget_s / max(estimate, 1e-7)))])
    dist.all_reduce(count, op=dist.ReduceOp.MAX)  # CPU tensor: the group's Gloo
    iters = int(count)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
    sync()
    return (time.perf_counter() - start) / iters


def allreduce_worker(rank, world, store, runs, budget_s, out_path):
    device = _init(rank, world, store, "cpu:gloo,mlu:cncl")
    rows = []
    for nbytes in SIZES:
        n = nbytes // 4
        mlu_t, cpu_t = torch.ones(n, device=device), torch.ones(n)
        mlu_s, cpu_s = [], []
        for _ in range(runs):
            mlu_s.append(_time_allreduce(mlu_t, torch.mlu.synchronize, budget_s))
            cpu_s.append(_time_allreduce(cpu_t, lambda: None, budget_s))
        factor = 2 * (world - 1) / world
        mlu_bw = factor * nbytes / statistics.median(mlu_s) / 1e9
        cpu_bw = factor * nbytes / statistics.median(cpu_s) / 1e9
        rows.append({"bytes": nbytes, "mlu_s": statistics.median(mlu_s), "cpu_s": statistics.median(cpu_s),
                     "mlu_busbw_GBps": mlu_bw, "cpu_busbw_GBps": cpu_bw, "ratio": mlu_bw / cpu_bw})
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def gpt_ddp_step(device):
    """One DDP training step of the GPT-mini (2 layers, 128 wide, batch 8 x 64 per rank, AdamW), as a function."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    from gpt import GPT, GPTConfig
    torch.manual_seed(0)
    model = DDP(GPT(GPTConfig(vocab_size=64, block_size=64, n_layer=2, n_head=4, n_embd=128)).to(device),
                device_ids=[device.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 64, (8, 64), device=device)

    def step():
        _, loss = model(x, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def ddp_worker(rank, world, store, steps, out_path):
    device = _init(rank, world, store, "cncl")
    step = gpt_ddp_step(device)
    for _ in range(3):
        step()
    torch.mlu.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.mlu.synchronize()
    elapsed = time.perf_counter() - start
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"world": world, "steps_per_s": steps / elapsed,
                       "samples_per_s": steps * 8 * world / elapsed}, f)
    dist.destroy_process_group()


def _spawn(worker, world, *args, env=None):
    """Runs worker(rank, world, store, *args, out) on `world` ranks of this host, under `env` and, as torchrun
    sets it, LOCAL_WORLD_SIZE (Note [Ranks of one host share its cores]); returns what rank 0 wrote to `out`."""
    env = {"LOCAL_WORLD_SIZE": str(world), **(env or {})}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            mp.spawn(worker, args=(world, os.path.join(tmp, "store"), *args, out), nprocs=world)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        with open(out) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--budget", type=float, default=0.25, help="seconds per measurement")
    parser.add_argument("--ddp-steps", type=int, default=20)
    parser.add_argument("--out", default="build/bench_distributed.json")
    args = parser.parse_args()

    result = {"host": os.uname().nodename, "cores": os.cpu_count(), "world": args.world,
              "allreduce": _spawn(allreduce_worker, args.world, args.runs, args.budget),
              "allreduce_no_check": _spawn(allreduce_worker, args.world, args.runs, args.budget,
                                           env={"TORCH_CNCL_CHECK_COLLECTIVES": "0"}),
              "ddp": [_spawn(ddp_worker, w, args.ddp_steps) for w in (1, 2)]}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)

    print(f"all_reduce, {args.world} ranks, bus bandwidth GB/s (median of {args.runs})")
    print(f"{'bytes':>10} {'cpu gloo':>10} {'mlu cncl':>10} {'ratio':>7} {'no check':>10} {'ratio':>7}")
    for row, fast in zip(result["allreduce"], result["allreduce_no_check"]):
        print(f"{row['bytes']:>10} {row['cpu_busbw_GBps']:>10.3f} {row['mlu_busbw_GBps']:>10.3f} "
              f"{row['ratio']:>7.2f} {fast['mlu_busbw_GBps']:>10.3f} {fast['ratio']:>7.2f}")
    one, two = result["ddp"]
    print(f"DDP GPT-mini: 1 rank {one['samples_per_s']:.1f} samples/s, 2 ranks {two['samples_per_s']:.1f} samples/s "
          f"(scaling {two['samples_per_s'] / one['samples_per_s']:.2f}x)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
