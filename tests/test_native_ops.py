"""The core ops (the lists below: unary math, activations, binary, integer, ternary, reductions, scans,
indexing and shape ops, scatters, advanced indexing) run natively on mlu (no CPU fallback) and agree with the CPU.

OpInfo (test_opinfo.py) is the broad correctness gate; this file pins the contract that these ops
have mlu kernels, checks layouts OpInfo rarely builds (broadcast, transposed, mixed dtypes, CPU
scalars, large tensors that split across compute threads), and covers device-side index errors and
the zero-copy fallback.
"""
from functools import partial

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

torch.manual_seed(0)


@pytest.fixture
def check_native(native_oracle):
    """The shared oracle with NaNs equal: random inputs give NaN on both devices (log1p, xlogy, ...)."""
    return partial(native_oracle, equal_nan=True)


X = torch.randn(33, 65)
Y = torch.randn(65)
XI = torch.randint(-50, 50, (33, 65))
YI = torch.randint(1, 9, (65,))

UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
         "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh", "erf", "erfc", "erfinv",
         "sigmoid", "sign", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "isnan", "isinf", "isfinite",
         "lgamma", "digamma", "nan_to_num", "logical_not", "signbit", "sinc"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_math(name, check_native):
    x = X.clone()
    if name in ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma"):
        x = x.abs() + 0.1
    if name in ("asin", "acos", "atanh", "erfinv"):
        x = x.clamp(-0.99, 0.99)
    check_native(getattr(torch, name), x)


