"""Data-parallel training of the GPT-mini on mlu with DDP or FSDP2, launched by torchrun.

    torchrun --standalone --nproc_per_node 2 examples/distributed_gpt.py --mode ddp
    torchrun --standalone --nproc_per_node 2 examples/distributed_gpt.py --mode fsdp2

Written the device-agnostic way, as a CUDA script would be: the accelerator and
its collective backend come from torch (`mlu` and `cncl` here, `cuda` and `nccl`
on a GPU); nothing imports torch_mlu, which torch's backend autoload brings in.
Each rank trains on its own batches; DDP averages the gradients, FSDP2 shards the
parameters, gradients and optimizer state. Rank 0 prints the loss and the
throughput of all ranks together.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, CharCorpus, GPTConfig, default_corpus_files  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["ddp", "fsdp2"], default="ddp")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--corpus", nargs="+", help="text files (default: /usr/share/common-licenses/*)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    accelerator = torch.accelerator.current_accelerator()  # mlu
    backend = dist.get_default_backend_for_device(accelerator)  # cncl
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.accelerator.set_device_index(local_rank)
    device = torch.device(accelerator.type, local_rank)
    dist.init_process_group(backend, device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    corpus = CharCorpus(args.corpus or default_corpus_files())
    torch.manual_seed(0)  # the same initial weights on every rank
    cfg = GPTConfig(vocab_size=corpus.vocab_size, block_size=args.block_size, n_layer=args.layers, n_head=4,
                    n_embd=args.embd)
    model = GPT(cfg).to(device)
    if args.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh(accelerator.type, (world,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    batches = torch.Generator().manual_seed(1234 + rank)  # each rank its own data

    start = time.perf_counter()
    for step in range(args.steps):
        x, y = corpus.batch("train", args.batch_size, args.block_size, batches)
        _, loss = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0 or step == args.steps - 1:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step:4d}  loss {mean.item():.4f}", flush=True)
    torch.accelerator.synchronize()
    elapsed = time.perf_counter() - start
    if rank == 0:
        tokens = args.steps * args.batch_size * args.block_size * world
        print(f"{args.mode}: {world} ranks on {accelerator.type} ({backend}), {tokens / elapsed:.0f} tokens/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
