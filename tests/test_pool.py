"""Pooling runs natively on mlu (mlu_kernels/pool.h) and agrees with the CPU: max_pool2d/3d (with indices),
avg_pool2d/3d, adaptive average and max pooling 1-D to 3-D, forward and backward.

Kernel, stride, padding, dilation, ceil_mode, unbatched input, max_pool1d, channels_last kept,
NaN propagation and tie order (the indices must be the CPU's), gradients (overlapping windows add).
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)

torch.manual_seed(0)


@pytest.fixture
def check(native_oracle):
    """The shared oracle on fn(x) -> (out, indices) and x's gradient, strides included (NaNs equal)."""
    def check(fn, x, dtype=torch.float32):
        def run(device):
            leaf = x.detach().clone().to(dtype).to(device).requires_grad_()
            out, idx = fn(leaf)
            torch.manual_seed(5)
            out.backward(torch.randn(out.shape).to(dtype).to(device))
            return out, idx, leaf.grad
        native_oracle(run, check_stride=True, equal_nan=True)
    return check


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
                                    dict(kernel_size=3, stride=2, ceil_mode=True),
                                    dict(kernel_size=2, stride=1, padding=1, ceil_mode=True)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_max_pool2d(kwargs, dtype, check):
    check(lambda x: F.max_pool2d(x, return_indices=True, **kwargs), torch.randn(2, 3, 9, 11), dtype)


def test_ties_nan_unbatched_1d_and_channels_last(check):
    x = torch.randint(0, 3, (2, 3, 8, 8)).float()  # many ties: the first maximum wins
    x[0, 0, 2, 3] = float("nan")
    check(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    check(lambda x: F.max_pool2d(x, 2, return_indices=True), torch.randn(3, 6, 6))
    check(lambda x: F.max_pool1d(x, 3, 2, return_indices=True), torch.randn(2, 4, 15))
    check(lambda x: F.max_pool2d(x, 2, return_indices=True),
          torch.randn(2, 5, 6, 6).to(memory_format=torch.channels_last))


def test_module_and_errors():
    pool = torch.nn.MaxPool2d(2)
    x = torch.randn(1, 2, 4, 4)
    torch.testing.assert_close(pool(x.to("mlu")).cpu(), pool(x))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x.to("mlu"), 2, padding=2)
    assert F.max_pool2d(x.to("mlu"), 2).shape == (1, 2, 2, 2)


@pytest.fixture
def check_plain(native_oracle):
    """The shared oracle on fn(x) (no indices) and x's gradient, strides included."""
    def check_plain(fn, x, dtype=torch.float32, **tol):
        def run(device):
            leaf = x.detach().clone().to(dtype).to(device).requires_grad_()
            out = fn(leaf)
            torch.manual_seed(6)
            out.backward(torch.randn(out.shape).to(dtype).to(device))
            return out, leaf.grad
        native_oracle(run, check_stride=True, **tol)
    return check_plain


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                    dict(kernel_size=(3, 2), stride=2, ceil_mode=True),
                                    dict(kernel_size=3, stride=1, padding=1, divisor_override=5),
                                    dict(kernel_size=2, divisor_override=-2),
                                    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True, count_include_pad=False)],
                         ids=str)
def test_avg_pool2d(kwargs, check_plain):
    check_plain(lambda x: F.avg_pool2d(x, **kwargs), torch.randn(2, 3, 9, 11))


@pytest.mark.parametrize("size", [1, 3, (5, 4), (9, 11), (2, 7)], ids=str)
def test_adaptive_avg_pool2d(size, check_plain):
    check_plain(lambda x: F.adaptive_avg_pool2d(x, size), torch.randn(2, 3, 9, 11))


def test_average_pools_unbatched_channels_last_and_bfloat16(check_plain):
    check_plain(lambda x: F.avg_pool2d(x, 2), torch.randn(3, 8, 8))
    check_plain(lambda x: F.adaptive_avg_pool2d(x, 3), torch.randn(3, 8, 8))
    check_plain(lambda x: F.avg_pool2d(x, 2), torch.randn(2, 4, 6, 6).to(memory_format=torch.channels_last))
    check_plain(lambda x: F.adaptive_avg_pool2d(x, 3), torch.randn(2, 4, 6, 6).to(memory_format=torch.channels_last))
    check_plain(lambda x: F.avg_pool2d(x, 3, 2), torch.randn(2, 4, 9, 9), torch.bfloat16, rtol=2e-2, atol=2e-2)
    check_plain(lambda x: F.adaptive_avg_pool2d(x, 4), torch.randn(2, 4, 9, 9), torch.bfloat16, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), dilation=(2, 1, 1)),
                                    dict(kernel_size=3, stride=2, ceil_mode=True)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_max_pool3d(kwargs, dtype, check):
    check(lambda x: F.max_pool3d(x, return_indices=True, **kwargs), torch.randn(2, 3, 7, 8, 9), dtype)


