"""Random numbers on mlu: the device's Philox generator, never the CPU's."""
import math

import pytest
import torch

import torch_mlu

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def test_generators_and_seeds():
    torch.mlu.init()  # default_generators is filled at initialisation, as torch.cuda's
    torch.mlu.manual_seed_all(1234)
    assert len(torch.mlu.default_generators) == torch.mlu.device_count()
    assert all(g.device.type == "mlu" for g in torch.mlu.default_generators)
    assert torch.mlu.initial_seed() == 1234
    torch.mlu.manual_seed(99)
    assert torch.mlu.initial_seed() == 99 and torch.mlu.default_generators[1].initial_seed() == 1234
    torch.manual_seed(7)  # seeds mlu too
    assert [g.initial_seed() for g in torch.mlu.default_generators] == [7, 7]
    torch.mlu.seed_all()
    seeds = {g.initial_seed() for g in torch.mlu.default_generators}
    assert len(seeds) == 1
    g = torch.Generator(device="mlu")
    assert g.device == torch.device("mlu", 0)
    assert torch.Generator(device="mlu:1").device == torch.device("mlu", 1)


def test_rng_state_layout_and_round_trip():
    torch.mlu.manual_seed(5)
    state = torch.mlu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu" and state.numel() == 16
    first = torch.rand(100, device="mlu").cpu()
    second = torch.rand(100, device="mlu").cpu()
    assert not torch.equal(first, second)
    torch.mlu.set_rng_state(state)
    assert torch.equal(torch.rand(100, device="mlu").cpu(), first)
    states = torch.mlu.get_rng_state_all()
    assert len(states) == 2
    torch.mlu.set_rng_state_all(states)
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.mlu.set_rng_state(torch.zeros(5, dtype=torch.uint8))


def test_same_seed_same_numbers_across_streams_and_layouts():
    torch.mlu.manual_seed(11)
    a = torch.randn(64, 32, device="mlu").cpu()
    torch.mlu.manual_seed(11)
    with torch.mlu.stream(torch.mlu.Stream()):
        b = torch.randn(64, 32, device="mlu")
    torch.mlu.synchronize()
    assert torch.equal(a, b.cpu())
    torch.mlu.manual_seed(11)
    c = torch.empty(32, 64, device="mlu").t()  # a transposed layout of the same shape
    c.normal_()
    assert torch.equal(c.cpu(), a)


def test_explicit_generator_and_fork_rng():
    g = torch.Generator(device="mlu").manual_seed(3)
    x = torch.rand(10, device="mlu", generator=g).cpu()
    g.manual_seed(3)
    assert torch.equal(torch.rand(10, device="mlu", generator=g).cpu(), x)
    with pytest.raises(RuntimeError, match="Expected an mlu generator"):
        torch.rand(3, device="mlu", generator=torch.Generator())
    torch.mlu.manual_seed(8)
    with torch.random.fork_rng(device_type="mlu"):
        inside = torch.rand(5, device="mlu").cpu()
    after = torch.rand(5, device="mlu").cpu()
    assert torch.equal(inside, after)  # fork_rng restored the state


def test_random_ops_do_not_use_the_cpu_fallback():
    torch_mlu.reset_fallback_report()
    x = torch.empty(100, device="mlu")
    for sample in (lambda: x.uniform_(), lambda: x.normal_(), lambda: x.bernoulli_(0.5), lambda: x.random_(0, 10),
                   lambda: x.exponential_(), lambda: x.geometric_(0.5), lambda: x.log_normal_(), lambda: x.cauchy_()):
        sample()
    torch.bernoulli(torch.full((10,), 0.5, device="mlu"))
    torch.randint(0, 5, (10,), device="mlu")
    torch.rand(4, device="mlu"), torch.randn(4, device="mlu")
    torch.nn.functional.dropout(torch.ones(100, device="mlu"), 0.5, training=True)
    torch.randperm(10, device="mlu"), torch.multinomial(torch.ones(4, device="mlu"), 2)
    report = torch_mlu.fallback_report()
    random_ops = [op for op in report if any(k in op for k in ("uniform", "normal", "bernoulli", "random",
                                                                "exponential", "geometric", "cauchy", "dropout",
                                                                "randperm", "multinomial"))]
    assert random_ops == [], report


