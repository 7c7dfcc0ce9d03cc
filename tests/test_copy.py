"""Copies in every direction, against the CPU as the oracle."""
import itertools

import pytest
import torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def sample(dtype, shape=(3, 4, 5), nonnegative=False):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 50
    if nonnegative:  # float -> uint8 of a negative value is undefined in C++ (and in PyTorch)
        x = x.abs()
    if dtype.is_complex:
        return torch.complex(x, -x).to(dtype)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    x = sample(dtype)
    y = x.to("mlu")
    assert y.device.type == "mlu" and y.dtype == dtype
    assert torch.equal(y.cpu(), x)


@pytest.mark.parametrize("src_dtype, dst_dtype", list(itertools.product(
    [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
     torch.float64, torch.complex64], repeat=2)))
def test_dtype_conversion_on_device_matches_cpu(src_dtype, dst_dtype):
    x = sample(src_dtype, nonnegative=dst_dtype == torch.uint8)
    expected = x.to(dst_dtype)
    got = x.to("mlu").to(dst_dtype)
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0, equal_nan=True)


def test_host_to_device_with_conversion_and_layouts():
    x = torch.arange(60.0).reshape(3, 4, 5)
    for src in (x, x.transpose(0, 2), x[:, ::2, 1:], x.expand(2, 3, 4, 5)[1]):
        for dst_dtype in (torch.float32, torch.int64, torch.float16):
            dst = torch.empty(src.shape, dtype=dst_dtype, device="mlu")
            dst.copy_(src)
            assert torch.equal(dst.cpu(), src.to(dst_dtype))
            # non-contiguous destination
            big = torch.zeros(src.shape[0], src.shape[1] * 2, src.shape[2], dtype=dst_dtype, device="mlu")
            target = big[:, ::2]
            target.copy_(src)
            assert torch.equal(target.cpu(), src.to(dst_dtype))
            assert torch.equal(big[:, 1::2].cpu(), torch.zeros_like(src, dtype=dst_dtype))


def test_device_to_host_from_views():
    x = torch.arange(120.0).reshape(4, 5, 6)
    y = x.to("mlu")
    for cpu_view, mlu_view in ((x.permute(2, 0, 1), y.permute(2, 0, 1)), (x[1:, ::2, 3], y[1:, ::2, 3]),
                               (x.t() if x.dim() == 2 else x.transpose(0, 1), y.transpose(0, 1))):
        assert torch.equal(mlu_view.cpu(), cpu_view)
        assert torch.equal(mlu_view.to(torch.float64).cpu(), cpu_view.double())
        out = torch.empty(cpu_view.shape, dtype=torch.int32).t() if cpu_view.dim() == 2 else None
        if out is not None:
            out.copy_(mlu_view.t())
            assert torch.equal(out, cpu_view.t().int())


def test_device_to_device_same_device_strided():
    x = torch.arange(24.0).reshape(2, 3, 4)
    y = x.to("mlu")
    z = torch.empty(4, 3, 2, device="mlu")
    z.copy_(y.permute(2, 1, 0))
    assert torch.equal(z.cpu(), x.permute(2, 1, 0))
    assert torch.equal(y.permute(2, 1, 0).contiguous().cpu(), x.permute(2, 1, 0).contiguous())
    assert torch.equal(y.clone().cpu(), x)


def test_broadcasting_copy():
    dst = torch.empty(3, 4, device="mlu")
    dst.copy_(torch.arange(4.0))
    assert torch.equal(dst.cpu(), torch.arange(4.0).expand(3, 4))
    dst.copy_(torch.tensor([[1.0], [2.0], [3.0]], device="mlu"))
    assert torch.equal(dst.cpu(), torch.tensor([[1.0], [2.0], [3.0]]).expand(3, 4))


def test_overlapping_copy_matches_cpu():
    x = torch.arange(10.0)
    y = x.to("mlu")
    x[1:].copy_(x[:-1].clone())
    y[1:].copy_(y[:-1])
    assert torch.equal(y.cpu(), x)


def test_cross_device_copies():
    x = torch.arange(12.0).reshape(3, 4)
    a = x.to("mlu:0")
    b = a.to("mlu:1")
    assert b.device == torch.device("mlu", 1)
    assert torch.equal(b.cpu(), x)
    c = a.t().to("mlu:1", dtype=torch.float64)
    assert torch.equal(c.cpu(), x.t().double())
    d = torch.zeros(4, 6, device="mlu:1")[:, ::2]
    d.copy_(a.t())
    assert torch.equal(d.cpu(), x.t())
    assert torch.equal(b.to("mlu:0").cpu(), x)


def test_cross_device_copy_is_ordered_after_producer():
    a = torch.zeros(1000, device="mlu:0")
    torch.mlu._sleep(20_000_000)  # 20 ms of work ahead of the fill on mlu:0
    a.fill_(7.0)
    b = a.to("mlu:1")
    assert torch.equal(b.cpu(), torch.full((1000,), 7.0))


def test_non_blocking_copies_with_pinned_memory():
    x = torch.arange(1000.0).pin_memory()
    assert x.is_pinned()
    y = x.to("mlu", non_blocking=True)
    out = torch.empty(1000).pin_memory()
    out.copy_(y, non_blocking=True)
    torch.mlu.synchronize()
    assert torch.equal(out, x)
    # pageable memory with non_blocking=True still behaves synchronously
    z = torch.empty(1000)
    z.copy_(y, non_blocking=True)
    assert torch.equal(z, x)


def test_pinned_memory_is_recognised():
    assert not torch.ones(3).is_pinned()
    p = torch.ones(3).pin_memory()
    assert p.is_pinned() and p.device.type == "cpu"
    assert torch.equal(p.to("mlu").cpu(), torch.ones(3))


def test_empty_and_zero_size_copies():
    e = torch.empty(0, 3).to("mlu")
    assert e.shape == (0, 3) and e.device.type == "mlu"
    assert e.cpu().shape == (0, 3)
    s = torch.tensor(3.5).to("mlu")
    assert s.dim() == 0 and s.item() == 3.5


def test_local_scalar_dense_every_dtype():
    for dtype in DTYPES:
        x = sample(dtype, (4,))
        y = x.to("mlu")
        assert y[2].item() == x[2].item()
    assert torch.tensor(True, device="mlu").item() is True
    assert isinstance(torch.tensor(3, device="mlu").item(), int)
