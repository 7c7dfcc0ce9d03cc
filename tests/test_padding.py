"""Reflection and replication padding on mlu against the CPU: every padded rank (1-3 dims), edge sizes from one to
the largest a reflection allows, asymmetric and negative (cropping) pads, each floating dtype, contiguous and
channels-last inputs; the output and the input's gradient, with no CPU fallback. A one-dim padding's gradient is
the CPU's sequential sum element for element (Note [Padding as gathers]), so it is compared exactly, as are 16-bit
gradients of sums no order can round."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def pads_for(n, dims):
    """(before, after) per padded dim: small, asymmetric, the largest reflection (n - 1) and a crop."""
    per_dim = [(1, 1), (3, 0), (n - 1, 2), (-2, n - 1)]
    return [tuple(itertools.chain.from_iterable(per_dim[(k + d) % len(per_dim)] for d in range(dims)))
            for k in range(len(per_dim))]


CASES = [(mode, dims, pad) for mode in ("reflect", "replicate") for dims in (1, 2, 3) for pad in pads_for(6, dims)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mode,dims,pad", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_padding_forward_and_backward_match_the_cpu(mode, dims, pad, dtype):
    torch.manual_seed(dims)
    shape = (2, 3) + (6,) * dims
    x = torch.randn(shape).to(dtype)
    layouts = [torch.contiguous_format] + ([torch.channels_last] if dims == 2 else [])
    layouts += [torch.channels_last_3d] if dims == 3 else []
    out_shape = F.pad(x.float(), pad, mode=mode).shape
    # 16-bit gradients of -1, 0 or 1: every partial sum (at most 216 terms) is exact, so no order of adds rounds and
    # mlu must give the CPU's sums exactly; float32/64 ones are random, exact where the orders agree (one dim).
    sixteen_bit = dtype in (torch.float16, torch.bfloat16)
    grad_outputs = (torch.randint(-1, 2, out_shape) if sixteen_bit else torch.randn(out_shape)).to(dtype)
    torch_mlu.reset_fallback_report()
    for layout in layouts:
        results = {}
        for device in ("cpu", "mlu"):
            leaf = x.to(device).contiguous(memory_format=layout).requires_grad_()
            out = F.pad(leaf, pad, mode=mode)
            grad_output = grad_outputs.to(device).contiguous(memory_format=layout)
            (grad,) = torch.autograd.grad(out, leaf, grad_output)
            results[device] = out.detach(), grad
        exact = dims == 1 or sixteen_bit
        for got, want, what in zip(results["mlu"], results["cpu"], ("output", "gradient")):
            assert got.stride() == want.stride(), (layout, what, got.stride(), want.stride())
            if exact or what == "output":
                torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
            else:  # a corner's terms summed dim by dim (Note [Padding as gathers])
                torch.testing.assert_close(got.cpu(), want)
    assert torch_mlu.fallback_report() == {}


def test_padding_runs_natively():
    torch_mlu.reset_fallback_report()
    x = torch.randn(2, 3, 8, 8, device="mlu", requires_grad=True)
    for mode in ("reflect", "replicate"):
        F.pad(x, (2, 1, 3, 2), mode=mode).sum().backward()
    assert torch_mlu.fallback_report() == {}


def test_reflection_wider_than_the_input_is_refused_like_the_cpu():
    for device in ("cpu", "mlu"):
        with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
            F.pad(torch.randn(1, 2, 4, device=device), (4, 0), mode="reflect")
    assert (F.pad(torch.ones(1, 2, 4, device="mlu"), (1, 1), mode="reflect").cpu() == 1).all()