ACTIVATIONS = ["relu", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh", "hardswish",
               "hardsigmoid", "softplus", "tanh", "sigmoid", "relu6", "hardshrink", "softshrink", "logsigmoid"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_forward_and_backward(name, check_native, native_oracle):
    fn = getattr(F, name)
    check_native(fn, X)

    def grad(x):
        x = x.clone().requires_grad_()
        fn(x).sum().backward()
        return x.grad

    native_oracle(grad, X)


def test_gelu_tanh_approximation_and_its_backward(check_native):
    check_native(lambda a: F.gelu(a, approximate="tanh"), X)
    check_native(lambda g, a: torch.ops.aten.gelu_backward(g, a, approximate="tanh"), Y.expand(33, 65), X)
    check_native(lambda g, a: torch.ops.aten.gelu_backward(g, a), Y.expand(33, 65), X)


BINARY = [
    ("add", lambda a, b: torch.add(a, b, alpha=2)), ("sub", lambda a, b: torch.sub(a, b, alpha=0.5)),
    ("mul", torch.mul), ("div", torch.div), ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")), ("remainder", torch.remainder),
    ("fmod", torch.fmod), ("pow", lambda a, b: torch.pow(a.abs(), b)), ("maximum", torch.maximum),
    ("minimum", torch.minimum), ("fmax", torch.fmax), ("atan2", torch.atan2), ("hypot", torch.hypot),
    ("copysign", torch.copysign), ("xlogy", torch.xlogy), ("logaddexp", torch.logaddexp),
    ("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge),
    ("logical_and", torch.logical_and), ("logical_xor", torch.logical_xor),
]


@pytest.mark.parametrize("name,fn", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("layout", ["contig", "broadcast", "transposed"])
def test_binary_ops(name, fn, layout, check_native):
    a, b = X, torch.randn(33, 65)
    if layout == "broadcast":
        b = Y
    elif layout == "transposed":
        a, b = torch.randn(65, 33).t(), torch.randn(65, 33).t()
    check_native(fn, a, b)


@pytest.mark.parametrize("name,fn", [
    ("int floor div", lambda a, b: a // b), ("int remainder", torch.remainder), ("int pow", lambda a, b: a ** 2),
    ("bitwise_and", torch.bitwise_and), ("bitwise_xor", torch.bitwise_xor), ("lshift", lambda a, b: a << b),
    ("rshift", lambda a, b: a >> b), ("gcd", torch.gcd), ("int + float scalar", lambda a, b: a + 1.5),
    ("int * bool", lambda a, b: a * (b > 3)),
])
def test_integer_ops(name, fn, check_native):
    check_native(fn, XI, YI)


def test_mixed_dtypes_cpu_scalars_and_out_dtype(check_native):
    check_native(lambda a, b: a + b, X.half(), Y)               # half + float -> float
    check_native(lambda a, b: a * b, X.bfloat16(), Y.bfloat16())
    check_native(lambda a: a + torch.tensor(2.5), X)              # 0-dim CPU tensor operand
    check_native(lambda a: torch.exp(a, out=torch.empty(33, 65, dtype=torch.float64, device=a.device)), X)
    check_native(lambda a: torch.add(a, 1, out=torch.empty(0, device=a.device)), X)  # out resized


def test_ternary_ops(check_native):
    check_native(lambda c, a, b: torch.where(c, a, b), X > 0, X, Y)
    check_native(lambda c, a: torch.where(c, a, 0.0), X > 0, X)
    check_native(lambda a: a.clamp(-0.5, 0.5), X)
    check_native(lambda a, lo, hi: a.clamp(lo, hi), X, -Y.abs(), Y.abs())
    check_native(torch.lerp, X, torch.randn(33, 65), Y)
    check_native(lambda a, b, c: torch.addcmul(a, b, c, value=0.5), X, Y, X)
    check_native(lambda a, b, c: torch.addcdiv(a, b, c, value=0.5), X, Y, X.abs() + 1)
    check_native(lambda a: a.masked_fill(a > 0, -1.0), X)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_reductions(dim, check_native):
    kw = {} if dim is None else {"dim": dim}
    for fn in [lambda a: a.sum(**kw), lambda a: a.mean(**kw), lambda a: a.amax(**kw), lambda a: a.amin(**kw),
               lambda a: a.var(**kw), lambda a: a.std(**kw, correction=0),
               lambda a: torch.linalg.vector_norm(a, **kw), lambda a: torch.linalg.vector_norm(a, 1, **kw),
               lambda a: torch.logsumexp(a, **(kw or {"dim": (0, 1)}))]:
        check_native(fn, X)
        check_native(fn, X.t())
    check_native(lambda a: a.sum(**kw), XI)
    check_native(lambda a: (a > 0).any() if dim is None else (a > 0).any(dim=dim), X)


def test_reductions_with_indices_scans_and_dtypes(check_native, native_oracle):
    check_native(lambda a: a.max(1), X)
    check_native(lambda a: a.min(0, keepdim=True), X)
    check_native(lambda a: (a.argmax(), a.argmin(1), a.max(), a.min()), X)
    check_native(lambda a: (a.cumsum(1), a.cumprod(0)), X / 4)
    check_native(lambda a: a.prod(1), X)
    check_native(lambda a: a.sum(1, dtype=torch.float64), X)
    check_native(lambda a: a.sum(0), X.bfloat16(), rtol=1e-2, atol=1e-2)
    # Long reductions split across compute threads; mlu accumulates in double, so
    # the oracle is the float64 result (CPU float32 sums drift by ~1e-5 here).
    big = torch.randn(2_000_000)
    want = [big.double().sum().float(), big.amax(), big.double().norm().float()]
    native_oracle(lambda a: (a.sum(), a.amax(), a.norm()), big,
                  compare=lambda i, got, _: torch.testing.assert_close(got, want[i], rtol=1e-6, atol=1e-4))


def test_indexing_and_shape_ops(check_native):
    w = torch.randn(10, 4)
    idx = torch.randint(0, 10, (5, 3))
    check_native(lambda a, i: a.index_select(0, i), w, idx.flatten())
    check_native(lambda a, i: a.gather(1, i), w, torch.randint(0, 4, (10, 2)))
    check_native(lambda a, i, s: a.scatter(1, i, s), w, torch.randint(0, 4, (10, 2)), torch.randn(10, 2))
    check_native(lambda a, i, s: a.scatter_add(0, i, s), w, torch.randint(0, 10, (30, 4)), torch.randn(30, 4))
    check_native(lambda a, i, s: a.scatter_reduce(0, i, s, "amax"), w, torch.randint(0, 10, (30, 4)),
                 torch.randn(30, 4))
    check_native(lambda a, i, s: a.index_add(0, i, s, alpha=2), w, torch.randint(0, 10, (30,)), torch.randn(30, 4))
    check_native(lambda a, b: (torch.cat([a, b], 1), torch.stack([a, b])), w, w * 2)
    check_native(lambda a, i: F.embedding(i, a), w, idx)
    check_native(lambda i: F.one_hot(i, 10), idx)
    check_native(lambda a: (a.flip(0), a.roll(3, 1), a.tril(1), a.triu(-1), a.repeat(2, 3)), w)
    check_native(lambda a: (a.sort(1), a.argsort(0, descending=True), a.topk(2, 1)), w)
    check_native(lambda a: (a.nonzero(), a[a > 0], a.masked_select(a > 0.5)), w)
    check_native(lambda a, i: (a[i], a[:, torch.tensor([1, 3], device=a.device)]), w, idx)
    check_native(lambda a: torch.unique(a, return_inverse=True, return_counts=True), torch.randint(0, 6, (40,)))
    check_native(lambda a: a.expand(3, 10, 4).contiguous(), w)
    check_native(lambda a: (a.split(3), a.chunk(2, 1)), w)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_scatter_reduce_every_mode(reduce, include_self, dtype, check_native):
    self_ = (torch.randn(4, 6) * 4).to(dtype)
    src = (torch.randn(9, 6) * 4).to(dtype)
    index = torch.randint(0, 4, (9, 6))
    row_index = torch.randint(0, 6, (4, 5))

    def all_forms(a, i, r, s):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        torch.scatter_reduce(a, 0, i, s, reduce, include_self=include_self, out=out)
        in_place = a.clone().scatter_reduce_(1, r, s, reduce, include_self=include_self)
        return a.scatter_reduce(0, i, s, reduce, include_self=include_self), out, in_place

    check_native(all_forms, self_, index, row_index, src)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_scatters_accumulate_in_float_like_cpu(dtype, check_native):
    # 11.9375 - 1.09375 rounds to 10.875 in bfloat16; the CPU keeps the sum in
    # float and rounds once: -1.34375, not -1.3125.
    self_ = torch.full((2, 3), 11.9375, dtype=dtype)
    src = torch.tensor([[-1.09375], [-12.1875]], dtype=dtype).expand(2, 3).contiguous()
    zeros = torch.zeros(2, 3, dtype=torch.long)
    check_native(lambda a, i, s: (a.scatter_add(0, i, s), a.scatter_reduce(0, i, s, "sum"),
                                  a.index_add(0, i[:, 0], s)), self_, zeros, src, rtol=0, atol=0)
    # Long slices (the kernel's float rows), on dim 1 too; a 1-D index_add
    # rounds after every update on the CPU (-1.3125), 1-D scatter_add once.
    wide = torch.full((3, 300), 11.9375, dtype=dtype)
    wide_src = torch.tensor([[-1.09375], [-12.1875], [0.5]], dtype=dtype).expand(3, 300).contiguous()
    check_native(lambda a, s: (a.index_add(0, torch.tensor([0, 0, 2], device=a.device), s),
                               a.t().contiguous().index_add(1, torch.tensor([1, 1, 1], device=a.device), s.t())),
                 wide, wide_src, rtol=0, atol=0)
    flat = torch.full((4,), 11.9375, dtype=dtype)
    pair = torch.tensor([-1.09375, -12.1875], dtype=dtype)
    check_native(lambda a, s: (a.index_add(0, torch.zeros(2, dtype=torch.long, device=a.device), s),
                               a.scatter_add(0, torch.zeros(2, dtype=torch.long, device=a.device), s)),
                 flat, pair, rtol=0, atol=0)


@pytest.mark.parametrize("base", [2.0, 1, -0.5, True])
def test_pow_of_a_number_to_a_tensor(base, check_native):
    for exponent in (torch.randn(5, 6), torch.randint(0, 4, (5, 6)), torch.randn(6, 5).t()):
        def both(e):
            out = torch.empty(0, dtype=torch.result_type(base, e), device=e.device)
            return torch.pow(base, e), torch.pow(base, e, out=out)
        check_native(both, exponent)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.uint8, torch.bool])
def test_unique_variants(dtype, check_native):
    x = torch.randint(0, 3, (7, 5)).to(dtype)
    y = torch.randint(0, 2, (4, 3, 5)).to(dtype)
    for flags in ({}, {"return_inverse": True}, {"return_counts": True},
                  {"return_inverse": True, "return_counts": True}):
        check_native(lambda a: torch.unique(a, **flags), x)
        check_native(lambda a: torch.unique_consecutive(a, **flags), x)
        for dim in (0, 1, -1):
            check_native(lambda a: torch.unique(a, dim=dim, **flags), x)
            check_native(lambda a: torch.unique_consecutive(a, dim=dim, **flags), x)
        check_native(lambda a: torch.unique(a, dim=1, **flags), y)


def test_unique_dim_of_empty_tensors_and_its_errors(check_native):
    for t, dim in ((torch.empty(0, 3), 0), (torch.empty(3, 0), 1), (torch.empty(0, 3, 2), 0)):
        check_native(lambda a: torch.unique(a, dim=dim, return_inverse=True, return_counts=True), t)
        check_native(lambda a: torch.unique_consecutive(a, dim=dim, return_inverse=True, return_counts=True), t)
    with pytest.raises(RuntimeError, match="aren't selected"):
        torch.unique(torch.empty(2, 0, device="mlu"), dim=0)


def test_index_put_and_embedding_backward(check_native, native_oracle):
    w = torch.randn(10, 4)

    def put(a):
        a = a.clone()
        a[a > 0] = 0
        a[torch.tensor([1, 3], device=a.device)] = 5.0
        a.index_put_((torch.tensor([0, 0, 2], device=a.device),), torch.ones(3, 4, device=a.device),
                     accumulate=True)
        return a

    check_native(put, w)

    def grad(w, idx):
        w = w.clone().requires_grad_()
        F.embedding(idx, w, padding_idx=2).pow(2).sum().backward()
        return w.grad

    native_oracle(grad, w, torch.randint(0, 10, (6, 5)))


ADVANCED_INDICES = {
    "two tensors": lambda d: (torch.tensor([0, -1, 2], device=d), torch.tensor([[1], [-4]], device=d)),
    "non-adjacent": lambda d: (torch.tensor([0, -1, 2], device=d), slice(None), torch.tensor([[1], [5]], device=d)),
    "after a slice": lambda d: (slice(None), torch.tensor([4, 0, 4], device=d)),
    "int32 after ellipsis": lambda d: (Ellipsis, torch.tensor([1, -6, 0], dtype=torch.int32, device=d)),
    "mask and tensor": lambda d: (torch.tensor([0, 3, 1], device=d), torch.tensor([True, False, True, True, False],
                                                                              device=d)),
    "0-dim and tensor": lambda d: (torch.tensor(1, device=d), torch.tensor([0, 2, 2], device=d)),
    "cpu index tensors": lambda d: (torch.tensor([2, 0]), torch.tensor([1, 1])),
}


@pytest.mark.parametrize("name", ADVANCED_INDICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int16, torch.bool])
def test_advanced_indexing_get_set_and_accumulate(name, dtype, check_native):
    base = torch.randn(4, 5, 6).mul(10).to(dtype)
    make = ADVANCED_INDICES[name]
    values = torch.randn(base[make("cpu")].shape).mul(10).to(dtype)

    def get_set_accumulate(x, v):
        idx = make(x.device)
        got = x[idx]
        y = x.transpose(0, 2).contiguous().transpose(0, 2)  # non-contiguous self
        y[idx] = v
        z = x.clone()
        if all(isinstance(i, torch.Tensor) for i in idx):
            z.index_put_(idx, v, accumulate=True)
        return got, y, z

    check_native(get_set_accumulate, base, values)


def test_index_put_accumulates_repeated_positions_like_cpu(check_native):
    ix = torch.randint(-30, 30, (5000,))
    v = torch.randn(5000)
    check_native(lambda i, v: torch.zeros(30, device=i.device).index_put_((i,), v, accumulate=True), ix, v)
    check_native(lambda i, v: torch.zeros(60, 3, device=i.device).index_put_((i, i.abs() % 3), v, accumulate=True), ix, v)


@pytest.mark.parametrize("op", [
    lambda w, i: w[i, i.clamp(max=3)],
    lambda w, i: w[:, torch.tensor([0, 3], device=w.device)][i],
    lambda w, i: w.index_put_((i, torch.zeros_like(i)), torch.ones(2, device=w.device), accumulate=True),
], ids=["index", "index after slice", "index_put_"])
def test_advanced_index_out_of_range_is_a_device_error(op):
    w = torch.randn(10, 4, device="mlu")
    with pytest.raises(torch.AcceleratorError, match=r"index 12 is out of bounds for dimension 0 with size 10"):
        op(w, torch.tensor([1, 12], device="mlu"))
        torch.mlu.synchronize()
    assert (w + 1).sum().item() == pytest.approx((w.cpu() + 1).sum().item(), rel=1e-5)


def test_advanced_indexing_errors_match_cpu():
    for make in [lambda d: (torch.tensor([[0, 1]], device=d), torch.tensor([0, 1, 2], device=d)),
                 lambda d: (torch.tensor([0.5], device=d),)]:
        with pytest.raises(IndexError) as cpu_error:
            torch.zeros(4, 5)[make("cpu")]
        with pytest.raises(IndexError) as mlu_error:
            torch.zeros(4, 5, device="mlu")[make("mlu")]
        assert str(mlu_error.value) == str(cpu_error.value)
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        torch.zeros(4, 5, device="mlu").index_put_((torch.tensor([1], device="mlu"),), torch.ones(2, device="mlu"))


@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="trunc"),
                                lambda a, b: a % b, torch.fmod], ids=["floor_divide", "div_trunc", "remainder", "fmod"])
