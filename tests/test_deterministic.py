"""torch.use_deterministic_algorithms(True) on mlu as on CUDA (docs/accuracy.md): new memory filled, index_put_'s
duplicate writes resolved in order, the ops CUDA lacks a deterministic kernel for deterministic here (so no
error), max_unpool's error as CUDA's, two training runs bitwise equal, and a busy compute pool changing no bit."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def deterministic():
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_new_memory_is_filled(deterministic, dtype):
    """NaN for floating types, the largest value for the others, as ATen's empty and resize_ on CPU and CUDA."""
    def filled(t):
        t = t.cpu()
        if dtype.is_floating_point:
            return bool(t.isnan().all())
        return bool((t == (True if dtype == torch.bool else torch.iinfo(dtype).max)).all())

    assert filled(torch.empty(5, dtype=dtype, device="mlu"))
    assert filled(torch.empty_strided((2, 3), (1, 2), dtype=dtype, device="mlu"))
    assert filled(torch.empty_like(torch.zeros(4, dtype=dtype, device="mlu")))
    grown = torch.zeros(2, dtype=dtype, device="mlu")
    grown.resize_(6)
    assert not bool(grown[:2].cpu().any()) and filled(grown[2:])


def test_index_put_duplicates_resolve_in_order(deterministic):
    n = 1 << 20
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 64, (n,), generator=g)  # every position written many times
    values = torch.randn(n, generator=g)
    want = torch.zeros(64).index_put_((index,), values)  # the CPU: the last write wins
    for _ in range(3):
        got = torch.zeros(64, device="mlu").index_put_((index.to("mlu"),), values.to("mlu"))
        assert torch.equal(got.cpu(), want)


def test_ops_without_a_deterministic_cuda_kernel_are_deterministic_here(deterministic):
    """CUDA raises for these under deterministic mode; mlu's kernels are deterministic, so they run and repeat
    bit for bit."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 16, 16, generator=g).to("mlu").requires_grad_()
    index = torch.randint(0, 8, (4096,), generator=g).to("mlu")
    src = torch.randn(4096, generator=g).to("mlu")
    weight = torch.randn(8, 5, generator=g).to("mlu").requires_grad_()

    def run():
        out = [torch.zeros(8, device="mlu").index_add_(0, index, src),
               torch.zeros(8, device="mlu").scatter_add_(0, index, src),
               torch.zeros(8, device="mlu").scatter_reduce_(0, index, src, "prod"),
               src.reshape(64, 64).median(dim=1)[0], src.cumsum(0), src.reshape(64, 64).kthvalue(3, dim=1)[0]]
        loss = (F.avg_pool2d(x, 3, 2).sum() + F.adaptive_avg_pool2d(x, 5).sum()
                + F.interpolate(x, scale_factor=2, mode="bilinear").sum()
                + F.pad(x, (2, 2, 2, 2), mode="reflect").square().sum()
                + F.embedding_bag(index[:64].reshape(16, 4) % 8, weight, mode="max").sum())
        grads = torch.autograd.grad(loss, (x, weight))
        return [t.detach().cpu() for t in (*out, *grads)]

    first, second = run(), run()
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_max_unpool_raises_as_on_cuda(deterministic):
    x = torch.randn(1, 1, 4, 4, device="mlu")
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(RuntimeError, match="max_unpooling2d_forward_out does not have a deterministic"):
        F.max_unpool2d(pooled, indices, 2)


TRAIN = """
import hashlib, sys
import torch
import torch_mlu  # noqa: F401
sys.path.insert(0, sys.argv[1])
from gpt import GPT, GPTConfig
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
model = GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=4, n_embd=64, dropout=0.1)).to("mlu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1)
for step in range(4):
    x = torch.randint(0, 64, (4, 32), generator=g).to("mlu")
    with torch.autocast("mlu", dtype=torch.bfloat16):
        _, loss = model(x, x)
    loss.backward()
    opt.step()
    opt.zero_grad()
digest = hashlib.sha256()
for p in model.parameters():
    digest.update(p.detach().cpu().numpy().tobytes())
print(digest.hexdigest(), float(loss))
"""


def test_two_training_runs_are_bitwise_equal():
    """The demo's GPT (dropout on, bfloat16 autocast, AdamW), four steps, in two processes."""
    runs = [subprocess.run([sys.executable, "-c", TRAIN, os.path.join(ROOT, "examples")], capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout == runs[1].stdout, (runs[0].stdout, runs[1].stdout)


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs a second device to hold the compute pool")
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_training_steps_do_not_depend_on_a_busy_compute_pool(deterministic, compiled, released_graphs):
    """While another device holds the shared compute pool, parallel loops run on their calling thread alone and a
    compiled kernel's team has one member: the kernels' work splits (fixed chunks merged in order) must give the
    same bits as on an idle pool."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from gpt import GPT, GPTConfig

    torch.manual_seed(0)
    # One layer: the split points are per kernel, so a second, identical layer adds compile time only. One
    # model for both runs, reset to the same start, so the compiled one is traced and compiled once.
    model = GPT(GPTConfig(vocab_size=256, block_size=64, n_layer=1, n_head=4, n_embd=128, dropout=0.0)).to("mlu")
    start = {k: v.clone() for k, v in model.state_dict().items()}
    step_model = torch.compile(model) if compiled else model
    x = torch.randint(0, 256, (8, 64), device="mlu")

    def train(busy):
        model.load_state_dict(start)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for step in range(3):
            gate = None
            if busy and step > 0:  # the first step compiles
                with torch.mlu.device(1):
                    gate = torch_mlu._C._StreamGate(120.0, hold_pool=True)
            _, loss = step_model(x, x)
            loss.backward()
            opt.step()
            opt.zero_grad()
            torch.mlu.synchronize(0)
            if gate is not None:
                gate.open()
                torch.mlu.synchronize(1)
        return [p.detach().cpu() for p in model.parameters()]

    idle, busy = train(busy=False), train(busy=True)
    assert all(torch.equal(a, b) for a, b in zip(idle, busy))
