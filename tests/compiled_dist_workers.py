"""Worker functions of tests/test_distributed_compile.py, run in spawned ranks: torch.compile with FSDP2 and DDP.

Each worker trains the GPT-mini compiled and eager in the same rank, on the same shards of the same batches,
and compares losses and the final (full) parameters; a failed check raises, and torch.multiprocessing.spawn
re-raises it in the test with the rank's traceback.
"""

import torch
import torch.distributed as dist
from torch.testing import assert_close

import dist_workers as dw


def fsdp2_model(device, mesh, compiled, checkpointed, bf16):
    """The GPT-mini as torchtitan builds it: each block activation-checkpointed, then compiled, then sharded."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else \
        MixedPrecisionPolicy()
    model = dw.gpt_mini().to(device)
    for i, block in enumerate(model.blocks):
        if checkpointed:
            block = checkpoint_wrapper(block)
        if compiled:
            block.compile()
        model.blocks[i] = block
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model


def train(model, device, rank, world, steps=4):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        x, y = dw.global_batch(world, step)
        _, loss = model(dw.shard(x, rank, world).to(device), dw.shard(y, rank, world).to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach().float().cpu())
    return torch.stack(losses)


def compiled_fsdp2_worker(rank, world, store):
    from torch.distributed.device_mesh import init_device_mesh
    device = dw.init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))
    # fp32: compiled equals eager up to Inductor's reassociation; bf16 parameters with activation checkpointing
    # (the recomputed attention reruns with the saved generator state: Note [Compiled RNG state on mlu]) within
    # bf16's rounding of the activations.
    for checkpointed, bf16, tol in ((False, False, 1e-4), (True, True, 2e-2)):
        what = f"checkpointed {checkpointed}, bf16 {bf16}"
        runs = {}
        for compiled in (False, True):
            model = fsdp2_model(device, mesh, compiled, checkpointed, bf16)
            runs[compiled] = train(model, device, rank, world), dw.full_state(model)
        assert_close(runs[True][0], runs[False][0], rtol=tol, atol=tol, msg=lambda m: f"{what}: losses: {m}")
        for k, want in runs[False][1].items():
            assert_close(runs[True][1][k], want, rtol=tol, atol=tol, msg=lambda m, k=k: f"{what}: {k}: {m}")
    dist.destroy_process_group()


def gpt_wide():
    """The GPT-mini 4x wider: 1.6 MB of parameters, more than DDP's first bucket (1 MiB) holds."""
    dw.gpt_mini()  # puts examples/ on sys.path
    from gpt import GPT, GPTConfig
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=4, n_embd=128))


def compiled_ddp_worker(rank, world, store, steps=3):
    """DDP compiled whole with Dynamo's DDPOptimizer (the graph split at bucket boundaries, so a bucket's
    all-reduce starts while the rest of the backward runs) and mode="reduce-overhead" (each piece replayed as an
    mlu graph, Note [reduce-overhead on mlu]; the all-reduces run between them), against single-process
    training."""
    from torch._dynamo.utils import counters
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch_mlu._inductor import graphs
    device = dw.init(rank, world, store, backend="cncl", device_id=True)
    reference, model = gpt_wide().to(device), gpt_wide().to(device)
    ddp = DDP(model, device_ids=[device.index], bucket_cap_mb=1)
    compiled = torch.compile(ddp, mode="reduce-overhead")
    before = dict(graphs.stats)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (reference, model)]
    counters.clear()
    for step in range(steps):
        x, y = dw.global_batch(world, step)
        _, loss = compiled(dw.shard(x, rank, world).to(device), dw.shard(y, rank, world).to(device))
        loss.backward()
        _, ref_loss = reference(x.to(device), y.to(device))
        ref_loss.backward()
        for opt in optimizers:
            opt.step()
            opt.zero_grad()
    # A graph per bucket, each compiled by AOTAutograd: the split happened (the whole model is one graph).
    assert counters["aot_autograd"]["total"] >= 2, dict(counters["aot_autograd"])
    # Each piece's forward and backward recorded once (the first step warms up, the second records and replays).
    recorded = graphs.stats["recorded"] - before.get("recorded", 0)
    assert recorded >= 4 and graphs.stats["replayed"] - before.get("replayed", 0) >= recorded, dict(graphs.stats)
    want = dict(reference.named_parameters())
    for k, p in model.named_parameters():
        assert_close(p.detach(), want[k].detach(), rtol=1e-4, atol=1e-5, msg=lambda m, k=k: f"compiled DDP {k}: {m}")
    dist.destroy_process_group()
