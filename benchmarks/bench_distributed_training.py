"""Training steps under FSDP2 (eager and compiled) and 2-D FSDP2 x TP on mlu, with the communication overlap.

    python benchmarks/bench_distributed_training.py [--steps 10] [--runs 3] [--width 128] [--tokens 64]

FSDP2: the GPT of bench_distributed.py's DDP case (2 layers, --width 128 wide, --tokens 64, batch 8 per rank), each
block sharded (and, compiled, `block.compile()` first, as torchtitan does), AdamW; 1 and 2 ranks, eager and
compiled. The step time is the median over --runs timings of --steps steps each, after 3 warm-up steps (which
compile). Overlap: one profiled step per configuration (torch.profiler, the device rows): the share of the time the
communication stream spends in collectives (all-gather, reduce-scatter) during which the compute stream is running
a kernel too.

2-D: pytorch/examples' Llama 2 (tests/pytorch_examples/tensor_parallelism/llama2_model.py, 2 layers, 128 wide,
8 heads, 64 tokens, batch 4 per data-parallel rank) with fsdp_tp_example.py's plan on dp 2 x tp 2 (4 ranks), and
the same model on one device with the same per-rank batch.

The development host has 2 cores: ranks share them, so 2 ranks cannot be faster than 1, and 4 ranks less so;
the figures measure the cost of the parallel machinery and how much communication the schedule hides, not
scaling.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_distributed  # noqa: E402  (its spawn helper)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TP_EXAMPLE = os.path.join(ROOT, "tests", "pytorch_examples", "tensor_parallelism")


def _init(rank, world, store):
    torch.mlu.set_device(rank % torch.mlu.device_count())
    dist.init_process_group("cncl", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    return torch.device("mlu", torch.mlu.current_device())


def _timed_steps(step, steps, runs, barrier=dist.barrier):
    """Median seconds per step over `runs` timings of `steps` steps after 3 warm-up steps, every rank in step
    (`barrier` before each timing; bench_accuracy.py, a single process, passes a no-op)."""
    for _ in range(3):
        step()
    torch.mlu.synchronize()
    times = []
    for _ in range(runs):
        barrier()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.mlu.synchronize()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def _union_overlap(intervals, others):
    """Total length of `intervals` covered by the union of `others` (both lists of (start, end))."""
    merged = []
    for start, end in sorted(others):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    covered = 0.0
    for start, end in intervals:
        for m_start, m_end in merged:
            covered += max(0.0, min(end, m_end) - max(start, m_start))
    return covered


def _overlap(step):
    """(collective device time in ms, the share of it during which a compute kernel ran) over one step."""
    from torch.profiler import ProfilerActivity, profile
    torch.mlu.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step()
        torch.mlu.synchronize()
    device_rows = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    comm = [(e.time_range.start, e.time_range.end) for e in device_rows if e.name == "cncl collective"]
    compute = [(e.time_range.start, e.time_range.end) for e in device_rows
               if e.device_resource_id == 0 and not e.name.startswith("cncl")]
    total = sum(end - start for start, end in comm)
    return total / 1000, (_union_overlap(comm, compute) / total if total else 0.0)


def fsdp_worker(rank, world, store, compiled, width, tokens, steps, runs, out_path):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from gpt import GPT, GPTConfig
    device = _init(rank, world, store)
    mesh = init_device_mesh("mlu", (world,))
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, block_size=tokens, n_layer=2, n_head=4, n_embd=width)).to(device)
    for block in model.blocks:
        if compiled:
            block.compile()
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 64, (8, tokens), device=device)

    def step():
        _, loss = model(x, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    seconds = _timed_steps(step, steps, runs)
    comm_ms, hidden = _overlap(step)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"world": world, "compiled": compiled, "step_ms": seconds * 1000, "comm_ms": comm_ms,
                       "hidden": hidden}, f)
    dist.destroy_process_group()


def two_d_worker(rank, world, store, steps, runs, out_path):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    sys.path[:0] = [TP_EXAMPLE, os.path.join(ROOT, "tests")]
    from dtensor_workers import parallelize_as_fsdp_tp_example
    from llama2_model import ModelArgs, Transformer
    device = _init(rank, world, store)
    torch.manual_seed(0)
    model = Transformer.from_model_args(ModelArgs(dim=128, n_layers=2, n_heads=8, vocab_size=512,
                                                  max_seq_len=64)).to(device)
    if world > 1:
        mesh = init_device_mesh("mlu", (world // 2, 2), mesh_dim_names=("dp", "tp"))
        parallelize_as_fsdp_tp_example(model, mesh["tp"])
        fully_shard(model, mesh=mesh["dp"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    tokens = torch.randint(512, (4, 64), device=device)

    def step():
        model(tokens).float().logsumexp(-1).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    seconds = _timed_steps(step, steps, runs)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"world": world, "step_ms": seconds * 1000}, f)
    dist.destroy_process_group()


def _spawn(worker, world, *args):
    return bench_distributed._spawn(worker, world, *args, env={"TORCH_MLU_DEVICE_COUNT": str(max(world, 2))})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--width", type=int, default=128, help="the FSDP2 GPT's n_embd")
    parser.add_argument("--tokens", type=int, default=64, help="the FSDP2 GPT's sequence length")
    parser.add_argument("--out", default="build/bench_distributed_training.json")
    args = parser.parse_args()

    fsdp = [_spawn(fsdp_worker, world, compiled, args.width, args.tokens, args.steps, args.runs)
            for world in (1, 2) for compiled in (False, True)]
    two_d = [_spawn(two_d_worker, world, args.steps, args.runs) for world in (1, 4)]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": os.uname().nodename, "cores": os.cpu_count(), "fsdp": fsdp, "two_d": two_d}, f, indent=1)

    print(f"FSDP2 GPT step, {args.width} wide, {args.tokens} tokens x 8 per rank "
          f"(median of {args.runs} x {args.steps} steps)")
    print(f"{'ranks':>5} {'mode':>9} {'ms/step':>8} {'vs eager':>8} {'comm ms':>8} {'hidden':>7}")
    for row in fsdp:
        eager = next(r for r in fsdp if r["world"] == row["world"] and not r["compiled"])
        print(f"{row['world']:>5} {'compiled' if row['compiled'] else 'eager':>9} {row['step_ms']:>8.1f} "
              f"{eager['step_ms'] / row['step_ms']:>7.2f}x {row['comm_ms']:>8.1f} {row['hidden']:>6.0%}")
    one, four = two_d
    print(f"2-D Llama 2 step: 1 device {one['step_ms']:.1f} ms, dp 2 x tp 2 on 4 ranks {four['step_ms']:.1f} ms")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
