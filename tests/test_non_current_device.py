"""Work whose tensors all live on a device that is not the current one: the multi-device matrix.

Every kind of work (compiled functions of each shape, reduce-overhead, compiled training, graphs, nested and
sparse constructors) runs with its tensors on mlu:1 while mlu:0 is current, and the reverse. Each run is compared
with the same call on the current device for:
- values (against the same call with everything on the current device, and against the CPU);
- the result's device (the tensors' device, as CUDA gives);
- stream order: the inputs are written by a copy queued on their device's stream behind 50 ms of device work,
  so work that runs on another device's stream reads them unwritten; and the current device's stream is kept
  busy too, so work that waits on the wrong stream still finishes (only slower).
The eager op families are in the device sweep (tests/opinfo/device_sweep.py, target "all"); collectives in
tests/test_distributed.py (test_collectives_on_a_non_current_device).
"""
import os
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="torch_mlu_inductor_"))
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_mlu  # noqa: F401,E402

BUSY_CYCLES = 50_000_000  # 50 ms
PLACEMENTS = [(1, 0), (0, 1)]  # (the tensors' device, the current device)
IDS = ["tensors_on_1_current_0", "tensors_on_0_current_1"]


@pytest.fixture(autouse=True)
def _restore_device():
    torch._dynamo.reset()
    previous = torch.mlu.current_device()
    yield
    torch.mlu.set_device(previous)
    torch._dynamo.reset()


def _staged(tensors, device):
    """The tensors on `device`, written by copies queued behind device work on that device's stream."""
    with torch.mlu.device(device):
        torch.mlu._sleep(BUSY_CYCLES)
        staged = [t.to(device, non_blocking=True) if t.device.type == "cpu" else t.to(device) for t in tensors]
    return staged


def _run_on(fn, cpu_inputs, device, current):
    inputs = [t.clone() for t in cpu_inputs]
    mlu_inputs = [t.to(f"mlu:{device}") for t in inputs]  # settled copies, used to warm up (compile)
    torch.mlu.set_device(current)
    fn(*[t.clone() for t in mlu_inputs])
    torch.mlu.synchronize(device)
    torch.mlu._sleep(BUSY_CYCLES)  # the current device's stream is busy as well
    staged = _staged([t.pin_memory() for t in inputs], f"mlu:{device}")
    out = fn(*staged)
    assert torch.mlu.current_device() == current, "the call changed the current device"
    return out


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check(fn, cpu_inputs, device, current, atol=1e-5, rtol=1e-5):
    expected = [t for t in _flat(fn(*[t.clone() for t in cpu_inputs]))]
    got = _flat(_run_on(fn, cpu_inputs, device, current))
    torch._dynamo.reset()
    same_device = _flat(_run_on(fn, cpu_inputs, current, current))
    for g, s, e in zip(got, same_device, expected, strict=True):
        assert g.device == torch.device("mlu", device), f"result on {g.device}, its inputs on mlu:{device}"
        torch.testing.assert_close(g.cpu(), s.cpu(), atol=atol, rtol=rtol)
        torch.testing.assert_close(g.cpu(), e, atol=atol, rtol=rtol)


