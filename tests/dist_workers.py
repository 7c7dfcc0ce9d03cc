"""Worker functions of tests/test_distributed.py, run in spawned ranks.

Each worker checks the cncl backend against a reference computed in the same
rank: the same collective on CPU tensors through the group's Gloo backend, or a
single-process run of the same training. A failed check raises, and
torch.multiprocessing.spawn re-raises it in the test with the rank's traceback.
"""

import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.testing import assert_close

import torch_mlu  # noqa: F401  (autoload covers it too; explicit for clarity)


def init(rank, world, store, backend="cpu:gloo,mlu:cncl", timeout=60, device_id=False):
    torch.mlu.set_device(rank % torch.mlu.device_count())
    device = torch.device("mlu", torch.mlu.current_device())
    kwargs = {"device_id": device} if device_id else {}
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout), **kwargs)
    return device


def rank_tensor(rank, shape, dtype, seed=0):
    """The input rank `rank` contributes: any rank can rebuild any other's."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 4).to(dtype)
    high = 2 if dtype == torch.uint8 else 16
    return torch.randint(0, high, shape, generator=g).to(dtype)


def both(fn, cpu_tensors, device):
    """Runs fn on CPU tensors (Gloo) and on their mlu copies (cncl); returns (cpu, mlu)."""
    mlu_tensors = [t.to(device) for t in cpu_tensors]
    fn(*cpu_tensors)
    fn(*mlu_tensors)
    return cpu_tensors, [t.cpu() for t in mlu_tensors]


def check_same(what, cpu_tensors, mlu_tensors):
    for c, m in zip(cpu_tensors, mlu_tensors):
        assert_close(m, c, msg=lambda s: f"{what}: {s}")


def check_stream_safety(device, world):
    """A tensor freed while its collective is in flight is not handed out again before the transfer ends
    (record_stream, or the Work's stash under TORCH_CNCL_AVOID_RECORD_STREAMS=1)."""
    n = 1 << 18
    x = torch.ones(n, device=device)
    dist.all_reduce(x, async_op=True)  # the Work (which holds x) is dropped at once
    del x
    y = torch.full((n,), 7.0, device=device)  # would reuse x's block without the protection
    torch.mlu.synchronize()
    assert bool((y == 7).all().cpu()), "a block in use by a collective was reused"
    # The communication stream waits for the current stream: the input's last write is seen.
    z = torch.zeros(n, device=device)
    torch.mlu._sleep(20_000_000)  # 20 ms: the fill below is still queued when all_reduce is called
    z.fill_(2.0)
    dist.all_reduce(z)
    assert_close(z.cpu(), torch.full((n,), 2.0 * world))
    # Back-to-back blocking collectives skip the redundant wait for the current stream
    # (Note [Skipping a redundant stream wait]); a write launched in between is still waited for.
    a = torch.ones(n, device=device)
    for _ in range(3):
        dist.all_reduce(a)
    torch.mlu._sleep(20_000_000)
    a.fill_(5.0)
    dist.all_reduce(a)
    dist.all_reduce(a)
    assert_close(a.cpu(), torch.full((n,), 5.0 * world * world))


REDUCE_OPS = [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
          torch.int64, torch.bool]


def expected_reduce(rank_inputs, op):
    stacked = torch.stack([t.double() for t in rank_inputs])
    if op == dist.ReduceOp.SUM:
        return stacked.sum(0)
    if op == dist.ReduceOp.AVG:
        return stacked.mean(0)
    if op == dist.ReduceOp.PRODUCT:
        return stacked.prod(0)
    if op == dist.ReduceOp.MIN:
        return stacked.min(0).values
    return stacked.max(0).values


def ops_worker(rank, world, store):
    device = init(rank, world, store)
    n = 6

    # all_reduce: every reduce op on float32, against the arithmetic of every rank's input.
    for op in REDUCE_OPS:
        t = rank_tensor(rank, (n,), torch.float32).to(device)
        dist.all_reduce(t, op=op)
        want = expected_reduce([rank_tensor(r, (n,), torch.float32) for r in range(world)], op).float()
        assert_close(t.cpu(), want, rtol=1e-5, atol=1e-5, msg=lambda s: f"all_reduce {op}: {s}")
    # PREMUL_SUM: sum of factor * input, with a float and an mlu-tensor factor.
    for factor in (0.5, torch.tensor([0.25], device=device)):
        t = rank_tensor(rank, (n,), torch.float32).to(device)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        f = float(factor) if isinstance(factor, float) else float(factor.cpu())
        want = sum(rank_tensor(r, (n,), torch.float32) for r in range(world)) * f
        assert_close(t.cpu(), want, rtol=1e-5, atol=1e-5)
    # Bitwise ops on integers and bool (Gloo's own), against Gloo on CPU.
    for dtype in (torch.uint8, torch.int32, torch.int64, torch.bool):
        for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
            c, m = both(lambda t, op=op: dist.all_reduce(t, op=op), [rank_tensor(rank, (n,), dtype)], device)
            check_same(f"all_reduce {op} {dtype}", c, m)
    # Every dtype: all_reduce SUM (MAX for bool) and all_gather_into_tensor, against Gloo on CPU.
    for dtype in DTYPES:
        op = dist.ReduceOp.MAX if dtype == torch.bool else dist.ReduceOp.SUM
        c, m = both(lambda t: dist.all_reduce(t, op=op), [rank_tensor(rank, (n,), dtype)], device)
        if dtype in (torch.float16, torch.bfloat16):
            # The ranks share this host: their sum is rounded once (Note [Reductions on the transfer's own
            # thread]), Gloo's after each rank, so the oracle is the exact sum rounded.
            c = [expected_reduce([rank_tensor(r, (n,), dtype) for r in range(world)], op).to(dtype)]
        check_same(f"all_reduce {dtype}", c, m)
        c, m = both(dist.all_gather_into_tensor, [torch.zeros(world * n, dtype=dtype), rank_tensor(rank, (n,), dtype)],
                    device)
        check_same(f"all_gather_into_tensor {dtype}", c, m)
    # Complex goes through view_as_real in torch.distributed.
    c, m = both(dist.all_reduce, [rank_tensor(rank, (n,), torch.float32).to(torch.complex64) * (1 + 1j)], device)
    check_same("all_reduce complex", c, m)

    for src in (0, world - 1):
        c, m = both(lambda t: dist.broadcast(t, src=src), [rank_tensor(rank, (n, 2), torch.float32)], device)
        check_same(f"broadcast src={src}", c, m)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
        c, m = both(lambda t: dist.reduce(t, dst=world - 1, op=op), [rank_tensor(rank, (n,), torch.float32)], device)
        if rank == world - 1:
            check_same(f"reduce {op}", c, m)
    t = rank_tensor(rank, (n,), torch.float32).to(device)
    dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
    if rank == 0:
        want = expected_reduce([rank_tensor(r, (n,), torch.float32) for r in range(world)], dist.ReduceOp.AVG)
        assert_close(t.cpu(), want.float())

    outs_cpu = [torch.zeros(n) for _ in range(world)]
    outs_mlu = [o.to(device) for o in outs_cpu]
    dist.all_gather(outs_cpu, rank_tensor(rank, (n,), torch.float32))
    dist.all_gather(outs_mlu, rank_tensor(rank, (n,), torch.float32).to(device))
    check_same("all_gather", outs_cpu, [o.cpu() for o in outs_mlu])

    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
        inputs = [rank_tensor(rank, (n,), torch.float32, seed=s) for s in range(world)]
        out_mlu = torch.zeros(n, device=device)
        dist.reduce_scatter(out_mlu, [i.to(device) for i in inputs], op=op)
        want = expected_reduce([rank_tensor(r, (n,), torch.float32, seed=rank) for r in range(world)], op).float()
        assert_close(out_mlu.cpu(), want, rtol=1e-5, atol=1e-5, msg=lambda s: f"reduce_scatter {op}: {s}")
        full = rank_tensor(rank, (world * n,), torch.float32)
        out_mlu = torch.zeros(n, device=device)
        dist.reduce_scatter_tensor(out_mlu, full.to(device), op=op)
        want = expected_reduce([rank_tensor(r, (world * n,), torch.float32) for r in range(world)], op).float()
        assert_close(out_mlu.cpu(), want[rank * n:(rank + 1) * n], rtol=1e-5, atol=1e-5)
    t_in = rank_tensor(rank, (world * n,), torch.float32)
    out_mlu = torch.zeros(n, device=device)
    dist.reduce_scatter_tensor(out_mlu, t_in.to(device), op=dist._make_nccl_premul_sum(2.0))
    want = 2 * sum(rank_tensor(r, (world * n,), torch.float32) for r in range(world))
    assert_close(out_mlu.cpu(), want[rank * n:(rank + 1) * n])
    assert_close(t_in, rank_tensor(rank, (world * n,), torch.float32))  # the input is left alone

    # all_to_all_single, even and uneven splits; all_to_all on lists.
    c, m = both(dist.all_to_all_single, [torch.zeros(world * n), rank_tensor(rank, (world * n,), torch.float32)], device)
    check_same("all_to_all_single", c, m)
    in_splits = [r + 1 for r in range(world)]           # to rank r: r + 1 elements
    out_splits = [rank + 1] * world                     # from each rank: rank + 1 elements
    src = rank_tensor(rank, (sum(in_splits),), torch.float32)
    c, m = both(lambda o, i: dist.all_to_all_single(o, i, out_splits, in_splits),
                [torch.zeros(sum(out_splits)), src], device)
    check_same("all_to_all_single uneven", c, m)
    ins = [rank_tensor(rank, (3,), torch.float32, seed=r) for r in range(world)]
    outs_c = [torch.zeros(3) for _ in range(world)]
    outs_m = [o.to(device) for o in outs_c]
    dist.all_to_all(outs_c, ins)
    dist.all_to_all(outs_m, [i.to(device) for i in ins])
    check_same("all_to_all", outs_c, [o.cpu() for o in outs_m])

    # gather / scatter to and from the last rank.
    root = world - 1
    g_c = [torch.zeros(n) for _ in range(world)] if rank == root else None
    g_m = [t.to(device) for t in g_c] if rank == root else None
    dist.gather(rank_tensor(rank, (n,), torch.float32), g_c, dst=root)
    dist.gather(rank_tensor(rank, (n,), torch.float32).to(device), g_m, dst=root)
    if rank == root:
        check_same("gather", g_c, [t.cpu() for t in g_m])
    s_in = [rank_tensor(r, (n,), torch.float32, seed=9) for r in range(world)] if rank == root else None
    s_c, s_m = torch.zeros(n), torch.zeros(n, device=device)
    dist.scatter(s_c, s_in, src=root)
    dist.scatter(s_m, [t.to(device) for t in s_in] if rank == root else None, src=root)
    check_same("scatter", [s_c], [s_m.cpu()])

    # Point to point: a ring of send/recv, isend/irecv, and batch_isend_irecv.
    right, left = (rank + 1) % world, (rank - 1) % world
    if rank % 2 == 0:
        dist.send(rank_tensor(rank, (n,), torch.float32).to(device), right)
        got = torch.zeros(n, device=device)
        dist.recv(got, left)
    else:
        got = torch.zeros(n, device=device)
        dist.recv(got, left)
        dist.send(rank_tensor(rank, (n,), torch.float32).to(device), right)
    assert_close(got.cpu(), rank_tensor(left, (n,), torch.float32))
    got = torch.zeros(n, device=device)
    reqs = [dist.isend(rank_tensor(rank, (n,), torch.float32).to(device), right), dist.irecv(got, left)]
    for q in reqs:
        q.wait()
    assert_close(got.cpu(), rank_tensor(left, (n,), torch.float32))
    got = torch.zeros(n, device=device)
    ops = [dist.P2POp(dist.isend, rank_tensor(rank, (n,), torch.float32).to(device), right),
           dist.P2POp(dist.irecv, got, left)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    assert_close(got.cpu(), rank_tensor(left, (n,), torch.float32))
    got = torch.zeros(n, device=device)
    if rank == 0:
        for r in range(1, world):
            src_rank = dist.recv(got)  # any source
            assert_close(got.cpu(), rank_tensor(src_rank, (n,), torch.float32))
    else:
        dist.send(rank_tensor(rank, (n,), torch.float32).to(device), 0)

    # Coalesced forms.
    ts = [rank_tensor(rank, (k + 1,), torch.float32, seed=k).to(device) for k in range(3)]
    with dist._coalescing_manager(device=device):
        for t in ts:
            dist.all_reduce(t)
    for k, t in enumerate(ts):
        assert_close(t.cpu(), sum(rank_tensor(r, (k + 1,), torch.float32, seed=k) for r in range(world)))
    outs = [torch.zeros(world * 2, device=device) for _ in range(2)]
    with dist._coalescing_manager(device=device, async_ops=True) as cm:
        for k, o in enumerate(outs):
            dist.all_gather_into_tensor(o, rank_tensor(rank, (2,), torch.float32, seed=k).to(device))
    cm.wait()
    for k, o in enumerate(outs):
        assert_close(o.cpu(), torch.cat([rank_tensor(r, (2,), torch.float32, seed=k) for r in range(world)]))
    outs = [torch.zeros(2, device=device) for _ in range(2)]
    with dist._coalescing_manager(device=device):
        for k, o in enumerate(outs):
            dist.reduce_scatter_tensor(o, rank_tensor(rank, (world * 2,), torch.float32, seed=k).to(device))
    for k, o in enumerate(outs):
        full = sum(rank_tensor(r, (world * 2,), torch.float32, seed=k) for r in range(world))
        assert_close(o.cpu(), full[rank * 2:(rank + 1) * 2])

    # The deprecated list forms.
    ts = [rank_tensor(rank, (k + 2,), torch.float32, seed=k).to(device) for k in range(2)]
    dist.all_reduce_coalesced(ts)
    for k, t in enumerate(ts):
        assert_close(t.cpu(), sum(rank_tensor(r, (k + 2,), torch.float32, seed=k) for r in range(world)))
    outs = [[torch.zeros(k + 2, device=device) for k in range(2)] for _ in range(world)]
    dist.all_gather_coalesced(outs, [rank_tensor(rank, (k + 2,), torch.float32, seed=k).to(device) for k in range(2)])
    for r in range(world):
        for k in range(2):
            assert_close(outs[r][k].cpu(), rank_tensor(r, (k + 2,), torch.float32, seed=k))

    check_stream_safety(device, world)

    # Async handles: wait, is_completed, get_future.
    t = torch.ones(n, device=device)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    assert_close(fut.wait()[0].cpu(), torch.full((n,), float(world)))
    work.wait()
    assert work.is_completed()
    chained = dist.all_reduce(torch.ones(2, device=device), async_op=True).get_future().then(
        lambda f: f.value()[0] * 2)
    assert_close(chained.wait().cpu(), torch.full((2,), 2.0 * world))

    # Object collectives with objects that hold mlu tensors.
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "t": torch.full((2,), float(rank), device=device)})
    assert [o["rank"] for o in objs] == list(range(world))
    assert all(float(o["t"].cpu()[0]) == r for r, o in enumerate(objs))
    lst = [{"w": torch.arange(3, device=device) * 7}, "x"] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst[1] == "x" and lst[0]["w"].cpu().tolist() == [0, 7, 14]
    out = [None]
    dist.scatter_object_list(out, [torch.full((1,), float(r), device=device) for r in range(world)] if rank == 0
                             else None, src=0)
    assert float(out[0].cpu()) == rank
    g = [None] * world if rank == 0 else None
    dist.gather_object(("r", rank), g, dst=0)
    if rank == 0:
        assert g == [("r", r) for r in range(world)]

    dist.barrier()
    # torch.distributed allows monitored_barrier on Gloo groups only (as with NCCL);
    # the cncl backend forwards its own to its Gloo group.
    backend = dist.distributed_c10d._get_default_group()._get_backend(device)
    backend.monitored_barrier(datetime.timedelta(seconds=30), wait_all_ranks=True)
    dist.monitored_barrier(dist.new_group(backend="gloo"), timeout=datetime.timedelta(seconds=30))
    dist.destroy_process_group()