def test_integer_division_by_zero_raises(fn):
    a = torch.tensor([4, 5, 6], device="mlu")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, 0)  # a CPU scalar divisor raises at the call, as on CPU
    with pytest.raises(torch.AcceleratorError, match="ZeroDivisionError"):
        fn(a, torch.tensor([1, 0, 2], device="mlu"))
        torch.mlu.synchronize()
    torch.testing.assert_close(fn(a, torch.tensor([3, 2, -4], device="mlu")).cpu(),
                               fn(a.cpu(), torch.tensor([3, 2, -4])))
    assert torch.isinf(a.float() // 0).all().item()


@pytest.mark.parametrize("x", [torch.randn(5, 7), torch.randn(3, 6, 4).transpose(1, 2), torch.randn(40, 30).t(),
                               torch.randint(0, 5, (3, 3, 5)).bool()], ids=["2d", "batched-transposed", "t", "bool"])
def test_tril_triu_layouts_in_place_and_out(x, check_native):
    for k in (-2, 0, 1, 9):
        check_native(lambda a: (a.tril(k), a.triu(k), a.clone().tril_(k), a.clone().triu_(k),
                                torch.tril(a, k, out=torch.empty(0, dtype=a.dtype, device=a.device))), x)


def test_factories(native_oracle):
    for fn in [lambda d: torch.arange(0, 10, 0.7, device=d), lambda d: torch.arange(-5, 17, 3, device=d),
               lambda d: torch.linspace(-3, 7, 101, device=d), lambda d: torch.eye(3, 5, device=d),
               lambda d: torch.full((4, 3), 2.5, device=d), lambda d: torch.zeros(5, dtype=torch.int8, device=d),
               lambda d: torch.ones_like(torch.empty(3, device=d))]:
        native_oracle(fn)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64], ids=str)