def _moments(x):
    x = x.double()
    return x.mean().item(), x.var().item()


def _ks_statistic(samples, cdf):
    xs = torch.sort(samples.double())[0]
    n = xs.numel()
    c = cdf(xs)
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    return max((ranks / n - c).max().item(), (c - (ranks - 1) / n).max().item())


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_and_normal_statistics(dtype):
    torch.mlu.manual_seed(2024)
    n = 50_000
    u = torch.empty(n, dtype=dtype, device="mlu").uniform_(-2, 3).cpu()
    assert u.min() >= -2 and u.max() < 3
    mean, var = _moments(u)
    assert abs(mean - 0.5) < 0.03 and abs(var - 25 / 12) < 0.05
    z = torch.empty(n, dtype=dtype, device="mlu").normal_(1.5, 2.0).cpu()
    mean, var = _moments(z)
    assert abs(mean - 1.5) < 0.04 and abs(math.sqrt(var) - 2.0) < 0.04
    if dtype in (torch.float32, torch.float64):
        # Kolmogorov-Smirnov at the 1% level (critical value 1.63 / sqrt(n)); fixed seed, so never flaky
        critical = 1.63 / math.sqrt(n)
        assert _ks_statistic((u + 2) / 5, lambda t: t.clamp(0, 1)) < critical
        std_normal = (z.double() - 1.5) / 2.0
        assert _ks_statistic(std_normal, lambda t: 0.5 * (1 + torch.erf(t / math.sqrt(2)))) < critical


def test_other_distributions_statistics():
    torch.mlu.manual_seed(7)
    n = 50_000
    b = torch.empty(n, device="mlu").bernoulli_(0.3).cpu()
    assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean().item() - 0.3) < 0.01
    p = torch.linspace(0, 1, n, device="mlu")
    bt = torch.bernoulli(p).cpu()
    assert abs(bt.mean().item() - 0.5) < 0.01 and bt[:100].sum() <= 5
    e = torch.empty(n, device="mlu").exponential_(2.0).cpu()
    assert e.min() > 0 and abs(e.mean().item() - 0.5) < 0.01
    g = torch.empty(n, device="mlu").geometric_(0.25).cpu()
    assert g.min() >= 1 and abs(g.mean().item() - 4.0) < 0.1
    ln = torch.empty(n, device="mlu").log_normal_(0.0, 0.5).cpu()
    assert abs(ln.log().mean().item()) < 0.01 and abs(ln.log().std().item() - 0.5) < 0.01
    c = torch.empty(n, device="mlu").cauchy_(1.0, 2.0).cpu()
    assert abs(c.median().item() - 1.0) < 0.1


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float32, torch.float64, torch.bool])
def test_random_integer_ranges(dtype):
    torch.mlu.manual_seed(1)
    if dtype == torch.bool:
        x = torch.empty(1000, dtype=dtype, device="mlu").random_().cpu()
        assert set(x.tolist()) == {False, True}
        return
    x = torch.empty(10_000, dtype=dtype, device="mlu").random_(3, 10).cpu()
    assert x.min() == 3 and x.max() == 9
    y = torch.empty(10_000, dtype=dtype, device="mlu").random_(5).cpu()
    assert y.min() == 0 and y.max() == 4
    z = torch.empty(10_000, dtype=dtype, device="mlu").random_().cpu()
    assert z.min() >= 0
    r = torch.randint(-5, 5, (10_000,), device="mlu").cpu()
    assert r.min() == -5 and r.max() == 4 and r.dtype == torch.int64
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        torch.empty(3, dtype=dtype, device="mlu").random_(5, 5)


