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


def _assert_rounded_like(actual, expected):
    """The CPU's roundings around a float sum whose order is the GEMM's own (Note [addmv in 16 bits]): an element
    may sit one 16-bit step away where the two float sums round apart, rarely (one in 40 at most)."""
    actual = actual.cpu()
    step = torch.finfo(expected.dtype).eps
    torch.testing.assert_close(actual, expected, rtol=step, atol=0, equal_nan=True)
    assert (actual != expected).sum() <= max(1, expected.numel() // 40), f"{actual} != {expected}"


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


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_xlog1py_and_logit_round_as_the_cpu(dtype):
    """Issue 61 (case 8): xlog1py rounds log1p(y) to the 16-bit type before the product, as xlogy does (a Python
    scalar operand rounded first too); logit computes 1 - x, x / (1 - x) and 1 - eps in the 16-bit type (Note
    [logit in 16 bits])."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4000, generator=g) * 3).to(dtype)
    y = (torch.rand(4000, generator=g) * 3 - 0.9).to(dtype)
    p = torch.rand(4000, generator=g).to(dtype)
    p[:4] = torch.tensor([0.0, 1.0, 0.1, float("nan")])
    cases = {
        "xlog1py": lambda x, y, p: torch.special.xlog1py(x, y),
        "xlog1py other scalar": lambda x, y, p: torch.special.xlog1py(x, 0.1234567),
        "xlog1py self scalar": lambda x, y, p: torch.special.xlog1py(3.3333333, y),
        "xlog1py strided": lambda x, y, p: torch.special.xlog1py(x[::3], y[::3]),
        "logit": lambda x, y, p: torch.logit(p),
        "logit eps": lambda x, y, p: torch.logit(p, eps=0.2),
        "logit small eps": lambda x, y, p: torch.logit(p, eps=1e-3),
        "logit_": lambda x, y, p: p.clone().logit_(0.05),
    }
    for name, fn in cases.items():
        expected = fn(x, y, p)
        _assert_bits_equal(fn(x.to("mlu"), y.to("mlu"), p.to("mlu")), expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_i0e_takes_the_cpus_vector_body_and_scalar_loop(dtype):
    """Note [i0e's scalar loop]: the CPU's vector body rounds i0e once, its scalar loop (chunk and row tails,
    strided and short rows) computes in the 16-bit type; mlu's results equal the CPU's bit for bit."""
    g = torch.Generator().manual_seed(0)
    for n in (1, 5, 31, 33, 100, 812, 40000, 70001):
        a = (torch.randn(n, generator=g) * 6).to(dtype)
        _assert_bits_equal(torch.special.i0e(a.to("mlu")), torch.special.i0e(a))
        out = torch.empty_like(a)
        _assert_bits_equal(torch.special.i0e(a.to("mlu"), out=out.to("mlu")), torch.special.i0e(a, out=out))
    m = (torch.randn(200, 60, generator=g) * 6).to(dtype)
    views = [lambda t: t[::2], lambda t: t[:, :50], lambda t: t[:, :20], lambda t: t.mT, lambda t: t[:1].expand(3, 60),
             lambda t: t[0]]
    for view in views:  # taken on each device: .to() would copy a strided view densely
        _assert_bits_equal(torch.special.i0e(view(m.to("mlu"))), torch.special.i0e(view(m)))
    aliased = m.to("mlu")[:, 1:40]
    torch.special.i0e(aliased, out=aliased)  # out= is self: the scalar loop reads self as it was
    _assert_bits_equal(aliased, torch.special.i0e(m[:, 1:40]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_addmv_rounds_as_the_cpus_gemv(dtype):
    """Note [addmv in 16 bits]: below oneDNN's size the CPU's gemv rounds alpha and beta to the 16-bit type and
    beta * self ('t': row-major mat; 'n': column-major mat, whose float sum is rounded before the add)."""
    g = torch.Generator().manual_seed(0)
    self, vec = torch.randn(40, generator=g).to(dtype), torch.randn(50, generator=g).to(dtype)
    mat, matT, wide = (torch.randn(shape, generator=g).to(dtype) for shape in ((40, 50), (50, 40), (40, 100)))
    # row-major ('t'), column-major ('n'), neither (the CPU's contiguous copy, 't'); taken on each device
    layouts = (lambda a, b, c: a, lambda a, b, c: b.mT, lambda a, b, c: c[:, ::2])
    for beta, alpha in ((0.2, 0.6), (1, 1), (0, 0.7), (1.3, 1), (0.5, 1), (1, 0.3)):
        for layout in layouts:
            expected = torch.addmv(self, layout(mat, matT, wide), vec, beta=beta, alpha=alpha)
            actual = torch.addmv(self.to("mlu"), layout(mat.to("mlu"), matT.to("mlu"), wide.to("mlu")), vec.to("mlu"),
                                 beta=beta, alpha=alpha)
            _assert_rounded_like(actual, expected)
    _assert_rounded_like(torch.mv(mat.to("mlu"), vec.to("mlu")), torch.mv(mat, vec))
    _assert_rounded_like(self.to("mlu").addmv_(mat.to("mlu"), vec.to("mlu"), beta=0.2, alpha=0.6),
                       self.clone().addmv_(mat, vec, beta=0.2, alpha=0.6))
