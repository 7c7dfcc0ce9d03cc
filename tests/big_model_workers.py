"""Worker functions of tests/test_distributed_memory.py: a model that does not fit a device, trained anyway.

The devices are made small (TORCH_MLU_DEVICE_MEMORY, set by the test) and the GPT's parameters alone take 80% of
one: its fp32 parameters, gradients and Adam states together are 16 bytes a parameter, 12.8x the capacity, so
neither one device nor DDP can train it. FSDP2 with CPU offload keeps every parameter, gradient and optimizer state
on the host and brings one block's parameters to the device at a time; activation checkpointing (or offloading
the saved activations to the host) keeps the activations to one block's. Each worker trains 2 steps on 2 ranks
and compares the loss with the same steps on the CPU, and reports the device memory figures.
"""

import json
import os

import torch
import torch.distributed as dist
from torch.testing import assert_close

import dist_workers as dw


def big_gpt(capacity):
    """A GPT whose fp32 parameters take about 80% of `capacity` bytes, in 8 blocks of ~10% each."""
    dw.gpt_mini()  # puts examples/ on sys.path
    from gpt import GPT, GPTConfig
    # Per block 12 x width^2 parameters (attention 4, MLP 8); the embeddings are small beside them.
    width = round((0.8 * capacity / 4 / 8 / 12) ** 0.5 / 32) * 32
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=8, n_head=4, n_embd=width))


def reference_losses(capacity, world, steps):
    model = big_gpt(capacity)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        x, y = dw.global_batch(world, step, t=32)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def offloaded_training_worker(rank, world, store, activations, out_dir, steps=2):
    """FSDP2 + CPUOffloadPolicy; `activations` is "checkpoint" (each block recomputed in the backward) or
    "offload" (torch.autograd.graph.save_on_cpu: saved activations on the host)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard
    device = dw.init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))
    capacity = torch.mlu.get_device_properties(device).total_memory
    model = big_gpt(capacity)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert 0.7 * capacity < param_bytes < 0.9 * capacity, (param_bytes, capacity)
    with torch.device("meta"):
        meta = big_gpt(capacity)
    for i, block in enumerate(meta.blocks):
        if activations == "checkpoint":
            meta.blocks[i] = block = checkpoint_wrapper(block)
        fully_shard(block, mesh=mesh, offload_policy=CPUOffloadPolicy())
    fully_shard(meta, mesh=mesh, offload_policy=CPUOffloadPolicy())
    # The weights go straight from the host model into the host shards: the device never holds them all.
    meta.to_empty(device="cpu")
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    set_model_state_dict(meta, model.state_dict(), options=StateDictOptions(full_state_dict=True))
    model = meta
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.mlu.reset_peak_memory_stats(device)
    losses = []
    for step in range(steps):
        x, y = dw.global_batch(world, step, t=32)
        context = torch.autograd.graph.save_on_cpu(pin_memory=True) if activations == "offload" else \
            torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        with context:
            _, loss = model(dw.shard(x, rank, world).to(device), dw.shard(y, rank, world).to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    want = reference_losses(capacity, world, steps)
    assert_close(torch.tensor(losses), torch.tensor(want), rtol=1e-4, atol=1e-5)
    stats = torch.mlu.memory_stats(device)
    report = {"capacity": capacity, "param_bytes": param_bytes, "peak_allocated": stats["allocated_bytes.all.peak"],
              "peak_reserved": stats["reserved_bytes.all.peak"], "num_ooms": stats.get("num_ooms", 0),
              "expandable": "expandable_segments:True" in os.environ.get("PYTORCH_MLU_ALLOC_CONF", "")}
    assert report["peak_reserved"] <= capacity, report
    if rank == 0:
        with open(os.path.join(out_dir, f"{activations}.json"), "w") as f:
            json.dump(report, f)
    dist.destroy_process_group()


def one_device_runs_out_worker(rank, world, store):
    """The same model without sharding or offload: Adam's first step needs 16 bytes a parameter and the device
    runs out with the allocator's out-of-memory error, and keeps working after it."""
    import pytest
    device = dw.init(rank, world, store, backend="cncl")
    capacity = torch.mlu.get_device_properties(device).total_memory
    model = big_gpt(capacity).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = dw.global_batch(world, 0, t=32)
    with pytest.raises(torch.OutOfMemoryError):
        _, loss = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
    del model, opt
    torch.mlu.empty_cache()
    assert_close(torch.ones(4, device=device).sum().cpu(), torch.tensor(4.0))
    dist.destroy_process_group()