def test_linspace_bit_for_bit(dtype):
    """Note [linspace as the CPU rounds]: the CPU's arithmetic in the dtype (16-bit: every op rounded; float32 /
    float64: start + step * i fused on the AVX2 / AVX512 builds), so values are bit-equal, signed zeros too."""
    for start, end, steps in [(-2.0, 1, 50), (0, 10, 7), (-3, 3, 15), (1, -1, 100), (-0.0, 5, 3), (3.3, -7.1, 1000),
                              (0, 1, 1), (-5, 5, 70000), (1e-3, 1e4, 33), (2, 2, 9)]:
        want = torch.linspace(start, end, steps, dtype=dtype)
        got = torch.linspace(start, end, steps, dtype=dtype, device="mlu").cpu()
        assert torch.equal(got, want) and torch.equal(got.signbit(), want.signbit()), (start, end, steps)
    out = torch.empty(30, dtype=dtype, device="mlu")[::3]  # a strided out= goes through a contiguous temporary
    torch.linspace(-1, 2, 10, out=out)
    assert torch.equal(out.cpu(), torch.linspace(-1, 2, 10, dtype=dtype))
    if dtype == torch.float16:
        with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half without overflow"):
            torch.linspace(0, 1e6, 5, dtype=dtype, device="mlu")