def test_max_pool3d_ties_unbatched_channels_last_and_errors(check):
    x = torch.randint(0, 3, (2, 3, 6, 6, 6)).float()
    x[1, 2, 3, 3, 3] = float("nan")
    check(lambda x: F.max_pool3d(x, 3, 2, 1, return_indices=True), x)
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(3, 4, 4, 4))
    check(lambda x: F.max_pool3d(x, 2, return_indices=True),
          torch.randn(2, 5, 4, 4, 4).to(memory_format=torch.channels_last_3d))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(torch.randn(1, 1, 4, 4, 4, device="mlu"), 2, padding=2)
    with pytest.raises(RuntimeError, match="kernel_size must either be a single int, or a tuple of three ints"):
        F.max_pool3d(torch.randn(1, 1, 4, 4, 4, device="mlu"), (2, 2))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                    dict(kernel_size=(3, 2, 2), stride=2, ceil_mode=True),
                                    dict(kernel_size=2, divisor_override=3)], ids=str)
def test_avg_pool3d(kwargs, check_plain):
    check_plain(lambda x: F.avg_pool3d(x, **kwargs), torch.randn(2, 3, 7, 6, 5))


@pytest.mark.parametrize("dims,size,out", [(1, (2, 3, 11), 4), (2, (2, 3, 9, 7), (4, 3)),
                                           (3, (2, 3, 5, 7, 6), (2, 3, 4)), (2, (3, 9, 7), (9, 7))], ids=str)
def test_adaptive_max_pool(dims, size, out, check):
    fn = getattr(F, f"adaptive_max_pool{dims}d")
    x = torch.randint(0, 4, size).float()  # ties: the first maximum's index, as on the CPU
    check(lambda t: fn(t, out, return_indices=True), x)
    check(lambda t: fn(t, out, return_indices=True), torch.randn(size), torch.bfloat16)


def test_adaptive_avg_pool3d(check_plain):
    check_plain(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), torch.randn(2, 3, 5, 7, 6))
    check_plain(lambda x: F.adaptive_avg_pool3d(x, 3), torch.randn(3, 4, 5, 6))
    with pytest.raises(RuntimeError, match="output_size must be 3"):
        torch._C._nn.adaptive_avg_pool3d(torch.randn(1, 2, 3, 3, 3, device="mlu"), (2, 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fractional_max_pool(dtype, check):
    torch.manual_seed(4)
    # The same random samples on both devices: the window starts are theirs, computed in the dtype like the CPU.
    u2, u3 = torch.rand(2, 3, 2).to(dtype), torch.rand(2, 3, 3).to(dtype)
    for kernel, size in [((3, 2), (5, 6)), (2, (4, 4)), (3, (9, 11))]:
        check(lambda x, u=u2: F.fractional_max_pool2d(x, kernel, output_size=size, return_indices=True,
                                                       _random_samples=u.to(x.device)),
              torch.randn(2, 3, 11, 13), dtype)
    check(lambda x: F.fractional_max_pool3d(x, 2, output_size=(4, 5, 6), return_indices=True,
                                            _random_samples=u3.to(x.device)), torch.randn(2, 3, 7, 8, 9), dtype)
    x = torch.randn(3, 8, 8, device="mlu")  # unbatched, samples drawn on mlu
    out, idx = F.fractional_max_pool2d(x, 2, output_size=(4, 4), return_indices=True)
    assert out.shape == (3, 4, 4) and torch.equal(out, x.flatten(1).gather(1, idx.flatten(1)).view_as(out))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64], ids=str)
def test_adaptive_avg_pool3d_gives_the_cpus_bits(dtype):
    """Note [The CPU's 3-D adaptive average]: windows summed in the element type, divided by depth, height and
    width in turn; the backward accumulates in the element type. Forward and gradient equal the CPU's bit for bit
    (an output of 1 x 1 x 1 is PyTorch's mean, not this kernel)."""
    g = torch.Generator().manual_seed(0)
    for shape, size in [((2, 3, 8, 8, 8), (5, 7, 4)), ((2, 3, 4, 4, 4), (3, 3, 3)), ((3, 9, 10, 11), (4, 5, 6)),
                        ((1, 2, 5, 7, 9), (5, 7, 9))]:
        x = torch.randn(shape, generator=g).to(dtype)
        for view in (x, x.transpose(-1, -2)):
            grad = torch.randn((*shape[:-3], *size), generator=g).to(dtype)
            results = []
            for device in ("cpu", "mlu"):
                leaf = view.to(device, copy=True).requires_grad_()
                out = F.adaptive_avg_pool3d(leaf, size)
                out.backward(grad.to(device))
                results.append((out.detach().cpu(), leaf.grad.cpu()))
            (out, gi), (mlu_out, mlu_gi) = results
            assert mlu_out.equal(out) and mlu_out.stride() == out.stride(), (shape, size)
            assert mlu_gi.equal(gi), (shape, size)