def test_dropout_on_mlu():
    torch.mlu.manual_seed(0)
    x = torch.ones(10_000, device="mlu", requires_grad=True)
    y = torch.nn.functional.dropout(x, p=0.25, training=True)
    out = y.detach().cpu()
    scale = torch.tensor(1.0 / 0.75, dtype=torch.float32).item()
    assert set(out.unique().tolist()) <= {0.0, scale}
    assert abs((out == 0).double().mean().item() - 0.25) < 0.02
    y.sum().backward()
    assert torch.equal(x.grad.cpu() != 0, out != 0)
    assert torch.equal(torch.nn.functional.dropout(x, 0.25, training=False).detach().cpu(), torch.ones(10_000))


def test_parameter_errors():
    x = torch.empty(3, device="mlu")
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        x.normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\]"):
        x.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="floating-point"):
        torch.empty(3, dtype=torch.int32, device="mlu").uniform_()
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        x.exponential_(-1.0)


def test_randperm_is_a_permutation_and_reproducible():
    torch.mlu.manual_seed(4)
    p = torch.randperm(1000, device="mlu")
    assert p.device.type == "mlu" and p.dtype == torch.int64
    assert torch.equal(torch.sort(p.cpu())[0], torch.arange(1000))
    torch.mlu.manual_seed(4)
    assert torch.equal(torch.randperm(1000, device="mlu").cpu(), p.cpu())
    q = torch.randperm(50, device="mlu", dtype=torch.float32).cpu()
    assert torch.equal(torch.sort(q)[0], torch.arange(50.0))
    assert torch.randperm(0, device="mlu").numel() == 0
    with pytest.raises(RuntimeError, match="n is too large"):
        torch.randperm(300, device="mlu", dtype=torch.uint8)


def test_multinomial():
    torch.mlu.manual_seed(5)
    w = torch.tensor([[1.0, 0.0, 3.0], [0.0, 5.0, 0.0]], device="mlu")
    s = torch.multinomial(w, 20_000, replacement=True).cpu()
    assert s.shape == (2, 20_000) and s.dtype == torch.int64
    assert (s[0] != 1).all() and abs((s[0] == 0).double().mean().item() - 0.25) < 0.02
    assert (s[1] == 1).all()
    no_rep = torch.multinomial(torch.ones(10, device="mlu"), 10).cpu()
    assert torch.equal(torch.sort(no_rep)[0], torch.arange(10))
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        torch.multinomial(torch.ones(3, device="mlu"), 4)
    # bad weights are found on the device: reported at the next synchronization, like CUDA
    torch.multinomial(torch.tensor([1.0, -1.0], device="mlu"), 1)
    with pytest.raises(torch.AcceleratorError, match="multinomial: probability tensor contains"):
        torch.mlu.synchronize()
    assert torch.multinomial(torch.tensor([0.0, 1.0], device="mlu"), 1).item() == 1


def test_normal_with_tensor_arguments():
    torch.mlu.manual_seed(6)
    n = 20_000
    mean = torch.full((n,), 3.0, device="mlu")
    std = torch.full((n,), 0.5, device="mlu")
    for z in (torch.normal(mean, 0.5), torch.normal(3.0, std), torch.normal(mean, std)):
        assert z.device.type == "mlu" and z.shape == (n,)
        m, v = _moments(z.cpu())
        assert abs(m - 3.0) < 0.02 and abs(math.sqrt(v) - 0.5) < 0.02
    torch.mlu.manual_seed(6)
    again = torch.normal(mean, 0.5)
    torch.mlu.manual_seed(6)
    assert torch.equal(torch.normal(mean, 0.5).cpu(), again.cpu())
    b = torch.normal(torch.zeros(4, 1, device="mlu"), torch.ones(1, 3, device="mlu"))
    assert b.shape == (4, 3)
