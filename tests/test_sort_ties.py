"""Indices among equal elements from sort(stable=False), topk and kthvalue equal the CPU's.

The order of equal elements is unspecified in PyTorch's docs, but the CPU's kernels fix it by their
algorithms and users (and op_db) compare indices across devices. Note [The CPU's order among equal keys]
in kernels/src/sort/sort.cpp says how mlu reproduces it. Inputs here are drawn from a few values, so every row
has many ties; the oracle is PyTorch's CPU in the same process.
"""
import pytest
import torch

import torch_mlu  # noqa: F401

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8]
SHAPES = [(3, 5), (7, 301), (2, 8000), (33, 40)]


def few_values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    low = 0 if dtype == torch.uint8 else -4
    x = torch.randint(low, 5, shape, generator=g).to(dtype)
    if dtype.is_floating_point:  # NaNs and signed zeros tie too
        x.view(-1)[::17] = float("nan")
        x.view(-1)[5::23] = -0.0
    return x


def assert_same(cpu, mlu):
    assert torch.equal(cpu.indices, mlu.indices.cpu())
    torch.testing.assert_close(cpu.values, mlu.values.cpu(), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sort_unstable_and_stable(dtype, shape):
    x = few_values(shape, dtype, 0)
    for descending in (False, True):
        for stable in (False, True):
            assert_same(torch.sort(x, stable=stable, descending=descending),
                        torch.sort(x.to("mlu"), stable=stable, descending=descending))
    # Along a strided dim and through the legacy overload.
    assert_same(torch.sort(x.t(), dim=0), torch.sort(x.to("mlu").t(), dim=0))
    assert torch.equal(torch.argsort(x, dim=0), torch.argsort(x.to("mlu"), dim=0).cpu())


def test_sort_bool_and_expanded():
    x = few_values((5, 300), torch.int64, 1) > 0
    assert_same(torch.sort(x), torch.sort(x.to("mlu")))
    # A zero stride along dim: the CPU returns the identity order.
    def expanded(device):
        return torch.tensor([1.0, 2.0], device=device).reshape(2, 1).expand(2, 50)
    assert expanded("mlu").stride() == (1, 0)
    assert_same(torch.sort(expanded("cpu")), torch.sort(expanded("mlu")))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=str)
def test_large_1d_integer_sort_is_stable_like_the_cpu_radix_sort(dtype):
    # The CPU hands 1-d ascending integer sorts of >= 32768 elements to fbgemm's radix sort (stable).
    x = few_values((40000,), dtype, 2)
    assert_same(torch.sort(x), torch.sort(x.to("mlu")))
    assert_same(torch.sort(x, descending=True), torch.sort(x.to("mlu"), descending=True))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_topk(dtype, shape):
    x = few_values(shape, dtype, 3)
    n = shape[-1]
    m = x.to("mlu")
    # k * 64 <= n takes the CPU's partial_sort, larger k its nth_element.
    for k in sorted({1, 3, max(1, n // 64), max(1, n // 64) + 1, n // 2, n}):
        for largest in (True, False):
            for is_sorted in (True, False):
                assert_same(torch.topk(x, k, largest=largest, sorted=is_sorted),
                            torch.topk(m, k, largest=largest, sorted=is_sorted))
    assert_same(torch.topk(x.t(), 2, dim=0), torch.topk(m.t(), 2, dim=0))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_kthvalue(dtype, shape):
    x = few_values(shape, dtype, 4)
    n = shape[-1]
    m = x.to("mlu")
    for k in sorted({1, 2, (n + 1) // 2, n}):
        assert_same(torch.kthvalue(x, k), torch.kthvalue(m, k))
        assert_same(torch.kthvalue(x, k, keepdim=True), torch.kthvalue(m, k, keepdim=True))
    assert_same(torch.kthvalue(x.t(), 1, dim=0), torch.kthvalue(m.t(), 1, dim=0))
    assert_same(torch.kthvalue(x[0, 0], 1), torch.kthvalue(m[0, 0], 1))


def test_kthvalue_errors_match_the_cpu():
    x = torch.arange(6.0).reshape(2, 3)
    for args in ((0,), (4,), (1, 2)):
        with pytest.raises((RuntimeError, IndexError)) as cpu_err:
            torch.kthvalue(x, *args)
        with pytest.raises(type(cpu_err.value), match=str(cpu_err.value).split("(")[0][:40]):
            torch.kthvalue(x.to("mlu"), *args)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.kthvalue(torch.empty(2, 0, device="mlu"), 1, dim=1)
