"""A training run that survives a lost rank (tests/test_distributed_recovery.py): torchrun --max-restarts restarts
the group, which resumes from its last torch.distributed.checkpoint (DCP) save.

FSDP2 over cncl, AdamW, a checkpoint every --every steps (model and optimizer through get_state_dict, the step in
the checkpoint); rank 1 of the first attempt kills itself (SIGKILL) once step --kill-at is logged. Rank 0 appends
one line per step, "<attempt> <step> <loss>", to --losses. The batches depend on the step only, so a resumed run
computes what an uninterrupted one does.

    torchrun --standalone --nproc_per_node 2 --max-restarts 1 tests/elastic_train.py --ckpt DIR --losses FILE
"""
import argparse
import os
import signal

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard

import torch_mlu  # noqa: F401


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--kill-at", type=int, default=-1)
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--losses", required=True)
    args = parser.parse_args()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.mlu.set_device(local_rank)
    dist.init_process_group("cncl")
    rank = dist.get_rank()
    device = torch.device("mlu", local_rank)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(device)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

    start = 0
    latest = os.path.join(args.ckpt, "latest")
    if os.path.exists(latest):
        with open(latest) as f:
            saved_step = int(f.read())
        model_state, optim_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optim": optim_state, "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=os.path.join(args.ckpt, f"step_{saved_step}"))
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"]) + 1
        if rank == 0:
            print(f"attempt {attempt}: resumed from step {saved_step}", flush=True)

    for step in range(start, args.steps):
        if attempt == 0 and step == args.kill_at + 1:
            dist.barrier()  # rank 0 has logged step --kill-at
            if rank == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(8, 16, generator=g).to(device)
        y = torch.randn(8, 4, generator=g).to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reported = loss.detach().clone()
        dist.all_reduce(reported, op=dist.ReduceOp.AVG)
        if rank == 0:
            with open(args.losses, "a") as f:
                f.write(f"{attempt} {step} {float(reported.cpu()):.8f}\n")
        if step % args.every == args.every - 1:
            model_state, optim_state = get_state_dict(model, optimizer)
            dcp.save({"model": model_state, "optim": optim_state, "step": torch.tensor(step)},
                     checkpoint_id=os.path.join(args.ckpt, f"step_{step}"))
            dist.barrier()
            if rank == 0:
                with open(latest + ".tmp", "w") as f:
                    f.write(str(step))
                os.replace(latest + ".tmp", latest)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
