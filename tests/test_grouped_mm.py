"""torch._grouped_mm runs natively on mlu (csrc/aten/ops/GroupedMMOps.cpp, Note [Grouped products]) and agrees with
the CPU: every operand layout (2-D x 3-D, 3-D x 2-D, 2-D x 2-D, 3-D x 3-D) x dtype x group bounds (empty groups,
bounds short of the split dim), transposed operands, the backward, a small mixture-of-experts layer trained on
both devices, a non-current device; bad bounds are a device-side error naming the offset, the CPU's argument
checks keep their texts, and the device keeps working."""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def operands(layout, dtype, ends, seed=0):
    """(a, b, offs) of a layout with group ends `ends` (None: 3-D x 3-D), and the split dim's used length."""
    g = torch.Generator().manual_seed(seed)
    groups = 4 if ends is None else len(ends)
    offs = None if ends is None else torch.tensor(ends, dtype=torch.int32)
    shapes = {"2d3d": ((32, 64), (groups, 64, 48)), "3d2d": ((groups, 16, 64), (64, 48)),
              "2d2d": ((16, 64), (64, 48)), "3d3d": ((groups, 16, 64), (groups, 64, 48))}[layout]
    a, b = (torch.randn(*s, generator=g).to(dtype) for s in shapes)
    return a, b, offs


