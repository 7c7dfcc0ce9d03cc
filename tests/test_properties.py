"""Property tests: random layouts, dtypes and broadcasts, mlu against the CPU, drawn by hypothesis.

Every property builds the same tensor on both devices from one layout: a storage with an offset, a view that
is contiguous, permuted, sliced with steps, expanded (zero strides) or self-overlapping (inputs only), then
runs an op and requires the CPU's values, dtype and strides, and, for in-place ops, the CPU's whole storage
afterwards (what a view writes and what it leaves alone). Negative strides reach the kernel library through
flip, whose source the kernels read backwards. Runs are derandomized (the same examples each time; set
HYPOTHESIS_PROFILE=explore for new ones, see conftest.py).
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import make_tensor

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTEGERS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
ALL = FLOATS + INTEGERS + [torch.bool]


# --- layouts -------------------------------------------------------------------------------------------------

@st.composite
def layouts(draw, max_dims=4, max_size=5, min_dims=0, overlap=False):
    """(storage_numel, build) where build(storage) returns the view, the same on every device."""
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = draw(st.lists(st.integers(0, max_size), min_size=ndim, max_size=ndim))
    kinds = ["contiguous", "permuted", "sliced", "expanded"] + (["overlapping"] if overlap else [])
    kind = draw(st.sampled_from(kinds))
    offset = draw(st.integers(0, 3))
    if kind == "overlapping":
        strides = draw(st.lists(st.integers(0, 2), min_size=ndim, max_size=ndim))
        extent = sum((s - 1) * t for s, t in zip(sizes, strides) if s > 0)
        numel = offset + extent + 1
        return numel, lambda storage: storage.as_strided(sizes, strides, offset)
    steps = [draw(st.integers(1, 3)) if kind == "sliced" else 1 for _ in sizes]
    padded = [max(s * t, 1) + (draw(st.integers(0, 2)) if kind == "sliced" else 0) for s, t in zip(sizes, steps)]
    order = draw(st.permutations(range(ndim))) if kind in ("permuted", "sliced") else list(range(ndim))
    expanded = [draw(st.booleans()) for _ in sizes] if kind == "expanded" else [False] * ndim
    numel = offset + math.prod(padded)

    def build(storage):
        base = storage[offset:offset + math.prod(padded)].view([padded[d] for d in order])
        base = base.permute([order.index(d) for d in range(ndim)])
        view = base[tuple(slice(0, s * t, t) for s, t in zip(sizes, steps))]
        if any(expanded):
            view = view[tuple(slice(0, 1) if e else slice(None) for e in expanded)]
            view = view.expand(sizes)
        return view

    return numel, build


def twin(layout, dtype, seed, low=None, high=None):
    """The same view of the same values on the CPU and on mlu."""
    numel, build = layout
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        storage = make_tensor((numel,), dtype=dtype, device="cpu", low=low, high=high)
    return build(storage), build(storage.to("mlu"))


def assert_same(mlu, cpu, rtol=None, atol=None, strides=True):
    if isinstance(cpu, (tuple, list)):
        for m, c in zip(mlu, cpu):
            assert_same(m, c, rtol, atol, strides)
        return
    assert mlu.device.type == "mlu"
    assert mlu.dtype == cpu.dtype and mlu.shape == cpu.shape
    if strides:
        assert mlu.stride() == cpu.stride(), f"strides {mlu.stride()} != the CPU's {cpu.stride()}"
    torch.testing.assert_close(mlu.cpu(), cpu, rtol=rtol, atol=atol, equal_nan=True)


def tolerance(dtype, reduced=1):
    """Tolerances for results that may sum `reduced` terms in another order."""
    if dtype in (torch.float16, torch.bfloat16):
        return 2e-2, 2e-2 * reduced
    if dtype == torch.float32:
        return 1e-5 * reduced, 1e-5 * reduced
    if dtype == torch.float64:
        return 1e-12 * reduced, 1e-12 * reduced
    return 0, 0


seeds = st.integers(0, 2**31 - 1)


# --- pointwise -----------------------------------------------------------------------------------------------

UNARY = {
    "neg": (lambda t: -t, ALL[:-1]), "abs": (torch.abs, ALL[:-1]), "exp": (torch.exp, FLOATS),
    "sigmoid": (torch.sigmoid, FLOATS), "trunc": (torch.trunc, FLOATS), "square": (torch.square, FLOATS),
    "logical_not": (torch.logical_not, ALL), "bitwise_not": (torch.bitwise_not, INTEGERS + [torch.bool]),
    "to_float32": (lambda t: t.to(torch.float32), ALL), "clamp": (lambda t: t.clamp(-2, 3), ALL[:-1]),
}


@given(name=st.sampled_from(sorted(UNARY)), data=st.data(), layout=layouts(overlap=True), seed=seeds)
def test_unary_ops_on_any_layout(name, data, layout, seed):
    fn, dtypes = UNARY[name]
    dtype = data.draw(st.sampled_from(dtypes))
    cpu, mlu = twin(layout, dtype, seed)
    assert_same(fn(mlu), fn(cpu), *tolerance(dtype))


def broadcast_partner(draw, shape):
    """A shape that broadcasts against `shape`: some dims 1, some leading dims dropped."""
    dropped = draw(st.integers(0, len(shape)))
    return [1 if draw(st.booleans()) else s for s in shape[dropped:]]


BINARY = {
    "add": lambda a, b: a + b, "mul": torch.mul, "sub": lambda a, b: a - b, "maximum": torch.maximum,
    "eq": torch.eq, "lt": torch.lt, "where_gt": lambda a, b: torch.where(a > b, a, b),
    "atan2": lambda a, b: torch.atan2(a.float(), b.float()),
}


@given(name=st.sampled_from(sorted(BINARY)), data=st.data(), layout=layouts(), seed=seeds,
       dtypes=st.tuples(st.sampled_from(ALL[:-1]), st.sampled_from(ALL[:-1])))
def test_binary_ops_broadcast_and_promote_like_the_cpu(name, data, layout, seed, dtypes):
    a_cpu, a_mlu = twin(layout, dtypes[0], seed)
    partner_shape = broadcast_partner(data.draw, list(a_cpu.shape))
    b_cpu = make_tensor(partner_shape, dtype=dtypes[1], device="cpu")
    if data.draw(st.booleans()) and b_cpu.dim() >= 2:
        b_cpu = b_cpu.transpose(0, -1).contiguous().transpose(0, -1)  # a column-major partner
    b_mlu = b_cpu.to("mlu")
    fn = BINARY[name]
    order = data.draw(st.booleans())
    expected = fn(a_cpu, b_cpu) if order else fn(b_cpu, a_cpu)
    actual = fn(a_mlu, b_mlu) if order else fn(b_mlu, a_mlu)
    assert_same(actual, expected, *tolerance(expected.dtype))


@given(layout=layouts(min_dims=1), seed=seeds, dtype=st.sampled_from(ALL[:-1]), scalar=st.integers(-3, 3))
def test_in_place_ops_on_views_write_what_the_cpu_writes(layout, seed, dtype, scalar):
    numel, build = layout
    storage = make_tensor((numel,), dtype=dtype, device="cpu")
    on_mlu = storage.to("mlu")
    cpu_view, mlu_view = build(storage), build(on_mlu)
    if any(s == 0 for s in cpu_view.stride()) and cpu_view.numel() > 1:  # expanded views: not writable
        with pytest.raises(RuntimeError, match="unsupported operation") as cpu_error:
            cpu_view.mul_(scalar)
        with pytest.raises(RuntimeError) as mlu_error:
            mlu_view.mul_(scalar)
        assert str(mlu_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]
        return
    cpu_view.mul_(scalar).add_(1)
    mlu_view.mul_(scalar).add_(1)
    assert_same(on_mlu, storage)  # the view's elements changed, and nothing else


# --- reductions ----------------------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum(d, keepdim=k), ALL), "amax": (lambda t, d, k: t.amax(d, keepdim=k), ALL[:-1]),
    "mean": (lambda t, d, k: t.mean(d, keepdim=k), FLOATS), "prod": (lambda t, d, k: t.prod(d[0], keepdim=k), ALL),
    "argmax": (lambda t, d, k: t.argmax(d[0], keepdim=k), ALL[:-1]),
    "any": (lambda t, d, k: t.any(d[0], keepdim=k), ALL),
    "logsumexp": (lambda t, d, k: t.logsumexp(d, keepdim=k), FLOATS),
}


@given(name=st.sampled_from(sorted(REDUCTIONS)), data=st.data(), layout=layouts(min_dims=1, overlap=True),
       seed=seeds, keepdim=st.booleans())
def test_reductions_over_any_dims_of_any_layout(name, data, layout, seed, keepdim):
    fn, dtypes = REDUCTIONS[name]
    dtype = data.draw(st.sampled_from(dtypes))
    # Small values keep products and sums of integers from overflowing differently.
    cpu, mlu = twin(layout, dtype, seed, low=-2 if dtype != torch.uint8 else 0, high=2)
    dims = data.draw(st.lists(st.integers(0, cpu.dim() - 1), min_size=1, max_size=cpu.dim(), unique=True))
    if name in ("amax", "argmax", "logsumexp") and any(cpu.shape[d] == 0 for d in dims):
        dims = [d for d in dims if cpu.shape[d] != 0] or None
        if dims is None:
            return  # a reduction over no element: the CPU raises, checked by test_misuse
    reduced = math.prod(cpu.shape[d] for d in dims)
    expected = fn(cpu, dims, keepdim)
    assert_same(fn(mlu, dims, keepdim), expected, *tolerance(expected.dtype, max(reduced, 1)))


# --- indexing ------------------------------------------------------------------------------------------------

@given(data=st.data(), layout=layouts(min_dims=1, overlap=True), seed=seeds, dtype=st.sampled_from(ALL))
def test_index_select_gather_and_advanced_indexing(data, layout, seed, dtype):
    cpu, mlu = twin(layout, dtype, seed)
    dim = data.draw(st.integers(0, cpu.dim() - 1))
    size = cpu.shape[dim]
    if size == 0:
        return
    count = data.draw(st.integers(0, 6))
    index = torch.tensor(data.draw(st.lists(st.integers(0, size - 1), min_size=count, max_size=count)),
                         dtype=torch.long)
    assert_same(mlu.index_select(dim, index.to("mlu")), cpu.index_select(dim, index))
    negative = index - size  # advanced indexing takes negative indices
    key = (slice(None),) * dim + (negative,)
    assert_same(mlu[tuple(k.to("mlu") if isinstance(k, torch.Tensor) else k for k in key)], cpu[key],
                strides=False)
    shape = list(cpu.shape)
    shape[dim] = count
    gather_index = torch.randint(0, size, shape, generator=torch.Generator().manual_seed(seed))
    assert_same(mlu.gather(dim, gather_index.to("mlu")), cpu.gather(dim, gather_index))


@given(data=st.data(), layout=layouts(min_dims=1), seed=seeds, dtype=st.sampled_from(FLOATS + [torch.int64]))
def test_scatter_add_and_index_add_into_any_layout(data, layout, seed, dtype):
    cpu, mlu = twin(layout, dtype, seed, low=-3, high=3)
    if any(s == 0 for s in cpu.stride()) and cpu.numel() > 1:
        return  # expanded: not writable (test_in_place_ops_on_views_write_what_the_cpu_writes)
    dim = data.draw(st.integers(0, cpu.dim() - 1))
    if cpu.shape[dim] == 0:
        return
    count = data.draw(st.integers(0, 6))
    index = torch.randint(0, cpu.shape[dim], (count,), generator=torch.Generator().manual_seed(seed))
    source_shape = list(cpu.shape)
    source_shape[dim] = count
    source = make_tensor(source_shape, dtype=dtype, device="cpu", low=-3, high=3)
    rtol, atol = tolerance(dtype, count + 1)
    assert_same(mlu.index_add(dim, index.to("mlu"), source.to("mlu")), cpu.index_add(dim, index, source),
                rtol, atol)
    scatter_index = index.view([-1 if d == dim else 1 for d in range(cpu.dim())]).expand(source_shape)
    assert_same(mlu.scatter_add(dim, scatter_index.to("mlu"), source.to("mlu")),
                cpu.scatter_add(dim, scatter_index, source), rtol, atol)


# --- copies --------------------------------------------------------------------------------------------------

@given(source=layouts(overlap=True), seed=seeds, dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
       data=st.data())
def test_copies_between_any_layouts_and_dtypes(source, seed, dtypes, data):
    cpu, mlu = twin(source, dtypes[0], seed)
    assert_same(mlu.contiguous(), cpu.contiguous())
    assert_same(mlu.clone(), cpu.clone())  # preserve_format: the CPU's strides
    assert_same(mlu.to(dtypes[1]), cpu.to(dtypes[1]))
    dims = data.draw(st.lists(st.integers(0, max(cpu.dim() - 1, 0)), max_size=cpu.dim(), unique=True))
    if cpu.dim():
        assert_same(mlu.flip(dims), cpu.flip(dims))  # the kernels read the source with negative strides
    # Into a destination of another layout (non-overlapping, same shape).
    order = data.draw(st.permutations(range(cpu.dim())))
    cpu_dst = torch.empty([cpu.shape[d] for d in order], dtype=dtypes[1]).permute(
        [order.index(d) for d in range(cpu.dim())])
    mlu_dst = cpu_dst.to("mlu")
    assert_same(mlu_dst.copy_(mlu), cpu_dst.copy_(cpu))
    # Between the host and the device, both ways, from any layout.
    assert_same(cpu.to("mlu"), cpu.clone())
    host = torch.empty_like(cpu_dst)
    torch.testing.assert_close(host.copy_(mlu), cpu_dst.copy_(cpu), rtol=0, atol=0)