# ---- training: DDP, FSDP2, tensor parallelism against single-process runs ----

def gpt_mini():
    import sys
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    from gpt import GPT, GPTConfig
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2, n_embd=32))


def global_batch(world, step, per_rank=2, t=16):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randint(0, 32, (world * per_rank, t), generator=g)
    return x, torch.roll(x, -1, dims=1)


def shard(tensor, rank, world):
    return tensor.chunk(world)[rank]


def reference_params(device, world, steps, micro=1, autocast=False):
    """Single-process training on the global batch: what every data-parallel run must equal."""
    model = gpt_mini().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        for m in range(micro):
            x, y = global_batch(world, step * micro + m)
            with torch.autocast("mlu", dtype=torch.bfloat16, enabled=autocast):
                _, loss = model(x.to(device), y.to(device))
            loss.backward()
        opt.step()
        opt.zero_grad()
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def ddp_worker(rank, world, store):
    from torch.nn.parallel import DistributedDataParallel as DDP
    device = init(rank, world, store, backend="cncl", device_id=True)
    steps = 3

    def train(micro=1, autocast=False, **ddp_kwargs):
        model = DDP(gpt_mini().to(device), device_ids=[device.index], **ddp_kwargs)
        model._set_ddp_runtime_logging_sample_rate(1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for step in range(steps):
            for m in range(micro):
                x, y = global_batch(world, step * micro + m)
                ctx = model.no_sync() if m < micro - 1 else torch.autograd.graph.saved_tensors_hooks(lambda t: t,
                                                                                                  lambda t: t)
                with ctx, torch.autocast("mlu", dtype=torch.bfloat16, enabled=autocast):
                    _, loss = model(shard(x, rank, world).to(device), shard(y, rank, world).to(device))
                    loss.backward()
            opt.step()
            opt.zero_grad()
        return model, {k: v.detach().cpu() for k, v in model.module.state_dict().items()}

    want = reference_params(device, world, steps)
    model, got = train()
    for k in want:
        assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"DDP {k}: {s}")
    # DDP's timer for mlu (TimerRegistry) fills the runtime statistics.
    stats = model._get_ddp_logging_data()
    assert stats.get("avg_forward_compute_time", 0) > 0, stats
    assert stats.get("avg_backward_comm_time", 0) > 0, stats
    for kwargs in ({"static_graph": True}, {"find_unused_parameters": True}, {"bucket_cap_mb": 0.01}):
        _, got = train(**kwargs)
        for k in want:
            assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"DDP {kwargs} {k}: {s}")
    want = reference_params(device, world, steps, micro=2)
    _, got = train(micro=2)
    for k in want:
        assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"DDP no_sync {k}: {s}")
    want = reference_params(device, world, steps, autocast=True)
    _, got = train(autocast=True)
    for k in want:
        assert_close(got[k], want[k], rtol=2e-2, atol=2e-2, msg=lambda s, k=k: f"DDP autocast {k}: {s}")
    dist.destroy_process_group()