def test_index_select_of_a_transposed_input(check_native):
    # Note [Transposed index_select]: an index of at least a quarter of the dim takes a transposing copy
    # first, a shorter one the strided gather; both agree with the CPU, out= too, and a bad index stays a
    # device error.
    w = torch.randn(48, 64)
    for n in (40, 5):
        idx = torch.randint(0, 64, (n,))
        check_native(lambda a, i: a.t().index_select(0, i), w, idx)
        check_native(lambda a, i: torch.index_select(a.t(), 0, i, out=torch.empty(0, device=a.device)), w, idx)
    bad = torch.tensor([1, 70] * 10, device="mlu")
    with pytest.raises(torch.AcceleratorError, match=r"index 70 is out of bounds for dimension 0 with size 64"):
        w.to("mlu").t().index_select(0, bad)
        torch.mlu.synchronize()
    assert (w.to("mlu") + 1).sum().item() == pytest.approx((w + 1).sum().item(), rel=1e-5)


@pytest.mark.parametrize("op", [
    lambda w, i: w.index_select(0, i),
    lambda w, i: w.gather(0, i.view(-1, 1).expand(-1, 4)),
    lambda w, i: F.embedding(i, w),
    lambda w, i: w.scatter_add(0, i.view(-1, 1).expand(-1, 4), torch.ones(2, 4, device=w.device)),
    lambda w, i: w.index_add(0, i, torch.ones(2, 4, device=w.device)),
], ids=["index_select", "gather", "embedding", "scatter_add", "index_add"])
def test_out_of_range_index_is_a_device_error_and_the_device_keeps_working(op):
    w = torch.randn(10, 4, device="mlu")
    bad = torch.tensor([1, 12], device="mlu")
    with pytest.raises(torch.AcceleratorError, match=r"index 12 is out of bounds for dimension 0 with size 10"):
        op(w, bad)
        torch.mlu.synchronize()
    assert (w + 1).sum().item() == pytest.approx((w.cpu() + 1).sum().item(), rel=1e-5)


