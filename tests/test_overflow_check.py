"""The overflow check (torch_mlu.accuracy.overflow_check; Note [Overflow flag] in csrc/aten/OverflowCheck.h): a
sticky per-device flag that every op making a NaN or an Inf sets, read on the device without a sync.

The oracle is the result itself: the flag must say whether any checked result held a non-finite value, which
torch.isfinite on the CPU tells. Generated cases: every floating dtype x every layout a result may have x both
sizes of launch (inline small tasks and device-thread tasks), each with and without a non-finite element; then the
intersections: non-current device, side and busy streams, backward, the optimizer's foreach ops, the CPU fallback,
graph replay, the accuracy check's dispatch mode, the environment, bad arguments.
"""
import itertools

import pytest
import torch

import torch_mlu
from torch_mlu import accuracy

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64]
SIZES = {"small": (8, 12), "large": (96, 160)}  # 96 elements: an inline small task; 15360: a device-thread task


@pytest.fixture(autouse=True)
def _checked():
    with accuracy.overflow_check():
        for d in range(torch.mlu.device_count()):
            accuracy.clear_overflow_flag(d)
        yield
    assert not accuracy.is_overflow_check_enabled()


def flag(device=None):
    return bool(accuracy.overflow_flag(device).item())


# Each layout writes the op's result into a view of a bigger buffer (or a fresh tensor), as ops' results come.
LAYOUTS = {
    "contiguous": lambda out: out,
    "transposed": lambda out: out.t(),
    "every_other_column": lambda out: out[:, ::2],
    "sliced_rows": lambda out: out[1:-1],
}


@pytest.mark.parametrize("dtype, size, layout, bad", [
    pytest.param(dtype, size, layout, bad, id=f"{str(dtype)[6:]}-{size}-{layout}-{bad}")
    for dtype, size, layout, bad in itertools.product(DTYPES, SIZES, LAYOUTS, [None, "nan", "inf"])])