def tolerance(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else {}


LAYOUTS = {"2d3d": [(8, 8, 20, 32), (3, 9, 9, 17)], "3d2d": [(8, 8, 20, 48), (5, 5, 30, 40)],
           "2d2d": [(16, 16, 40, 64), (0, 10, 10, 64)], "3d3d": [None]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout,ends", [(lay, e) for lay, cases in LAYOUTS.items() for e in cases])
def test_grouped_mm_matches_cpu(native_oracle, layout, ends, dtype):
    a, b, offs = operands(layout, dtype, ends)
    used = None if ends is None else ends[-1]

    def compare(i, got, want):
        # Past the last group the CPU leaves the result uninitialised; mlu writes zeros (Note [Grouped products]).
        if layout == "2d3d":
            torch.testing.assert_close(got[:used], want[:used], **tolerance(dtype))
            assert got[used:].eq(0).all()
        elif layout == "3d2d":
            torch.testing.assert_close(got[:, :used], want[:, :used], **tolerance(dtype))
            assert got[:, used:].eq(0).all()
        else:
            torch.testing.assert_close(got, want, **tolerance(dtype))

    native_oracle(torch._grouped_mm, a, b, offs, compare=compare)


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "3d3d"])
def test_transposed_operands(native_oracle, layout):
    a, b, offs = operands(layout, torch.bfloat16, None if layout == "3d3d" else (8, 8, 20, 32))
    b = b.transpose(-1, -2).contiguous().transpose(-1, -2)  # column-major, as a weight's transpose
    used = (slice(None, 32),) if layout == "2d3d" else (slice(None), slice(None, 32)) if layout == "3d2d" else ()
    native_oracle(torch._grouped_mm, a, b, offs,
                  compare=lambda i, got, want: torch.testing.assert_close(got[used], want[used]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_matches_cpu(native_oracle, dtype):
    a, b, offs = operands("2d3d", dtype, (8, 8, 20, 32), seed=1)
    grad = torch.randn(32, 48).to(dtype)

    def run(a, b, offs, grad):
        a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
        out = torch._grouped_mm(a, b, offs)
        out.backward(grad)
        return out, a.grad, b.grad

    native_oracle(run, a, b, offs, grad, **tolerance(dtype))


class MoE(torch.nn.Module):
    """Top-2 routing over 4 experts, the experts' two products as grouped products over tokens sorted by expert."""

    def __init__(self, width=32, hidden=64, experts=4):
        super().__init__()
        self.router = torch.nn.Linear(width, experts, bias=False)
        self.up = torch.nn.Parameter(torch.randn(experts, width, hidden) * width ** -0.5)
        self.down = torch.nn.Parameter(torch.randn(experts, hidden, width) * hidden ** -0.5)

    def forward(self, x):
        weights, chosen = torch.topk(self.router(x).softmax(-1), 2, dim=-1)
        flat = chosen.flatten()
        order = flat.argsort(stable=True)
        tokens = x.repeat_interleave(2, dim=0)[order]
        offs = torch.bincount(flat, minlength=self.up.shape[0]).cumsum(0).to(torch.int32)
        h = F.gelu(torch._grouped_mm(tokens, self.up, offs))
        y = torch._grouped_mm(h, self.down, offs)
        out = torch.zeros_like(y).index_copy(0, order, y).view(x.shape[0], 2, -1)
        return (out * weights.unsqueeze(-1)).sum(1)


def test_a_mixture_of_experts_layer_trains_as_on_the_cpu():
    def train(device):
        torch.manual_seed(0)
        model = MoE().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(4):
            x, target = torch.randn(24, 32, generator=g).to(device), torch.randn(24, 32, generator=g).to(device)
            loss = F.mse_loss(model(x), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    cpu_losses, cpu_params = train("cpu")
    torch_mlu.reset_fallback_report()
    mlu_losses, mlu_params = train("mlu")
    assert "aten::_grouped_mm" not in torch_mlu.fallback_report()
    torch.testing.assert_close(torch.tensor(mlu_losses), torch.tensor(cpu_losses), rtol=1e-5, atol=1e-6)
    for got, want in zip(mlu_params, cpu_params):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")
def test_on_a_non_current_device(native_oracle):
    torch.mlu.set_device(0)
    a, b, offs = operands("2d3d", torch.float32, (8, 8, 20, 32))
    got = torch._grouped_mm(a.to("mlu:1"), b.to("mlu:1"), offs.to("mlu:1"))
    assert got.device == torch.device("mlu:1")
    torch.testing.assert_close(got.cpu(), torch._grouped_mm(a, b, offs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ends", [(5, 40, 40, 40), (12, 5, 20, 32), (-1, 5, 20, 32)],
                         ids=["past the end", "decreasing", "negative"])
def test_bad_bounds_are_a_device_error_and_the_device_keeps_working(ends):
    a, b, offs = operands("2d3d", torch.float32, ends)
    with pytest.raises(torch.AcceleratorError, match=r"offs must be non-decreasing and at most 32.*offs\["):
        torch._grouped_mm(a.to("mlu"), b.to("mlu"), offs.to("mlu"))
        torch.mlu.synchronize()
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8


def bad_arguments():
    a, b, offs = operands("2d3d", torch.bfloat16, (8, 8, 20, 32))
    return {
        "int64 offs": ((a, b, offs.long()), {}),
        "no offs": ((a, b, None), {}),
        "bias": ((a, b, offs), {"bias": torch.zeros(4, 48).bfloat16()}),
        "out dtype": ((a, b, offs), {"out_dtype": torch.float32}),
        "mixed dtypes": ((a.float(), b, offs), {}),
        "float64": ((a.double(), b.double(), offs), {}),
        "depth": ((a[:, :32].contiguous(), b, offs), {}),
        "group count": ((a, b, offs[:3]), {}),
        "1-D": ((a[0], b, offs), {}),
    }


@pytest.mark.parametrize("case", list(bad_arguments()))
def test_bad_arguments_get_the_cpus_error(case):
    args, kwargs = bad_arguments()[case]
    with pytest.raises(RuntimeError) as on_cpu:
        torch._grouped_mm(*args, **kwargs)
    moved = [t.to("mlu") if isinstance(t, torch.Tensor) else t for t in args]
    kwargs = {k: v.to("mlu") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with pytest.raises(RuntimeError) as on_mlu:
        torch._grouped_mm(*moved, **kwargs)
    assert str(on_mlu.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]