def test_fallback_reads_inputs_in_place_and_keeps_in_place_semantics():
    a = torch.randn(64, 64)
    d = a.to("mlu")
    x = d.clone()
    x.addmm_(x, x)  # addmm_ -> addmm.out(self, self, self, out=self): self is read and written
    torch.testing.assert_close(x.cpu(), a + a @ a, rtol=1e-4, atol=1e-4)
    y = d * 2  # queued before the fallback op reads it in place
    torch.testing.assert_close((y @ d).cpu(), (a * 2) @ a, rtol=1e-4, atol=1e-4)


def test_complex_ops_without_a_kernel_fall_back_visibly():
    c = torch.randn(5, dtype=torch.complex64)
    torch_mlu.reset_fallback_report()
    torch.testing.assert_close(torch.exp(c.to("mlu")).cpu(), torch.exp(c))
    assert torch_mlu.fallback_report() == {}  # complex exp is native (tests/test_complex.py)
    torch.testing.assert_close(torch.expm1(c.to("mlu")).cpu(), torch.expm1(c))  # complex expm1 is not
    assert "aten::expm1" in torch_mlu.fallback_report()


SOFTMAX_INPUTS = {
    "rows": lambda: torch.randn(33, 65) * 4,
    "transposed": lambda: (torch.randn(65, 33) * 4).t(),
    "3-d": lambda: torch.randn(4, 5, 6) * 4,
    "0-dim": lambda: torch.tensor(1.5),
    "empty": lambda: torch.empty(0, 7),
    "specials": lambda: torch.tensor([[1.0, float("nan"), 2.0], [-float("inf")] * 3, [float("inf"), 1.0, 2.0],
                                      [1e30, -1e30, 0.0]]),
}


