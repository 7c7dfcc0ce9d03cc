"""Training across "hosts" (tests/test_distributed_multihost.py): DDP or FSDP2 over cncl under torchrun --nnodes,
one process per host, each host a network namespace (tools/netns_hosts.py).

Each rank trains on its slice of a global batch; rank 0 then trains the same model on the whole batch in one
process (on its own device, no process group) and writes both final parameter sets' largest difference to --out.

    torchrun --nnodes 2 ... tests/multihost_train.py --mode ddp --out result.json
"""
import argparse
import json
import os

import torch
import torch.distributed as dist

import torch_mlu  # noqa: F401

STEPS, BATCH, WIDTH = 4, 16, 24


def make_model(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, 48), torch.nn.Tanh(), torch.nn.Linear(48, 8)).to(device)


def batches():
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, 8, generator=g)) for _ in range(STEPS)]


def train(model, optimizer, data, device, rows):
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x[rows].to(device)), y[rows].to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["ddp", "fsdp2"], required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.mlu.set_device(local_rank)
    device = torch.device("mlu", local_rank)
    dist.init_process_group("cncl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    store.set(f"host_{rank}", os.environ["NETNS_HOST_ADDRESS"])
    model = make_model(device)
    if args.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    else:
        from torch.distributed.fsdp import fully_shard
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = batches()
    share = BATCH // world
    train(model, optimizer, data, device, slice(rank * share, (rank + 1) * share))
    if args.mode == "ddp":
        params = [p.detach().cpu() for p in model.module.parameters()]
    else:
        params = [p.full_tensor().detach().cpu() for p in model.parameters()]
    if rank == 0:
        reference = make_model(device)
        ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
        train(reference, ref_optimizer, data, device, slice(0, BATCH))
        diff = max(float((a - b.detach().cpu()).abs().max()) for a, b in zip(params, reference.parameters()))
        with open(args.out, "w") as f:
            json.dump({"mode": args.mode, "world": world, "max_diff": diff,
                       "transport": dist.group.WORLD._get_backend(device).all_reduce_transport,
                       "hosts": sorted({store.get(f"host_{r}").decode() for r in range(world)})}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