def fsdp_model(device, mesh, **kwargs):
    from torch.distributed.fsdp import fully_shard
    model = gpt_mini().to(device)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, **kwargs)
    fully_shard(model, mesh=mesh, **kwargs)
    return model


def fsdp_train(model, device, rank, world, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = global_batch(world, step)
        _, loss = model(shard(x, rank, world).to(device), shard(y, rank, world).to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
    return opt


def full_state(model):
    """The full (unsharded) state dict on the CPU; every rank gets it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    return {k: v.detach().cpu() for k, v in sd.items()}


def fsdp_worker(rank, world, store, checkpoint_dir):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    device = init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))
    want = reference_params(device, world, 3)

    for kwargs in ({}, {"reshard_after_forward": False}):
        model = fsdp_model(device, mesh, **kwargs)
        fsdp_train(model, device, rank, world)
        got = full_state(model)
        for k in want:
            assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"FSDP2 {kwargs} {k}: {s}")

    model = fsdp_model(device, mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                    reduce_dtype=torch.float32))
    fsdp_train(model, device, rank, world)
    got = full_state(model)
    for k in want:
        assert_close(got[k], want[k], rtol=5e-2, atol=5e-2, msg=lambda s, k=k: f"FSDP2 bf16 {k}: {s}")

    model = fsdp_model(device, mesh, offload_policy=CPUOffloadPolicy())
    fsdp_train(model, device, rank, world)
    got = full_state(model)
    for k in want:
        assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"FSDP2 offload {k}: {s}")

    # Meta-device init, to_empty, then the reference weights loaded into the shards.
    from torch.distributed.fsdp import fully_shard
    with torch.device("meta"):
        model = gpt_mini()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.to_empty(device=device)
    initial = gpt_mini().state_dict()
    set_model_state_dict(model, {k: v.to(device) for k, v in initial.items()},
                         options=StateDictOptions(full_state_dict=True))
    got = full_state(model)
    for k in got:
        assert_close(got[k], initial[k], msg=lambda s, k=k: f"FSDP2 meta init {k}: {s}")
    fsdp_train(model, device, rank, world)
    got = full_state(model)
    for k in want:
        assert_close(got[k], want[k], rtol=1e-4, atol=1e-5, msg=lambda s, k=k: f"FSDP2 meta init {k}: {s}")

    # Sharded checkpoint of a trained model (loaded at another world size by dcp_load_worker).
    model = fsdp_model(device, mesh)
    fsdp_train(model, device, rank, world)
    dcp.save({"model": model.state_dict()}, checkpoint_id=checkpoint_dir)
    state = full_state(model)
    if rank == 0:
        torch.save(state, os.path.join(checkpoint_dir, "..", "full.pt"))
    dist.destroy_process_group()


def dcp_load_worker(rank, world, store, checkpoint_dir):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    device = init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))
    model = fsdp_model(device, mesh)
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    model.load_state_dict(state["model"])
    got = full_state(model)
    want = torch.load(os.path.join(checkpoint_dir, "..", "full.pt"))
    for k in want:
        assert_close(got[k], want[k], msg=lambda s, k=k: f"DCP reload at world {world}, {k}: {s}")
    dist.destroy_process_group()


def tp_worker(rank, world, store):
    import torch.nn as nn
    from torch.distributed._functional_collectives import all_reduce as funcol_all_reduce
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)
    device = init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))

    x = torch.randn(8, 12, generator=torch.Generator().manual_seed(1))
    d = distribute_tensor(x.to(device), mesh, [Shard(0)])
    assert_close(d.redistribute(mesh, [Replicate()]).to_local().cpu(), x)
    assert_close(d.full_tensor().cpu(), x)
    assert_close(funcol_all_reduce(torch.ones(3, device=device), "sum", mesh).cpu(), torch.full((3,), float(world)))

    def mlp():
        torch.manual_seed(3)
        return nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)).to(device)

    inp = torch.randn(2, 4, 16, generator=torch.Generator().manual_seed(2)).to(device)
    ref = mlp()
    ref_out = ref(inp)
    ref_out.sum().backward()
    # Column- then row-wise linear layers: replicated input and output.
    model = parallelize_module(mlp(), mesh, {"1": ColwiseParallel(), "3": RowwiseParallel()})
    out = model(inp)
    assert_close(out.cpu(), ref_out.detach().cpu(), rtol=1e-4, atol=1e-5)
    out.sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        assert_close(g.cpu(), q.grad.cpu(), rtol=1e-4, atol=1e-5, msg=lambda s, n=name: f"TP grad {n}: {s}")
    # Sequence parallel: the LayerNorm on a sequence shard, activations sharded along the sequence.
    model = parallelize_module(mlp(), mesh, {"0": SequenceParallel(), "1": ColwiseParallel(input_layouts=Shard(1)),
                                             "3": RowwiseParallel(output_layouts=Shard(1))})
    local = model(inp.chunk(world, dim=1)[rank])
    assert_close(local.cpu(), ref_out.detach().chunk(world, dim=1)[rank].cpu(), rtol=1e-4, atol=1e-5)
    # loss_parallel: the logits stay sharded over the classes, the cross-entropy reduces across ranks.
    from torch.distributed.tensor.parallel import loss_parallel
    labels = torch.randint(0, 16, (2, 4), generator=torch.Generator().manual_seed(4))
    labels[0, 0] = -100
    want = nn.functional.cross_entropy(ref(inp).flatten(0, 1).float(), labels.flatten().to(device), reduction="sum")
    model = parallelize_module(mlp(), mesh, {"3": ColwiseParallel(use_local_output=False)})
    with loss_parallel():
        got = nn.functional.cross_entropy(model(inp).flatten(0, 1).float(), labels.flatten().to(device),
                                          reduction="sum")
        got.backward()
        assert_close(got.item(), want.item(), rtol=1e-4, atol=1e-4)
    dist.destroy_process_group()


# ---- failures ----

def misuse_worker(rank, world, store):
    import pytest
    device = init(rank, world, store, backend="cncl", timeout=30)
    ok = torch.ones(4, device=device)
    dist.all_reduce(ok)
    other = torch.device("mlu", (device.index + 1) % torch.mlu.device_count())
    with pytest.raises(ValueError, match=r"cncl all_reduce: tensor on mlu:\d, but rank \d .* communicates from mlu:"):
        dist.all_reduce(torch.ones(4, device=other))
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(torch.ones(4, 4, device=device).t()[::2])
    with pytest.raises(ValueError, match="dtype Short is not supported"):
        dist.all_reduce(torch.ones(4, dtype=torch.int16, device=device))
    with pytest.raises(ValueError, match="bitwise reduce ops need integer or bool tensors"):
        dist.all_reduce(torch.ones(4, device=device), op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match="all_gather_into_tensor: the output has 3 elements"):
        dist.all_gather_into_tensor(torch.empty(3, device=device), torch.ones(4, device=device))
    # Rooted collectives check the root at the call (Note [Rooted collectives check their root at the call]).
    for bad_root in (world + 3, -2):
        with pytest.raises(ValueError, match=f"cncl broadcast: invalid root rank {bad_root} "):
            dist.broadcast(torch.ones(4, device=device), group_src=bad_root)
        with pytest.raises(ValueError, match=f"cncl reduce: invalid root rank {bad_root} "):
            dist.reduce(torch.ones(4, device=device), group_dst=bad_root)
        with pytest.raises(ValueError, match=f"cncl gather: invalid root rank {bad_root} "):
            dist.gather(torch.ones(4, device=device), group_dst=bad_root)
        with pytest.raises(ValueError, match=f"cncl scatter: invalid root rank {bad_root} "):
            dist.scatter(torch.empty(4, device=device), group_src=bad_root)
    with pytest.raises(ValueError, match=f"cncl broadcast: invalid root rank {world + 3} "):
        dist.broadcast(torch.ones(4, device=device), src=world + 3)  # a global rank, as users write it
    if rank == 0:
        with pytest.raises(ValueError, match=r"cncl gather: the root needs one list of world_size \(2\) outputs"):
            dist.gather(torch.ones(4, device=device), [torch.empty(4, device=device)], dst=0)
        with pytest.raises(ValueError, match="cncl scatter: inputs must match the tensor's dtype and size"):
            dist.scatter(torch.empty(4, device=device), [torch.ones(3, device=device)] * world, src=0)
    # A collective the ranks disagree on: an error naming the op on every rank; the group stays usable.
    # Raised by wait() when already known, else at the waiting stream's next synchronization.
    mismatch = (dist.DistBackendError, torch.AcceleratorError)
    with pytest.raises(mismatch, match=r"all_reduce.*numel=[45], op=SUM.*numel=[45]"):
        t = torch.ones(4 + rank, device=device)
        dist.all_reduce(t)
        t.cpu()
        dist.barrier()
    with pytest.raises(mismatch, match=r"rank \d called all_(reduce|gather_into_tensor)\(dtype=Float.*all_"):
        if rank == 0:
            dist.all_reduce(torch.ones(2, device=device))
        else:
            dist.all_gather_into_tensor(torch.empty(2 * world, device=device), torch.ones(2, device=device))
        torch.mlu.synchronize()
        dist.barrier()
    torch.mlu.synchronize()
    ok = torch.ones(4, device=device)
    dist.all_reduce(ok)
    assert_close(ok.cpu(), torch.full((4,), float(world)))
    dist.destroy_process_group()


def non_current_device_worker(rank, world, store):
    """Each rank's collectives run on its device while another device is current and busy, in the stream order
    of the device the tensors live on."""
    device = init(rank, world, store, backend="cncl")
    other = (device.index + 1) % torch.mlu.device_count()
    inputs = [rank_tensor(r, (64,), torch.float32) for r in range(world)]
    settled = inputs[rank].to(device)
    torch.mlu.synchronize(device)
    torch.mlu.set_device(other)
    torch.mlu._sleep(20_000_000)  # the current device is busy
    with torch.mlu.device(device):
        torch.mlu._sleep(20_000_000)  # and the clones below are written behind 20 ms of work
        x, y, z = settled.clone(), settled.clone(), settled.clone()
    dist.all_reduce(x)
    dist.broadcast(y, src=0)
    gathered = [torch.empty(64, device=device) for _ in range(world)]
    dist.all_gather(gathered, z)
    assert torch.mlu.current_device() == other, "a collective changed the current device"
    assert_close(x.cpu(), sum(inputs))
    assert_close(y.cpu(), inputs[0])
    for got, ref in zip(gathered, inputs):
        assert_close(got.cpu(), ref)
    dist.destroy_process_group()


def lost_rank_worker(rank, world, store, how):
    """Rank 1 dies (or hangs past the timeout); rank 0 must fail with a clear error, not hang. "exits in shared
    memory": run without the agreement exchange (TORCH_CNCL_CHECK_COLLECTIVES=0), rank 0's all_reduce waits for
    the dead peer inside the shared-memory transfer (Note [cncl shared-memory all-reduce]), which names it."""
    import pytest
    timeout = 4
    device = init(rank, world, store, backend="cncl", timeout=timeout)
    if how == "exits in shared memory":
        assert dist.group.WORLD._get_backend(device).all_reduce_transport == "shared memory"
    dist.all_reduce(torch.ones(2, device=device))
    torch.mlu.synchronize()
    if rank == 1:
        if how != "hangs":
            os._exit(0)
        time.sleep(timeout + 6)  # hangs: never joins the next collective
        os._exit(0)
    start = time.monotonic()
    t = torch.ones(2, device=device)
    # The transfer's own failure, or the watchdog's timeout (Note [cncl watchdog]), whichever comes first.
    expected = (r"rank 1 \(pid \d+\) exited during a shared-memory all_reduce" if how == "exits in shared memory"
                else r"cncl all_reduce failed on rank 0|Watchdog caught collective operation timeout")
    with pytest.raises((dist.DistBackendError, torch.AcceleratorError), match=expected):
        dist.all_reduce(t)
        t.cpu()  # the failure belongs to the waiting stream: raised at its next synchronization
    assert time.monotonic() - start < timeout + 10
    with pytest.raises(dist.DistBackendError, match="broken by an earlier failure"):
        dist.all_reduce(torch.ones(2, device=device))
    # The device itself is fine.
    assert float((torch.ones(2, device=device) * 3).sum().cpu()) == 6.0
    os._exit(0)  # the peer is gone: skip destroy_process_group's shutdown handshake


def default_backend_worker(rank, world, store):
    """init_process_group() without a backend: torch picks the accelerator's, as cuda -> nccl."""
    torch.mlu.set_device(rank)
    dist.init_process_group(init_method=f"file://{store}", rank=rank, world_size=world)
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("mlu"))
    assert isinstance(backend, dist.ProcessGroupCNCL) and backend.name() == "cncl", dist.get_backend_config()
    t = torch.full((3,), float(rank), device="mlu")
    dist.all_reduce(t)
    assert t.tolist() == [float(sum(range(world)))] * 3
    check_stream_safety(torch.device("mlu", rank), world)
    dist.barrier()
    # Blocking wait (TORCH_CNCL_BLOCKING_WAIT=1 in this test): wait() returns with the transfer done.
    work = dist.all_reduce(torch.ones(2, device="mlu"), async_op=True)
    work.wait()
    assert work.is_completed() and work.is_success()
    dist.destroy_process_group()


def teardown_worker(rank, world, store):
    """TORCH_CNCL_ASYNC_ERROR_HANDLING=1: a failed collective terminates the process, as NCCL's TearDown."""
    device = init(rank, world, store, backend="cncl", timeout=4)
    dist.all_reduce(torch.ones(2, device=device))
    torch.mlu.synchronize()
    if rank == 1:
        os._exit(0)
    t = torch.ones(2, device=device)
    dist.all_reduce(t)
    t.cpu()
    time.sleep(30)  # not reached: the failed transfer aborts the process first


def injected_collective_worker(rank, world, store):
    """A fault injected into rank 0's collective kernel (Note [A collective task that never ran]): rank 0 fails at
    once, rank 1 when its transfer times out; the group is broken, the devices work, memory is back at baseline."""
    import pytest
    timeout = 4
    device = init(rank, world, store, backend="cncl", timeout=timeout)
    dist.all_reduce(torch.ones(2, device=device))
    torch.mlu.synchronize()
    baseline = torch.mlu.memory_allocated(device)
    start = time.monotonic()
    t = torch.ones(2, device=device)
    expected = ("its device task did not run" if rank == 0 else "")
    with torch.mlu.fault_injection.inject("kernel:cncl collective@1" if rank == 0 else ""):
        with pytest.raises((dist.DistBackendError, torch.AcceleratorError),
                           match=rf"cncl all_reduce failed on rank {rank}: {expected}"):
            dist.all_reduce(t)
            t.cpu()
    assert time.monotonic() - start < timeout + 8
    with pytest.raises(dist.DistBackendError, match="broken by an earlier failure"):
        dist.all_reduce(torch.ones(2, device=device))
    assert float((torch.ones(2, device=device) * 3).sum().cpu()) == 6.0
    del t
    if rank == 0:  # the failed task is also its communication stream's error, reported once by a device sync
        with pytest.raises(torch.AcceleratorError, match="cncl collective: injected fault"):
            torch.mlu.synchronize()
    torch.mlu.synchronize()
    assert torch.mlu.memory_allocated(device) == baseline
    os._exit(0)  # the group is broken: skip destroy_process_group's shutdown handshake


# ---- all_reduce through shared memory (Note [cncl shared-memory all-reduce]) ----

def shared_memory_inputs(rank, world, dtype, op, shape, seed):
    """Every rank's input, chosen so that the reduction is exact in `dtype` (quarters for sums, small integers for
    products), so any order of combination gives the same bits."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR) or not dtype.is_floating_point:
        return torch.randint(0, 16, shape, generator=g).to(dtype)
    if op == dist.ReduceOp.PRODUCT:
        return torch.randint(-3, 4, shape, generator=g).to(dtype)
    return (torch.randint(-32, 33, shape, generator=g) / 4).to(dtype)


def expected_all_reduce(inputs, op, world):
    stacked = torch.stack([t.double() for t in inputs])
    bitwise = {dist.ReduceOp.BAND: torch.bitwise_and, dist.ReduceOp.BOR: torch.bitwise_or,
               dist.ReduceOp.BXOR: torch.bitwise_xor}
    if op in bitwise:
        out = inputs[0].clone()
        for t in inputs[1:]:
            out = bitwise[op](out, t)
        return out
    if op == dist.ReduceOp.AVG:
        total = stacked.sum(0)
        if inputs[0].dtype.is_floating_point:
            return (total.to(inputs[0].dtype) / world).to(inputs[0].dtype)
        return torch.div(total, world, rounding_mode="trunc").to(inputs[0].dtype)
    return expected_reduce(inputs, op).to(inputs[0].dtype)


def shared_memory_worker(rank, world, store, transport):
    """all_reduce over every op the shared-memory transport takes, its dtypes, sizes from empty to several chunks
    (a slot is at most 8 MiB), a channels-last tensor and a coalesced pair, against the arithmetic of every rank's
    input; `transport` is what the group must report using."""
    device = init(rank, world, store)
    backend = dist.group.WORLD._get_backend(device)
    assert backend.all_reduce_transport == transport, backend.all_reduce_transport
    integer_ops = [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    cases = []
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
                  torch.int64):
        ops = REDUCE_OPS + (integer_ops if not dtype.is_floating_point else [])
        cases += [(dtype, op, (n,)) for op in ops for n in (0, 1, 4099)]
    cases += [(torch.float32, dist.ReduceOp.SUM, (5_000_003,)), (torch.bfloat16, dist.ReduceOp.MAX, (9_000_001,)),
              (torch.float32, dist.ReduceOp.AVG, (3, 1_000_001)), (torch.float32, dist.ReduceOp.SUM, (2, 8, 5, 3))]
    for seed, (dtype, op, shape) in enumerate(cases):
        inputs = [shared_memory_inputs(r, world, dtype, op, shape, seed) for r in range(world)]
        t = inputs[rank].to(device)
        if len(shape) == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        dist.all_reduce(t, op=op)
        exact = op != dist.ReduceOp.AVG or not dtype.is_floating_point
        assert_close(t.cpu(), expected_all_reduce(inputs, op, world), **({"rtol": 0, "atol": 0} if exact else {}),
                     msg=lambda s: f"all_reduce {op} {dtype} {shape}: {s}")
    # Coalesced (all_reduce_coalesced): both tensors in one communication task.
    inputs = [[shared_memory_inputs(r, world, torch.float32, dist.ReduceOp.SUM, (n,), n) for r in range(world)]
              for n in (1001, 3_000_017)]
    tensors = [per_rank[rank].to(device) for per_rank in inputs]
    with dist._coalescing_manager(device=device):
        for t in tensors:
            dist.all_reduce(t)
    for t, per_rank in zip(tensors, inputs):
        assert_close(t.cpu(), expected_all_reduce(per_rank, dist.ReduceOp.SUM, world), rtol=0, atol=0)
    dist.destroy_process_group()