COMPILED = {
    "pointwise": (lambda x: (x + 1) * 2, [(1000,)]),
    "reduction": (lambda x: x.softmax(-1).sum(0) + x.amax(), [(64, 96)]),
    "matmul_extern": (lambda a, b: (a @ b).relu() + 1, [(32, 48), (48, 16)]),
    "fallback_op": (lambda x: torch.linalg.qr(x)[1].abs().sum(0) + x.sum(), [(12, 12)]),
    "views_and_cat": (lambda a, b: torch.cat([a.t(), b.t()]).reshape(-1)[::3] * 2, [(8, 6), (8, 6)]),
    "two_outputs": (lambda a, b: (a * b, (a - b).mean()), [(40, 30), (40, 30)]),
}


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
@pytest.mark.parametrize("kind", sorted(COMPILED))
def test_compiled_function_runs_on_its_tensors_device(kind, device, current):
    fn, shapes = COMPILED[kind]
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    _check(torch.compile(fn), inputs, device, current, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
def test_compiled_dynamic_shapes_run_on_its_tensors_device(device, current):
    fn = torch.compile(lambda x: x.relu() * x.shape[0], dynamic=True)
    for n in (5, 17):
        x = torch.randn(n)
        _check(fn, [x], device, current)


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
def test_reduce_overhead_records_and_replays_on_its_tensors_device(device, current):
    from torch_mlu._inductor import graphs

    f = torch.compile(lambda a, b: (a @ b).relu() + a.sum(), mode="reduce-overhead")
    before = dict(graphs.stats)
    torch.mlu.set_device(current)
    for _ in range(4):  # warm-up, record, replay, replay
        x, w = torch.randn(8, 8), torch.randn(8, 8)
        out = f(*_staged([x.pin_memory(), w.pin_memory()], f"mlu:{device}"))
        assert out.device == torch.device("mlu", device)
        torch.testing.assert_close(out.cpu(), (x @ w).relu() + x.sum(), atol=1e-5, rtol=1e-5)
    assert torch.mlu.current_device() == current
    assert graphs.stats["recorded"] == before.get("recorded", 0) + 1
    assert graphs.stats["replayed"] == before.get("replayed", 0) + 3


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 32)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
def test_compiled_training_step_runs_on_its_tensors_device(device, current):
    torch.manual_seed(0)
    initial = _Block()
    x = torch.randn(6, 32)

    def train(dev, compiled):
        model = __import__("copy").deepcopy(initial).to(dev)
        forward = torch.compile(model) if compiled else model
        losses = []
        for _ in range(2):
            loss = forward(x.to(dev)).square().mean()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
                    p.grad = None
            losses.append(loss.detach())
        return losses, [p.detach() for p in model.parameters()]

    torch.mlu.set_device(current)
    losses, params = train(f"mlu:{device}", True)
    assert torch.mlu.current_device() == current
    ref_losses, ref_params = train("cpu", False)
    for got, ref in zip(losses + params, ref_losses + ref_params):
        assert got.device == torch.device("mlu", device)
        torch.testing.assert_close(got.cpu(), ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
def test_graph_captured_on_another_devices_stream(device, current):
    torch.mlu.set_device(current)
    x = torch.randn(64).to(f"mlu:{device}")
    stream = torch.mlu.Stream(f"mlu:{device}")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g, stream=stream):
        y = (x * 2).exp().sum()
    assert torch.mlu.current_device() == current
    assert y.device == torch.device("mlu", device)
    for value in (0.5, -1.0):
        with torch.mlu.device(device):
            torch.mlu._sleep(BUSY_CYCLES)
        x.fill_(value)
        g.replay()
        torch.testing.assert_close(y.cpu(), (torch.full((64,), value) * 2).exp().sum())


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
def test_make_graphed_callables_on_a_non_current_device(device, current):
    # Captures happen on the current device, as CUDA's do: a module on another device is refused clearly (its
    # kernels would run outside the capture), and graphed under `torch.mlu.device(...)` it works.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
    reference = __import__("copy").deepcopy(model)
    model = model.to(f"mlu:{device}")
    torch.mlu.set_device(current)
    sample = torch.randn(8, 16, device=f"mlu:{device}", requires_grad=True)
    with pytest.raises(RuntimeError, match="a tensor on another device"):
        torch.mlu.make_graphed_callables(model, (sample,))
    with torch.mlu.device(device):
        graphed = torch.mlu.make_graphed_callables(model, (sample,))
    assert torch.mlu.current_device() == current
    x = torch.randn(8, 16)
    out = graphed(x.to(f"mlu:{device}"))
    out.sum().backward()
    reference(x).sum().backward()
    assert out.device == torch.device("mlu", device)
    torch.testing.assert_close(out.detach().cpu(), reference(x).detach(), atol=1e-5, rtol=1e-5)
    for p, r in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad.cpu(), r.grad, atol=1e-5, rtol=1e-5)


NESTED = {
    "nested_tensor": lambda dev, parts: torch.nested.nested_tensor(parts, device=dev),
    "as_nested_tensor": lambda dev, parts: torch.nested.as_nested_tensor([p.to(dev) for p in parts]),
    "jagged": lambda dev, parts: torch.nested.nested_tensor(parts, layout=torch.jagged, device=dev),
}


@pytest.mark.parametrize("device,current", PLACEMENTS, ids=IDS)
@pytest.mark.parametrize("kind", sorted(NESTED))
def test_nested_constructors_on_a_non_current_device(kind, device, current):
    parts = [torch.randn(3, 4), torch.randn(5, 4)]
    torch.mlu.set_device(current)
    with torch.mlu.device(device):
        torch.mlu._sleep(BUSY_CYCLES)
    nt = NESTED[kind](f"mlu:{device}", parts)
    assert nt.device == torch.device("mlu", device)
    doubled = (nt * 2).relu()
    for got, part in zip(doubled.unbind(), parts):
        assert got.device == torch.device("mlu", device)
        torch.testing.assert_close(got.cpu(), (part * 2).relu())
