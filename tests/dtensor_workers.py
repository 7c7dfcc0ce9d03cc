"""Worker functions of tests/test_distributed_attention.py, run in spawned ranks (DTensor x attention).

Each worker compares DTensor runs with the same computation on one device in the same rank; a failed check
raises, and torch.multiprocessing.spawn re-raises it in the test with the rank's traceback.
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.testing import assert_close

from dist_workers import init

TP_EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_examples", "tensor_parallelism")


def attention_cases():
    """(heads, kv_heads, q 3-D, causal, bias shape, placements of q, k, v, placement the output must keep).

    The output's placement shows which strategy ran: where none can (a causal query shard, key/value heads that
    do not split among the ranks as the query heads do) the inputs are replicated, and the results stay right."""
    from torch.distributed.tensor import Replicate, Shard
    R = Replicate()
    heads, batch, queries = [Shard(1)] * 3, [Shard(0)] * 3, [Shard(2), R, R]
    B, L, S = 2, 6, 5
    for kv_heads in (4, 2):
        for causal in (False, True):
            biases = [None] if causal else [None, (B, 4, L, S), (1, 4, L, S), (L, S), (B, 1, 1, S)]
            for bias in biases:
                for placements, kept in ((heads, Shard(1)), (batch, Shard(0)), (queries, Shard(2)), ([R] * 3, R)):
                    yield 4, kv_heads, False, causal, bias, placements, R if placements is queries and causal else kept
    # 6 query heads split 3 + 3 and 3 key/value heads 2 + 1: rank 1's query heads 3-5 need key/value heads 1-2.
    yield 6, 3, False, False, None, heads, R
    yield 6, 3, False, True, None, batch, Shard(0)
    for causal in (False, True):  # 3-D (heads, length, dim): heads and queries are dims 0 and 1
        yield 4, 4, True, causal, None, [Shard(0)] * 3, Shard(0)
        yield 4, 4, True, causal, None, [Shard(1), R, R], R if causal else Shard(1)


def attend(inputs, three_d, causal, gqa):
    """F.scaled_dot_product_attention, or for 3-D inputs mlu's op itself: SDPA sends those to its math path
    (on CUDA too), whose causal mask is a plain tensor that DTensor refuses to add."""
    bias = inputs[3] if len(inputs) > 3 else None
    if three_d:
        return torch.ops.aten._scaled_dot_product_fused_attention_overrideable(*inputs[:3], bias, 0.0, causal)[0]
    return F.scaled_dot_product_attention(*inputs[:3], attn_mask=bias, is_causal=causal, enable_gqa=gqa)


def sdpa_sharding_worker(rank, world, store):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, distribute_tensor
    device = init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (world,))
    g = torch.Generator().manual_seed(0)
    B, L, S, E = 2, 6, 5, 8
    for heads, kv_heads, three_d, causal, bias_shape, placements, kept in attention_cases():
        lead = () if three_d else (B,)
        q = torch.randn(*lead, heads, L, E, generator=g)
        k, v = (torch.randn(*lead, kv_heads, S, E, generator=g) for _ in range(2))
        bias = torch.randn(bias_shape, generator=g) if bias_shape else None
        grad = torch.randn(*lead, heads, L, E, generator=g)
        what = f"heads {heads}/{kv_heads}, 3-D {three_d}, causal {causal}, bias {bias_shape}, {placements}"

        inputs = [t.to(device).requires_grad_() for t in (q, k, v) + ((bias,) if bias is not None else ())]
        out = attend(inputs, three_d, causal, kv_heads != heads)
        out.backward(grad.to(device))

        d_inputs = [distribute_tensor(t.detach(), mesh, [p]).requires_grad_()
                    for t, p in zip(inputs, placements + [Replicate()])]
        d_out = attend(d_inputs, three_d, causal, kv_heads != heads)
        assert d_out.placements == (kept,), f"{what}: output {d_out.placements}, expected {kept}"
        d_out.backward(distribute_tensor(grad.to(device), mesh, d_out.placements))
        assert_close(d_out.full_tensor(), out, msg=lambda m: f"{what}: output: {m}")
        for name, d, t in zip(("q", "k", "v", "bias"), d_inputs, inputs):
            assert_close(d.grad.full_tensor(), t.grad, msg=lambda m, n=name: f"{what}: grad of {n}: {m}")

    check_compiled(mesh, device)
    check_optimizers(mesh, device)

    # The debug mask the op's meta function does not declare is refused, and the process carries on.
    import pytest
    d = distribute_tensor(torch.randn(B, 4, L, E, device=device), mesh, [Replicate()])
    with pytest.raises(NotImplementedError, match="return_debug_mask is not supported"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(d, d, d, None, 0.5, False, True)
    dist.barrier()
    dist.destroy_process_group()


def check_compiled(mesh, device):
    """Head-sharded causal attention inside torch.compile (Dynamo traces DTensor; the strategies run on fake
    tensors), forward and backward, against eager on whole tensors. Rank 1 compiles first, so rank 0 finds rank
    1's compiled code in the on-disk caches: it must not take it (Note [DTensor's compile cache key])."""
    from torch.distributed.tensor import Shard, distribute_tensor

    def block(q, k, v):
        return F.scaled_dot_product_attention(q * 2, k, v, is_causal=True).relu()

    g = torch.Generator().manual_seed(7)
    inputs = [torch.randn(2, 4, 8, 16, generator=g).to(device).requires_grad_() for _ in range(3)]
    out = block(*inputs)
    out.sum().backward()
    d_inputs = [distribute_tensor(t.detach(), mesh, [Shard(1)]).requires_grad_() for t in inputs]
    if dist.get_rank() == 0:
        dist.barrier()
    d_out = torch.compile(block)(*d_inputs)
    assert d_out.placements == (Shard(1),), d_out.placements
    d_out.sum().backward()
    if dist.get_rank() == 1:
        dist.barrier()
    assert_close(d_out.full_tensor(), out, msg=lambda m: f"compiled: {m}")
    for name, d, t in zip("qkv", d_inputs, inputs):
        assert_close(d.grad.full_tensor(), t.grad, msg=lambda m, n=name: f"compiled: grad of {n}: {m}")


def check_optimizers(mesh, device):
    """Fused SGD and Adagrad (and AdamW, which DTensor shards itself) on parameters sharded unevenly and
    replicated, against the same steps on whole tensors (Note [Sharding the optimizers' list ops])."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    optimizers = {"SGD": lambda p, **kw: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, **kw),
                  "SGD_plain": lambda p, **kw: torch.optim.SGD(p, lr=0.1, **kw),
                  "Adagrad": lambda p, **kw: torch.optim.Adagrad(p, lr=0.1, weight_decay=0.01, **kw),
                  "AdamW": lambda p, **kw: torch.optim.AdamW(p, lr=0.1, **kw)}
    for name, make in optimizers.items():
        g = torch.Generator().manual_seed(5)
        values = [torch.randn(5, 3, generator=g), torch.randn(4, generator=g)]
        grads = [[torch.randn(v.shape, generator=g) for v in values] for _ in range(3)]
        plain = [torch.nn.Parameter(v.to(device)) for v in values]
        sharded = [torch.nn.Parameter(distribute_tensor(v.to(device), mesh, [p]))
                   for v, p in zip(values, (Shard(0), Replicate()))]
        for params, wrap in ((plain, lambda grad, p: grad),
                             (sharded, lambda grad, p: distribute_tensor(grad, mesh, p.placements))):
            opt = make(params, fused=True)
            for step in grads:
                for p, grad in zip(params, step):
                    p.grad = wrap(grad.to(device), p)
                opt.step()
        for p, q in zip(sharded, plain):
            assert_close(p.full_tensor(), q.detach(), msg=lambda m, n=name: f"fused {n} on DTensor: {m}")


def parallelize_as_fsdp_tp_example(model, tp_mesh):
    """fsdp_tp_example.py's tensor/sequence-parallel plan for its Llama 2 (the example is a script: its plan is
    written out here, as there), applied over `tp_mesh`; returns the model."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    model = parallelize_module(model, tp_mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
    })
    for block in model.layers:
        parallelize_module(block, tp_mesh, {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1), Replicate()),
                                            desired_input_layouts=(Replicate(), Replicate())),
            "attention.wq": ColwiseParallel(use_local_output=False),
            "attention.wk": ColwiseParallel(use_local_output=False),
            "attention.wv": ColwiseParallel(use_local_output=False),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            "feed_forward.w3": ColwiseParallel(),
        })
    return model


def llama_2d_worker(rank, world, store, steps=3):
    """pytorch/examples' Llama 2 with the example's FSDP2 x TP plan (dp 2 x tp 2) against one device."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    sys.path.insert(0, TP_EXAMPLE)
    from llama2_model import ModelArgs, Transformer
    device = init(rank, world, store, backend="cncl")
    mesh = init_device_mesh("mlu", (2, world // 2), mesh_dim_names=("dp", "tp"))
    dp_rank, dp_size = mesh["dp"].get_local_rank(), mesh["dp"].size()
    args = ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=96, multiple_of=32, max_seq_len=16)

    def llama():
        torch.manual_seed(0)
        return Transformer.from_model_args(args).to(device)

    model = parallelize_as_fsdp_tp_example(llama(), mesh["tp"])
    model = fully_shard(model, mesh=mesh["dp"])
    reference = llama()
    optimizers = [torch.optim.AdamW(m.parameters(), lr=3e-3, foreach=True) for m in (model, reference)]

    for step in range(steps):
        tokens = torch.randint(96, (2 * dp_size, 16), generator=torch.Generator().manual_seed(step)).to(device)
        targets = tokens.roll(-1, dims=1)
        mine = slice(2 * dp_rank, 2 * dp_rank + 2)
        loss = F.cross_entropy(model(tokens[mine]).flatten(0, 1), targets[mine].flatten())
        ref_loss = F.cross_entropy(reference(tokens).flatten(0, 1), targets.flatten())
        for lo in (loss, ref_loss):
            lo.backward()
        dist.all_reduce(loss.detach(), group=mesh["dp"].get_group())
        assert_close(loss.detach() / dp_size, ref_loss.detach(), rtol=1e-4, atol=1e-5,
                     msg=lambda m: f"step {step} loss: {m}")
        for opt in optimizers:
            opt.step()
            opt.zero_grad()
    ref_params = dict(reference.named_parameters())
    for name, p in model.named_parameters():
        assert_close(p.full_tensor(), ref_params[name].detach(), rtol=1e-4, atol=1e-5,
                     msg=lambda m, n=name: f"2-D {n}: {m}")
    dist.destroy_process_group()
