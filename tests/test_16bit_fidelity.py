"""16-bit results equal to the CPU's to the bit where the CPU's rounding is well defined (issue 33): nextafter steps in
the storage type; xlogy, glu, addr, div with a rounding mode, std and std_mean round where the CPU rounds."""
import pytest
import torch

import torch_mlu  # noqa: F401


def special_values(dtype):
    info = torch.finfo(dtype)
    return torch.tensor([0.0, -0.0, 1.0, -1.0, info.tiny, -info.tiny, info.max, -info.max, float("inf"),
                         float("-inf"), float("nan"), info.smallest_normal / 4, 3.5, -2.25], dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_nextafter_steps_in_the_storage_type(dtype):
    # Note [nextafter in 16 bits]: one step of the 16-bit type, not a float step rounded back.
    values = special_values(dtype)
    a = values.repeat_interleave(len(values))
    b = values.repeat(len(values))
    torch.manual_seed(0)
    a = torch.cat([a, torch.randn(2000).to(dtype)])
    b = torch.cat([b, torch.randn(2000).to(dtype)])
    expected = torch.nextafter(a, b)
    actual = torch.nextafter(a.to("mlu"), b.to("mlu")).cpu()
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(expected.view(torch.int16 if dtype.itemsize == 2 else expected.dtype)[~expected.isnan()],
                       actual.view(torch.int16 if dtype.itemsize == 2 else actual.dtype)[~actual.isnan()])
    one = torch.ones(1, dtype=dtype)
    if dtype.itemsize == 2:
        assert torch.nextafter(one.to("mlu"), 2 * one.to("mlu")).item() > 1  # it moves
    out = torch.empty_like(a, device="mlu")
    torch.nextafter(a.to("mlu"), b.to("mlu"), out=out)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0, equal_nan=True)


def _assert_bits_equal(actual, expected):
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0, equal_nan=True)


ROUNDING_CASES = {
    # Note [xlogy in 16 bits]: log(y) is rounded to the storage type before the product.
    "xlogy": lambda x, y, v, w, m: torch.xlogy(x, y),
    "xlogy_zero_and_nan":
    lambda x, y, v, w, m: torch.xlogy(torch.where(x > 1, 0, x), torch.where(y > 1, float("nan"), y)),
    # The CPU's glu_kernel: a * sigmoid(b) in float, rounded once (a fused kernel, not mul of a rounded sigmoid).
    "glu": lambda x, y, v, w, m: torch.nn.functional.glu(m[:, :32], -1),
    "glu_dim0": lambda x, y, v, w, m: torch.nn.functional.glu(m, 0),
    # Note [addr in 16 bits]: every product and the sum rounded, the scalars too.
    "addr": lambda x, y, v, w, m: torch.addr(m, w, v, beta=0.7, alpha=1.3),
    "addr_beta0": lambda x, y, v, w, m: torch.addr(m, w, v, beta=0, alpha=1.3),
    "addr_default": lambda x, y, v, w, m: torch.addr(m, w, v),
    "addr_inplace": lambda x, y, v, w, m: m.clone().addr_(w, v, beta=-0.3, alpha=2.1),
    # Note [Division rounding in 16 bits]: trunc of the rounded quotient; floor division step by step in 16 bits.
    "div_trunc": lambda x, y, v, w, m: torch.div(x * 20, m, rounding_mode="trunc"),
    "div_floor": lambda x, y, v, w, m: torch.div(x * 20, m, rounding_mode="floor"),
    "floor_divide": lambda x, y, v, w, m: torch.floor_divide(x * 20, m),
    # std takes the square root before the one rounding to 16 bits (the CPU's Welford reduction).
    "std": lambda x, y, v, w, m: torch.std(m, 0),
    "std_mean": lambda x, y, v, w, m: torch.std_mean(m, 1),
    "var_mean": lambda x, y, v, w, m: torch.var_mean(m, 1, correction=0),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(ROUNDING_CASES))
def test_ops_round_where_the_cpu_rounds(name, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 33, generator=g).to(dtype)
    y = (torch.rand(64, 33, generator=g) * 3 + 0.01).to(dtype)
    v, w = torch.randn(33, generator=g).to(dtype), torch.randn(64, generator=g).to(dtype)
    m = torch.randn(64, 33, generator=g).to(dtype)
    fn = ROUNDING_CASES[name]
    expected = fn(x, y, v, w, m)
    actual = fn(*(t.to("mlu") for t in (x, y, v, w, m)))
    pairs = zip(actual, expected) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        _assert_bits_equal(a, e)