def test_the_flag_says_whether_a_result_is_finite(dtype, size, layout, bad):
    x = torch.randn(SIZES[size], dtype=dtype)
    buffer = torch.full(SIZES[size], float("nan"), dtype=dtype, device="mlu")  # outside the view: never looked at
    view = LAYOUTS[layout](buffer)
    source = LAYOUTS[layout](x)
    if bad is not None:
        flat = source.reshape(-1).clone()
        flat[flat.numel() // 2] = float(bad) if not flat.is_complex() else complex(0, float(bad))
        source = flat.reshape(source.shape)
    on_mlu = source.to("mlu")
    accuracy.clear_overflow_flag()
    torch.mul(on_mlu, 1, out=view)  # the checked op: its result is the view
    want = not bool(torch.isfinite(source).all())
    assert flag() is want
    torch.testing.assert_close(view.cpu(), torch.mul(source, 1), equal_nan=True)  # results untouched
    if bad is not None:  # sticky: a later finite op leaves it set
        torch.mul(x.to("mlu"), 2)
        assert flag()


def test_an_op_making_non_finite_values_from_finite_inputs_sets_it_and_only_clear_resets_it():
    x = torch.tensor([1.0, 0.0, 3.0], device="mlu")
    assert not flag()
    (x / x).sum()  # 0 / 0
    assert flag()
    x + 1
    assert flag()
    accuracy.clear_overflow_flag()
    assert not flag()
    torch.tensor([60000.0], device="mlu").half() * 2  # float16 overflow
    assert flag()


def test_views_and_uninitialised_memory_are_not_results():
    with accuracy.overflow_check(enabled=False):
        stale = torch.full((1024,), float("nan"), device="mlu")
    stale[::2].t()  # views of non-finite values compute nothing
    stale.view(32, 32).diagonal()
    del stale
    torch.empty(1024, device="mlu")  # may be the freed block, NaN and all
    torch.zeros(4, device="mlu").resize_(1024)
    assert not flag()


def test_without_the_check_nothing_sets_it():
    with accuracy.overflow_check(enabled=False):
        assert not accuracy.is_overflow_check_enabled()
        torch.tensor([0.0], device="mlu").log()
        assert not flag()
    assert accuracy.is_overflow_check_enabled()
    torch.tensor([0.0], device="mlu").log()
    assert flag()


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two devices")
def test_each_device_has_its_own_flag_whichever_is_current():
    torch.mlu.set_device(0)
    torch.tensor([0.0], device="mlu:1").log()
    assert flag(1) and not flag(0)
    assert accuracy.overflow_flag("mlu:1").device == torch.device("mlu:1")
    with torch.mlu.device(1):
        assert flag() and not flag(0)
        accuracy.clear_overflow_flag()
    assert not flag(1)


def test_reading_it_waits_for_nothing_and_sees_the_stream_order():
    zero = torch.zeros(1, device="mlu")
    gate = torch_mlu._C._StreamGate()  # holds the current stream
    try:
        zero.log()  # queued behind the gate
        read = accuracy.overflow_flag()  # returns at once: a kernel queued after the log
        assert not torch.mlu.current_stream().query()
    finally:
        gate.open()
    assert read.item()


def test_a_side_streams_op_sets_the_devices_flag():
    side = torch.mlu.Stream()
    x = torch.zeros(4, device="mlu")
    side.wait_stream(torch.mlu.current_stream())
    with torch.mlu.stream(side):
        x.log()
        assert flag()  # read on the side stream, after the op
    torch.mlu.synchronize()
    assert flag()


def test_backward_foreach_optimizer_and_autocast_ops_are_checked():
    w = torch.zeros(3, device="mlu", requires_grad=True)
    w.sqrt().sum().backward()  # forward finite (0), backward 1 / (2 sqrt(0)) = inf
    assert torch.isinf(w.grad).all() and flag()
    accuracy.clear_overflow_flag()
    params = [torch.ones(4, device="mlu")]
    torch._foreach_div_(params, 0.0)  # returns nothing: the arguments it writes are checked
    assert flag()
    accuracy.clear_overflow_flag()
    model = torch.nn.Linear(8, 8).to("mlu")
    with torch.no_grad():
        model.weight.fill_(1.0)
    with torch.autocast("mlu", dtype=torch.float16):
        x = torch.full((2, 8), 6e4, device="mlu")
        assert not flag()   # 6e4 is a float16, and the cast to it finite
        out = model(x)      # a sum of 8 of them is not
    assert out.dtype == torch.float16 and torch.isinf(out.cpu()).all() and flag()


def test_an_op_on_the_cpu_fallback_is_checked_like_a_native_one():
    values = torch.ones(4, device="mlu")
    torch_mlu.reset_fallback_report()
    out = torch.segment_reduce(values, "max", lengths=torch.tensor([0, 4], device="mlu"))  # an empty segment: -inf
    assert "aten::segment_reduce" in torch_mlu.fallback_report()
    assert torch.isinf(out.cpu()[0]) and flag()


def test_a_captured_op_sets_it_at_each_replay():
    static = torch.ones(64, device="mlu")
    graph = torch.mlu.MLUGraph()
    side = torch.mlu.Stream()
    side.wait_stream(torch.mlu.current_stream())
    with torch.mlu.stream(side):
        (static * 2).log()  # warm-up
    torch.mlu.current_stream().wait_stream(side)
    with torch.mlu.graph(graph):
        out = static.log()
    graph.replay()
    assert not flag() and torch.equal(out.cpu(), torch.zeros(64))
    static.zero_()
    accuracy.clear_overflow_flag()
    graph.replay()
    assert flag() and torch.isinf(out.cpu()).all()


def test_under_the_accuracy_check_the_flag_still_works():
    x = torch.tensor([0.0, 1.0], device="mlu")
    with accuracy.check(fail_fast=False) as report:
        y = x.log()
    assert flag() and torch.isinf(y.cpu()[0])
    assert not report.divergences


def test_the_environment_turns_it_on_for_the_whole_program(python):
    result = python("""
        import torch, torch_mlu
        from torch_mlu import accuracy
        print(accuracy.is_overflow_check_enabled())
        torch.tensor([0.0], device="mlu").log()
        print(accuracy.overflow_flag().item())
    """, env={"TORCH_MLU_OVERFLOW_CHECK": "1"})
    assert result.returncode == 0 and result.stdout.split() == ["True", "True"], result.stdout + result.stderr


def test_bad_devices_are_refused_clearly():
    with pytest.raises(ValueError, match="belongs to an mlu device, not to cpu"):
        accuracy.overflow_flag("cpu")
    with pytest.raises(Exception, match="device"):
        accuracy.overflow_flag(torch.mlu.device_count())  # past the last device
    with pytest.raises(Exception, match="[Dd]evice index"):
        accuracy.clear_overflow_flag(-2)
    assert not flag()  # and it works on
