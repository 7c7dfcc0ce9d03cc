"""max_pool2d (with indices) runs natively on mlu (mlu_kernels/pool.h) and agrees with the CPU.

Kernel, stride, padding, dilation, ceil_mode, unbatched input, max_pool1d, channels_last kept,
NaN propagation and tie order (the indices must be the CPU's), gradients (overlapping windows add).
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu

torch.manual_seed(0)


def check(fn, x, dtype=torch.float32):
    def one(device):
        leaf = x.detach().clone().to(dtype).to(device).requires_grad_()
        out, idx = fn(leaf)
        torch.manual_seed(5)
        out.backward(torch.randn(out.shape).to(dtype).to(device))
        return out, idx, leaf.grad
    expected = one("cpu")
    torch_mlu.reset_fallback_report()
    actual = one("mlu")
    assert torch_mlu.fallback_report() == {}, torch_mlu.fallback_report()
    for e, a in zip(expected, actual):
        assert a.device.type == "mlu" and a.dtype == e.dtype and a.shape == e.shape and a.stride() == e.stride()
        torch.testing.assert_close(a.cpu(), e, equal_nan=True)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
                                    dict(kernel_size=3, stride=2, ceil_mode=True),
                                    dict(kernel_size=2, stride=1, padding=1, ceil_mode=True)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_max_pool2d(kwargs, dtype):
    check(lambda x: F.max_pool2d(x, return_indices=True, **kwargs), torch.randn(2, 3, 9, 11), dtype)


def test_ties_nan_unbatched_1d_and_channels_last():
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