def test_addr_of_integers_and_bools_matches_the_cpu():
    m, v1, v2 = torch.arange(12).reshape(3, 4), torch.arange(3), torch.arange(4)
    _assert_bits_equal(torch.addr(m.to("mlu"), v1.to("mlu"), v2.to("mlu"), beta=2, alpha=3),
                       torch.addr(m, v1, v2, beta=2, alpha=3))
    b = torch.tensor([True, False, True])
    _assert_bits_equal(torch.addr((b[:, None] & b).to("mlu"), b.to("mlu"), b.to("mlu")), torch.addr(b[:, None] & b, b, b))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point"):
        torch.addr(m.to("mlu"), v1.to("mlu"), v2.to("mlu"), alpha=0.5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_log_softmax_over_the_last_dim_rounds_its_log_sum_as_the_cpu(dtype):
    """Note [16-bit log_softmax over the last dim]: the sum of exponentials and its log are rounded to the 16-bit
    type there (rows, short rows by columns, transposed rows), not over another dim (a trailing size-1 dim
    included)."""
    g = torch.Generator().manual_seed(0)
    cases = [((5, 5), -1), ((3, 1000), -1), ((64, 7), -1), ((7,), 0), ((2, 3, 40), -1), ((4, 3, 1), 1),
             ((300, 3), -1)]
    for shape, dim in cases:
        for scale in (1, 10):
            x = (torch.randn(shape, generator=g) * scale).to(dtype)
            for view in (x, x.mT) if x.dim() == 2 else (x,):
                expected = torch.log_softmax(view, dim)
                assert torch.log_softmax(view.to("mlu"), dim).cpu().equal(expected), (shape, dim, scale)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_add_and_sub_with_alpha_round_as_the_cpu(dtype):
    """Note [add with alpha as the CPU rounds]: the CPU's vector body rounds self + alpha * other once, its scalar
    loop (the tail of each thread's chunk) rounds the product first; the results equal the CPU's bit for bit, for
    tensors, broadcast 0-dim tensors and Python scalars, in-place, sub and rsub, small and chunked sizes."""
    g = torch.Generator().manual_seed(0)
    for n in (1, 25, 63, 100, 1000, 40000, 70001):
        a = torch.randn(n, generator=g).to(dtype)
        b = torch.randn(n, generator=g).to(dtype)
        for alpha in (-3.125, 0.37, 2, 1):
            cases = {
                "add": lambda x, y: torch.add(x, y, alpha=alpha),
                "sub": lambda x, y: torch.sub(x, y, alpha=alpha),
                "rsub": lambda x, y: torch.rsub(x, y, alpha=alpha),
                "add_": lambda x, y: x.clone().add_(y, alpha=alpha),
                "out=": lambda x, y: torch.add(x, y, alpha=alpha, out=torch.empty_like(x)),
                "0-dim other": lambda x, y: torch.add(x, y[:1].reshape(()), alpha=alpha),
                "Python scalar": lambda x, y: torch.add(x, 1.7, alpha=alpha),
                "rsub Python scalar": lambda x, y: torch.rsub(x, 1.7, alpha=alpha),
                "strided": lambda x, y: torch.sub(x[::2], y[::2], alpha=alpha),
            }
            for name, fn in cases.items():
                expected = fn(a, b)
                assert fn(a.to("mlu"), b.to("mlu")).cpu().equal(expected), (n, alpha, name)
    # 2-D layouts: transposed operands (one dense loop in memory order), a strided operand (scalar loop only).
    x, y, z = (torch.randn(shape, generator=g).to(dtype) for shape in ((37, 45), (37, 45), (45, 37)))
    layouts = [lambda x, y, z: (x.mT, y.mT), lambda x, y, z: (x, z.mT), lambda x, y, z: (x[:, 1::2], y[:, :44:2])]
    for views in layouts:  # taken on each device: .to() would copy a strided view densely
        expected = torch.add(*views(x, y, z), alpha=-0.3)
        assert torch.add(*views(x.to("mlu"), y.to("mlu"), z.to("mlu")), alpha=-0.3).cpu().equal(expected)