@pytest.mark.parametrize("name", SOFTMAX_INPUTS)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_forward_backward_and_out(name, fn, dtype, check_native):
    x = SOFTMAX_INPUTS[name]().to(dtype)
    for dim in range(-max(x.dim(), 1), max(x.dim(), 1)):
        def both(a):
            a = a.clone().requires_grad_()
            y = fn(a, dim)
            y.backward(torch.linspace(-1, 1, y.numel(), dtype=dtype, device=a.device).reshape(y.shape))
            prim = torch._log_softmax if fn is F.log_softmax else torch._softmax
            out = torch.empty(0, dtype=dtype, device=a.device)
            prim(a.detach(), dim, False, out=out)
            return y, a.grad, out
        check_native(both, x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_softmax_reduced_precision_rounds_once(fn, dtype):
    # mlu computes in float and rounds once, against a float64 oracle; except
    # log_softmax over the last dim, whose log-sum the CPU rounds to the
    # 16-bit type (Note [16-bit log_softmax over the last dim]): there the
    # oracle is the CPU.
    x = (torch.randn(40, 300) * 3).to(dtype)
    torch_mlu.reset_fallback_report()
    for dim in (0, 1):  # dim 0 takes the column blocks, dim 1 the rows
        got = fn(x.to("mlu"), dim).cpu()
        if fn is F.log_softmax and dim == x.dim() - 1:
            assert got.equal(fn(x, dim))
        else:
            want = fn(x.double(), dim)
            ulp = want.abs().clamp(min=torch.finfo(dtype).tiny) * torch.finfo(dtype).eps
            assert ((got.double() - want).abs() <= ulp).all(), (got.double() - want).abs().max()
            # Rounded to nearest once: all but a few elements (float results
            # within float error of a rounding boundary) equal the float32
            # result rounded (truncating instead leaves about half off).
            rounded = fn(x.float(), dim).to(dtype)
            assert (got != rounded).float().mean() < 0.01, (got != rounded).float().mean()
        # The backward op computes in float from the 16-bit operands and rounds once.
        grad = torch.randn(x.shape).to(dtype)
        backward = torch._log_softmax_backward_data if fn is F.log_softmax else torch._softmax_backward_data
        got_grad = backward(grad.to("mlu"), got.to("mlu"), dim, dtype).cpu()
        rounded = backward(grad.float(), got.float(), dim, torch.float32).to(dtype)
        assert (got_grad != rounded).float().mean() < 0.01, (got_grad != rounded).float().mean()
    assert torch_mlu.fallback_report() == {}


def test_softmax_half_to_float_as_on_cuda():
    x = torch.randn(6, 9).half()
    got = torch._softmax(x.to("mlu"), 1, True)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), torch._softmax(x.float(), 1, False), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_linspace_bit_for_bit(dtype):
    """c10::complex scales the step component by component: each plane is the real linspace of its parts."""
    torch_mlu.reset_fallback_report()
    for start, end, steps in [(-2 + 1j, 1 - 3j, 50), (0, 10j, 7), (1j, -1, 100), (3.3 - 1j, -7.1 + 2.5j, 1000),
                              (0, 1, 1), (-5j, 5, 70000)]:
        want = torch.linspace(start, end, steps, dtype=dtype)
        got = torch.linspace(start, end, steps, dtype=dtype, device="mlu").cpu()
        assert torch.equal(torch.view_as_real(got), torch.view_as_real(want)), (start, end, steps)
    assert torch_mlu.fallback_report() == {}


def test_masked_select_out_native_and_checked():
    x = torch.randn(3, 4, device="mlu")
    m = x > 0
    torch_mlu.reset_fallback_report()
    out = torch.empty(0, device="mlu")
    torch.masked_select(x, m, out=out)
    assert torch.equal(out.cpu(), torch.masked_select(x.cpu(), m.cpu()))
    assert "aten::masked_select.out" not in torch_mlu.fallback_report()
    # An out= overlapping an input is refused, with the CPU's message.
    with pytest.raises(RuntimeError, match="unsupported operation: some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory location"):
        torch.masked_select(x, m, out=x)
    with pytest.raises(RuntimeError, match="self and result must have the same scalar type"):
        torch.masked_select(x, m, out=torch.empty(0, dtype=torch.float64, device="mlu"))
