"""Ops composed on mlu from native ops, or run as PyTorch's own at::native code over mlu stubs.

index_fill_, index_reduce, take, put_, linalg_cross, renorm, aminmax (csrc/aten/ops/NativeStubOps.cpp,
IndexOps.cpp), nansum, trace, logspace, max_unpool2d/3d, masked_scatter_, nonzero_static,
repeat_interleave (CompositeOps.cpp) and the newer batch-norm entry points (NormalizationOps.cpp): each runs
without the CPU fallback and agrees with the CPU in values, dtypes, strides and errors.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)
from conftest import assert_native_matches_cpu as native


def randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(dtype)


def same_error(fn, *args):
    """fn raises on the CPU and on mlu alike: same type, same message."""
    with pytest.raises(Exception) as on_cpu:
        fn(*args)
    with pytest.raises(Exception) as on_mlu:
        fn(*[a.to("mlu") if isinstance(a, torch.Tensor) else a for a in args])
        torch.mlu.synchronize()
    assert type(on_mlu.value) is type(on_cpu.value)
    assert str(on_mlu.value) == str(on_cpu.value)


# ---- index_fill_ / index_reduce ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_index_fill(dtype):
    x = randn(4, 5, 6).to(dtype)
    index = torch.tensor([0, -1, 2, 2])
    native(lambda t, i: t.index_fill(1, i, 3), x, index, check_stride=True)
    native(lambda t, i: t.clone().index_fill_(-1, i, torch.tensor(1)), x, index)
    native(lambda t, i: t.transpose(0, 2).index_fill(0, i, 2), x, index, check_stride=True)
    native(lambda t, i: t.index_fill(0, i, 7), randn(()).to(dtype), torch.tensor(0))


def test_index_fill_errors():
    x, index = randn(3, 4), torch.tensor([0, 1])
    same_error(lambda t, i: t.index_fill(0, i.int(), 1), x, index)
    same_error(lambda t, i: t.index_fill(0, i, torch.ones(2)), x, index)
    same_error(lambda t, i: t.index_fill(0, i.view(1, 2), 1), x, index)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.to("mlu").index_fill_(0, torch.tensor([3], device="mlu"), 1)
        torch.mlu.synchronize()
    assert torch.mlu.is_available() and torch.ones(2, device="mlu").sum().item() == 2


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_index_reduce(reduce, include_self, dtype):
    x, source = randn(5, 4).mul(3).to(dtype), randn(6, 4, seed=1).mul(3).to(dtype)
    index = torch.tensor([0, 2, 2, 4, 0, 2])
    native(lambda t, s, i: t.index_reduce(0, i, s, reduce, include_self=include_self), x, source, index)
    native(lambda t, s, i: t.t().clone().index_reduce_(1, i, s.t(), reduce, include_self=include_self),
           x, source, index)
    # 1-d self, where the CPU runs its per-element loop
    native(lambda t, s, i: t.index_reduce(0, i, s, reduce, include_self=include_self),
           x[:, 0].contiguous(), source[:, 0].contiguous(), index)


def test_index_reduce_out_and_errors():
    x, source, index = randn(5, 4), randn(3, 4), torch.tensor([1, 1, 3])
    native(lambda t, s, i: torch.index_reduce(t, 0, i, s, "amax", out=torch.empty_like(t)), x, source, index)
    same_error(lambda t, s, i: t.index_reduce(0, i, s, "sum"), x, source, index)


# ---- take / put_ ----

def test_take_and_put():
    x = randn(4, 5)
    index = torch.tensor([[0, -1, 7], [19, 3, 3]])
    native(lambda t, i: t.take(i), x, index)
    native(lambda t, i: t.t().take(i), x, index)
    native(lambda t, i: torch.take(t, i, out=torch.empty(0, device=t.device)), x, index)
    source = randn(2, 3, seed=2)
    native(lambda t, i, s: t.clone().put_(i, s, accumulate=True), x, index, source)
    native(lambda t, i, s: t.t().clone().put_(i[:, :2], s[:, :2]), x, index, source)
    native(lambda t, i, s: t.t().put(i, s, accumulate=True), x, index, source)


def test_take_put_errors():
    x, index = randn(4, 5), torch.tensor([0, 1])
    same_error(lambda t, i: t.take(i.int()), x, index)
    same_error(lambda t, i: t.put(i, torch.ones(3, device=t.device)), x, index)
    # out= overlapping an input is rejected, as on the CPU
    same_error(lambda t, i: torch.take(t, i, out=t[0, :2]), x, index)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.to("mlu").take(torch.tensor([20], device="mlu"))
        torch.mlu.synchronize()


# ---- linalg_cross / renorm / aminmax ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int64])
def test_cross(dtype):
    a, b = randn(4, 3, 2).mul(4).to(dtype), randn(1, 3, 2, seed=3).mul(4).to(dtype)
    native(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b)
    native(lambda x, y: torch.cross(x.transpose(1, 2), y.transpose(1, 2), dim=-1), a, b)
    native(lambda x, y: torch.linalg.cross(x, y, dim=1, out=torch.empty(0, dtype=x.dtype, device=x.device)), a, b)
    same_error(lambda x, y: torch.linalg.cross(x, y, dim=0), a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_renorm(dtype):
    x = randn(4, 3, 5).mul(2).to(dtype)
    for p, dim, maxnorm in ((2, 0, 1.5), (1, 1, 3.0), (float("inf"), -1, 0.5)):
        native(lambda t: t.renorm(p, dim, maxnorm), x)
        native(lambda t: t.clone().renorm_(p, dim, maxnorm), x)
    same_error(lambda t: t.renorm(0.5, 0, 1.0), randn(()))
    same_error(lambda t: t.renorm(-1, 0, 1.0), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_aminmax(dtype):
    x = randn(4, 5).mul(5).to(dtype)
    native(lambda t: torch.aminmax(t), x)
    native(lambda t: torch.aminmax(t, dim=1, keepdim=True), x)
    native(lambda t: torch.aminmax(t.t(), dim=0), x)
    native(lambda t: torch.aminmax(t, dim=0, out=(torch.empty(0, dtype=t.dtype, device=t.device),
                                                   torch.empty(0, dtype=t.dtype, device=t.device))), x)
    same_error(lambda t: torch.aminmax(t, dim=0), torch.empty(0, 3))


def test_aminmax_nan():
    x = randn(3, 4)
    x[1, 2] = float("nan")
    native(lambda t: torch.aminmax(t, dim=1), x, equal_nan=True)
    native(lambda t: torch.aminmax(t), x, equal_nan=True)


# ---- nansum / trace / logspace ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_nansum(dtype):
    x = randn(6, 7).mul(3).to(dtype)
    if dtype.is_floating_point:
        x[::2, 1] = float("nan")
    native(lambda t: t.nansum(), x)
    native(lambda t: t.nansum(dim=1, keepdim=True), x)
    if dtype.is_floating_point:
        native(lambda t: torch.nanmean(t, dim=0), x)
    native(lambda t: torch.nansum(t, 0, dtype=torch.float64, out=torch.empty(0, dtype=torch.float64,
                                                                            device=t.device)), x)
    if dtype.is_floating_point:  # the CPU's kernel sums floating types only
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            torch.nansum(x.to("mlu"), 0, out=torch.empty(0, dtype=torch.long, device="mlu"))
    with pytest.raises(RuntimeError, match="nansum on mlu does not support complex inputs"):
        x.to("mlu", torch.complex64).nansum()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nansum_16bit_rounds_each_row_as_the_cpu(dtype):
    # Note [16-bit nansum as the CPU rounds it]: dims TensorIterator cannot merge round once per row.
    x = randn(3, 5, 7, 9).mul(8).to(dtype)
    x[x.abs() > 14] = float("nan")
    for dims in [(0, 2), (1, 3), (0, 1, 3), (2,), (0, 1, 2), (0, 1, 2, 3)]:
        for t in (x, x.transpose(0, -1)):  # the CPU's order follows the strides
            expected = torch.nansum(t, dims, keepdim=len(dims) == 2)
            got = torch.nansum(t.to("mlu"), dims, keepdim=len(dims) == 2).cpu()
            assert got.shape == expected.shape and torch.equal(got, expected), (dims, t.stride())
    out = torch.empty(0, dtype=dtype, device="mlu")
    torch.nansum(x.to("mlu"), (0, 2), out=out)
    assert torch.equal(out.cpu(), torch.nansum(x, (0, 2)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int16, torch.complex64])
def test_trace(dtype):
    x = randn(5, 7).mul(10).to(dtype)
    native(lambda t: t.trace(), x)
    native(lambda t: t.t().trace(), x)
    same_error(lambda t: t.trace(), randn(2, 3, 4))


def test_trace_backward():
    x = randn(4, 4)
    native(lambda t: torch.autograd.grad(t.requires_grad_().trace(), t)[0], x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.uint8])
def test_logspace(dtype):
    for start, end, steps, base in ((0, 3, 7, 10.0), (-2.5, 1.25, 50, 2.0), (1, 1, 1, 3.0), (2, 5, 0, 10.0),
                                    (4, -4, 9, 1.5)):
        if dtype == torch.uint8 and min(start, end) < 0:
            continue
        native(lambda device: torch.logspace(start, end, steps, base, dtype=dtype, device=device))
    native(lambda device: torch.logspace(torch.tensor(1.0), torch.tensor(2.0), 5, device=device))


# ---- max_unpool ----

@pytest.mark.parametrize("channels_last", [False, True])
def test_max_unpool2d(channels_last):
    x = randn(2, 3, 8, 8)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    pooled, indices = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    native(lambda p, i: F.max_unpool2d(p, i, 3, stride=2, padding=1, output_size=(8, 8)), pooled, indices,
           check_stride=True)
    pooled1, indices1 = F.max_pool1d(x[0, :, 0], 2, return_indices=True)
    native(lambda p, i: F.max_unpool1d(p, i, 2), pooled1, indices1)
    same_error(lambda p, i: F.max_unpool2d(p, i[..., :2], 3, stride=2), pooled, indices)


def test_max_unpool3d_and_backward():
    x = randn(2, 2, 4, 6, 6)
    pooled, indices = F.max_pool3d(x, 2, return_indices=True)
    native(lambda p, i: F.max_unpool3d(p, i, 2), pooled, indices, check_stride=True)
    native(lambda p, i: F.max_unpool3d(p[0], i[0], 2), pooled, indices)

    def grad(p, i):
        p = p.clone().requires_grad_()
        out = F.max_unpool2d(p, i, 2)
        return torch.autograd.grad((out * out).sum(), p)[0]
    pooled2, indices2 = F.max_pool2d(randn(1, 2, 6, 6), 2, return_indices=True)
    native(grad, pooled2, indices2)


def test_max_unpool_bad_index_is_a_device_error():
    pooled, indices = F.max_pool2d(randn(1, 1, 4, 4), 2, return_indices=True)
    indices[0, 0, 0, 0] = 99
    with pytest.raises(RuntimeError, match="out of bounds"):
        F.max_unpool2d(pooled.to("mlu"), indices.to("mlu"), 2)
        torch.mlu.synchronize()


# ---- masked_scatter_ ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_masked_scatter(dtype):
    x = randn(4, 5).mul(3).to(dtype)
    mask = randn(4, 5, seed=4) > 0
    source = randn(6, 5, seed=5).mul(3).to(dtype)
    native(lambda t, m, s: t.masked_scatter(m, s), x, mask, source)
    native(lambda t, m, s: t.clone().masked_scatter_(m[0], s), x, mask, source)  # broadcast mask
    native(lambda t, m, s: t.t().clone().masked_scatter_(m.t(), s), x, mask, source)
    native(lambda t, m, s: t[0].masked_scatter(m, s), x, mask, source)  # broadcast self


def test_masked_scatter_errors_and_grad():
    x, mask = randn(3, 4), randn(3, 4, seed=6) > 0
    same_error(lambda t, m: t.masked_scatter(m.float(), t), x, mask)
    same_error(lambda t, m: t.masked_scatter(m, t.double()), x, mask)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.to("mlu").masked_scatter_(torch.ones(3, 4, dtype=torch.bool, device="mlu"), torch.ones(5, device="mlu"))
        torch.mlu.synchronize()

    def grad(t, m):
        t = t.clone().requires_grad_()
        s = (t * 2).flatten()
        out = torch.zeros_like(t).masked_scatter(m, s)
        return torch.autograd.grad((out * out).sum(), t)[0]
    native(grad, x, mask)


# ---- nonzero_static / repeat_interleave ----

def test_nonzero_static():
    x = (randn(4, 5) > 0.3).to(torch.float32)
    for size in (0, 2, 40):
        native(lambda t: torch.nonzero_static(t, size=size, fill_value=-7), x)
    native(lambda t: torch.nonzero_static(t, size=3, out=torch.empty(0, dtype=torch.long, device=t.device)), x)
    same_error(lambda t: torch.nonzero_static(t, size=-1), x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave(dtype):
    repeats = torch.tensor([2, 0, 3, 1, 0], dtype=dtype)
    native(lambda r: torch.repeat_interleave(r), repeats)
    native(lambda r: torch.repeat_interleave(r, output_size=6), repeats)
    native(lambda x, r: x.repeat_interleave(r, dim=0), randn(5, 2), repeats)
    native(lambda r: torch.repeat_interleave(r[:0]), repeats)
    same_error(lambda r: torch.repeat_interleave(r), repeats.neg())
    same_error(lambda r: torch.repeat_interleave(r.view(1, 5)), repeats)


# ---- batch norm entry points ----

def test_batch_norm_legit_and_with_update():
    x, w, b = randn(4, 3, 5), randn(3, seed=7), randn(3, seed=8)

    def legit(x, w, b):
        rm, rv = torch.zeros(3, device=x.device), torch.ones(3, device=x.device)
        out = torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.1, 1e-5)
        return out, rm, rv
    native(legit, x, w, b)
    native(lambda x, w, b: torch.ops.aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5), x, w, b)

    def with_update(x, w, b):
        x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
        rm, rv = torch.zeros(3, device=x.device), torch.ones(3, device=x.device)
        out, mean, invstd, reserve = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
        gx, gw = torch.autograd.grad((out * out).sum(), (x, w))
        return out, mean, invstd, reserve, rm, rv, gx, gw
    native(with_update, x, w, b)


# ---- cummax / cummin / isin / scatter with a value and a reduction ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op, dtype):
    x = randn(5, 37).mul(2).round().to(dtype)  # rounded: many ties, whose index is the last one
    if dtype.is_floating_point:
        x[1, 5] = x[2, 9] = x[2, 20] = float("nan")
    fn = getattr(torch, op)
    native(lambda t: fn(t, dim=1), x, equal_nan=True)
    native(lambda t: fn(t, dim=0), x, equal_nan=True)
    native(lambda t: fn(t.t(), dim=0), x, equal_nan=True)
    native(lambda t: fn(t[0, 0], dim=0), x, equal_nan=True)
    if dtype == torch.float32:
        same_error(lambda t: fn(t, dim=0), x.to(torch.complex64))


def test_cummax_backward():
    def grad(t):
        t = t.clone().requires_grad_()
        return torch.autograd.grad(torch.cummax(t, 1).values.sum(), t)[0]
    native(grad, randn(3, 9).round())


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    elements = randn(6, 7).mul(4).round()
    native(lambda e, t: torch.isin(e, t, invert=invert), elements, torch.tensor([0.0, 2.0, -1.0]))  # small
    native(lambda e, t: torch.isin(e, t, invert=invert), elements, randn(60, seed=9).mul(4).round())  # sorts
    native(lambda e, t: torch.isin(e, t, assume_unique=True, invert=invert), torch.arange(10.0),
           torch.arange(5.0, 40.0))
    native(lambda e, t: torch.isin(e.int(), t, invert=invert), elements, torch.tensor([1.0, 3.0]))
    native(lambda e, t: torch.isin(e, t, out=torch.empty(0, dtype=torch.bool, device=e.device)),
           elements, torch.tensor([1.0]))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_value_reduce(reduce):
    x, index = randn(4, 5), torch.tensor([[0, 1, 2], [3, 3, 0]])
    native(lambda t, i: t.scatter(0, i, 1.5, reduce=reduce), x, index)
    native(lambda t, i: t.clone().scatter_(1, i, -2.0, reduce=reduce), x, index)
    native(lambda t, i: torch.scatter(t, 0, i, 3.0, reduce=reduce, out=torch.empty_like(t)), x, index)
    native(lambda t, i: torch.scatter(t, 0, i, t[:2, :3].contiguous(), reduce=reduce, out=torch.empty_like(t)),
           x, index)
    same_error(lambda t, i: t.scatter(0, i, 1.5, reduce="max"), x, index)


# ---- median / nanmedian ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median(op, dtype):
    x = randn(6, 9).mul(3).round().to(dtype)  # ties: the CPU picks the lowest index among equals
    if dtype.is_floating_point:
        x[1, 3] = x[1, 7] = x[4, 0] = float("nan")
    fn = getattr(torch, op)
    native(lambda t: fn(t), x, equal_nan=True)
    if dtype.is_floating_point:
        # an all-NaN slice: NaN; its index is whichever NaN the CPU's nth_element leaves there
        native(lambda t: fn(t.fill_(float("nan")), 0)[0], x.clone(), equal_nan=True)
        native(lambda t: fn(t.fill_(float("nan"))), x.clone(), equal_nan=True)
    native(lambda t: fn(t[0]), x, equal_nan=True)
    for dim in (0, 1, -1):
        native(lambda t: fn(t, dim), x, equal_nan=True)
        native(lambda t: fn(t.t(), dim, keepdim=True), x, equal_nan=True)
    native(lambda t: fn(t[0, 0], 0), x, equal_nan=True)
    same_error(lambda t: fn(t, 1), torch.empty(2, 0))
    with pytest.raises(RuntimeError, match="argument #1 'indices' to have .*scalar type Long"):
        fn(x.to("mlu"), 0, out=(torch.empty(0, device="mlu", dtype=x.dtype), torch.empty(0, device="mlu")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_kthvalue(dtype):
    # no ties: the CPU's quickselect leaves any index of equal values
    x = torch.randperm(40, generator=torch.Generator().manual_seed(3)).view(5, 8).sub(20).to(dtype)
    if dtype.is_floating_point:
        x[2, 3] = float("nan")
    for k, dim in ((1, 1), (3, 0), (8, -1), (5, 1)):
        native(lambda t: torch.kthvalue(t, k, dim), x, equal_nan=True)
        native(lambda t: torch.kthvalue(t.t(), min(k, 5), 0, keepdim=True), x, equal_nan=True)
    native(lambda t: torch.kthvalue(t[0, 0], 1), x)
    same_error(lambda t: torch.kthvalue(t, 9, 1), x)
    same_error(lambda t: torch.kthvalue(t, 1, 0), torch.empty(0, 3))
    same_error(lambda t: torch.kthvalue(t[0], 2, out=(t[0], torch.empty((), dtype=torch.long, device=t.device))), x)


def test_index_fill_of_an_expanded_self_fills_every_shared_location():
    def fill(t, i):
        e = t.clone()[:, :1].expand(4, 5)  # columns share memory
        with pytest.warns(UserWarning, match="expanded tensors is deprecated"):
            e.index_fill_(0, i, 9)
        return e.contiguous()
    native(fill, randn(4, 5), torch.tensor([1, 3]))

    def fill_along_expanded_dim(t, i):
        e = t.clone()[:1].expand(4, 5)
        with pytest.warns(UserWarning, match="expanded tensors is deprecated"):
            e.index_fill_(0, i, 9)
        return e.contiguous()
    native(fill_along_expanded_dim, randn(4, 5), torch.tensor([2]))
