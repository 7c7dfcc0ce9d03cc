"""Host scalars (0-dim CPU tensors, Python numbers) given to compiled code and graphs on mlu.

The matrix: every way a host scalar reaches mlu work (a 0-dim CPU tensor of each dtype kind, a Python float or
int that Dynamo passes as a tensor, a temporary the caller drops) x every way the work runs (eager, compiled,
compiled with reduce-overhead, compiled with dynamic shapes, compiled backward). Each call is made while the
stream is busy (100 ms of queued device work), the host value is then overwritten (or freed) before the stream
reaches the work, and the result must equal eager's, which reads the value at the call (Note [Host scalars are read at
launch] in torch_mlu/_inductor/include/torch_mlu/compiled_kernel_module.h).

Graphs keep CUDA's rule: a capture records the value a host scalar had at capture (CUDA passes it to the
kernel by value), so replays use that value whatever the host tensor holds later.
"""
import gc
import os
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="torch_mlu_inductor_"))
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch.nn as nn  # noqa: E402

import torch_mlu  # noqa: F401,E402

BUSY_CYCLES = 100_000_000  # 100 ms of device work queued ahead of the call under test


def busy():
    torch.mlu._sleep(BUSY_CYCLES)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# name -> (function of (a, s), the host scalar's dtype, its first and later value)
FUNCTIONS = {
    "float_tensor": (lambda a, s: a * s + 1, torch.float32, 0.5, 100.0),
    "double_tensor_float_input": (lambda a, s: (a - s).abs(), torch.float64, 0.25, -3.0),
    "int_tensor": (lambda a, s: a + s * 2, torch.int64, 3, 1000),
    "bool_tensor": (lambda a, s: torch.where(s, a, -a), torch.bool, True, False),
    "two_uses": (lambda a, s: (a * s).sum() + s, torch.float32, 2.0, 7.0),
    "scalar_first": (lambda a, s: torch.maximum(s, a) * s, torch.float32, 1.5, -8.0),
}
MODES = {
    "eager": lambda f: f,
    "compiled": lambda f: torch.compile(f),
    "reduce_overhead": lambda f: torch.compile(f, mode="reduce-overhead"),
    "dynamic": lambda f: torch.compile(f, dynamic=True),
}


def _call_behind_a_held_stream(fn, a, scalar, later):
    busy()
    result = fn(a, scalar)
    scalar.fill_(later)          # the value changes before the stream reaches the work
    assert result.device == a.device, f"the result is on {result.device}, as eager puts it on {a.device}"
    return result.cpu()


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(FUNCTIONS))
def test_host_scalar_tensor_is_read_at_the_call(case, mode):
    f, dtype, first, later = FUNCTIONS[case]
    fn = MODES[mode](f)
    a = torch.arange(-4, 12, dtype=torch.float32).reshape(4, 4)
    for _ in range(2):  # compiles (which may synchronize) and, under reduce-overhead, warms up and records
        fn(a.mlu(), torch.tensor(first, dtype=dtype))
    torch.mlu.synchronize()
    for call in range(3):
        value = first + call if dtype not in (torch.bool,) else bool(call % 2 == 0)
        expected = f(a, torch.tensor(value, dtype=dtype))
        got = _call_behind_a_held_stream(fn, a.mlu(), torch.tensor(value, dtype=dtype), later)
        torch.testing.assert_close(got, expected, msg=lambda m: f"call {call}: {m}")


@pytest.mark.parametrize("mode", ["compiled", "dynamic"])
def test_python_float_temporary_is_read_at_the_call(mode):
    # Dynamo passes an unspecialized Python float as a 0-dim CPU tensor it makes for the call and drops after.
    fn = MODES[mode](lambda a, x: a * x - x)
    a = torch.linspace(-1, 1, 64)
    for x in (0.25, 0.375):  # Dynamo specializes the first value, then recompiles with x as an input
        fn(a.mlu(), x)
    torch.mlu.synchronize()
    for x in (0.5, 1.5, 2.5):
        busy()
        result = fn(a.mlu(), x)
        gc.collect()
        torch.empty(1 << 16).fill_(1e19)  # host memory the freed temporary may come back as
        torch.testing.assert_close(result.cpu(), a * x - x)


def test_compiled_optimizer_step_with_a_tensor_lr_and_a_scheduler():
    # PyTorch's recipe for compiled optimizers: a tensor LR that the scheduler fill_s in place.
    torch.manual_seed(0)
    params = [torch.randn(12, 7), torch.randn(7)]
    grads = [torch.randn_like(p) for p in params]

    def run(device, compiled):
        ps = [nn.Parameter(p.clone().to(device)) for p in params]
        opt = torch.optim.AdamW(ps, lr=torch.tensor(0.1))
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        step = torch.compile(opt.step) if compiled else opt.step
        for _ in range(4):  # the first step compiles (and may synchronize): it runs outside the busy stream
            for p, g in zip(ps, grads):
                p.grad = g.to(device)
            if device == "mlu" and opt.state:
                busy()
            step()
            sched.step()   # fill_s the LR while the step is still queued
        return [p.detach().cpu() for p in ps]

    for got, eager, cpu in zip(run("mlu", True), run("mlu", False), run("cpu", False)):
        torch.testing.assert_close(got, eager)
        torch.testing.assert_close(got, cpu)


def test_compiled_backward_reads_a_host_scalar_at_the_call():
    fn = torch.compile(lambda w, s: (w * s).tanh().sum())
    w_cpu = torch.randn(32)
    s = torch.tensor(0.75)
    ref = w_cpu.clone().requires_grad_()
    (ref * 0.75).tanh().sum().backward()
    fn(w_cpu.mlu().requires_grad_(), s).backward()  # compiles forward and backward
    torch.mlu.synchronize()
    w = w_cpu.mlu().requires_grad_()
    busy()
    loss = fn(w, s)
    loss.backward()
    s.fill_(-9.0)
    torch.testing.assert_close(w.grad.cpu(), ref.grad)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_graph_capture_records_the_host_scalar_value_at_capture(compiled):
    # CUDA's rule: a host scalar is a kernel argument, recorded by value when the graph is captured.
    f = lambda a, s: a * s + 1  # noqa: E731
    fn = torch.compile(f) if compiled else f
    a = torch.randn(16).mlu()
    s = torch.tensor(2.0)
    fn(a, s)  # compile and warm up outside the capture
    g = torch.mlu.MLUGraph()
    stream = torch.mlu.Stream()
    stream.wait_stream(torch.mlu.current_stream())
    with torch.mlu.graph(g, stream=stream):
        out = fn(a, s)
    s.fill_(5.0)
    g.replay()
    torch.testing.assert_close(out.cpu(), a.cpu() * 2.0 + 1)
