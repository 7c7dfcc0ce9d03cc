"""Matrix products run natively on mlu (mlu_kernels/gemm.h) and agree with the CPU.

mm, bmm, addmm, baddbmm, addbmm, addmv / mv, dot / vdot natively, and the composites that lower to
them (matmul of every rank combination, linear, einsum, outer, inner, tensordot); transposed and
strided operands, out= and in-place forms, beta == 0 not reading self, autograd, errors; integer
products bit-equal to the CPU's wrapping arithmetic.
"""
from functools import partial

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

torch.manual_seed(0)

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def tolerances(dtype, k):
    # A k-term dot product in float (or double): rounding grows like k * eps.
    if dtype == torch.float64:
        return dict(rtol=1e-12, atol=1e-12 * k)
    if dtype == torch.float32:
        return dict(rtol=1e-5, atol=2e-6 * k)
    return dict(rtol=1.6e-2, atol=2e-3 * k)  # results rounded to 8 or 11 bits


@pytest.fixture
def check(native_oracle):
    """The shared oracle with the tolerances of a k-term dot product in the result's dtype."""
    return lambda fn, *args, k=64: native_oracle(fn, *args, tolerances=partial(tolerances, k=k))


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ta", [False, True], ids=["A", "At"])
@pytest.mark.parametrize("tb", [False, True], ids=["B", "Bt"])
def test_mm_layouts(dtype, ta, tb, check):
    a = rand(70, 45, dtype=dtype) if not ta else rand(45, 70, dtype=dtype).t()
    b = rand(45, 83, dtype=dtype) if not tb else rand(83, 45, dtype=dtype).t()
    check(torch.mm, a, b, k=45)


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 300, 1), (300, 1, 5), (1, 7, 300), (5, 0, 3), (0, 4, 2),
                                   (4, 3, 0), (13, 33, 257), (130, 2, 129), (2, 130, 129)])
def test_mm_edge_shapes(shape, check):
    m, k, n = shape
    check(torch.mm, rand(m, k), rand(k, n), k=max(k, 1))


def test_mm_large_splits_over_blocks_and_threads(check):
    check(torch.mm, rand(300, 600), rand(600, 1100), k=600)
    check(torch.mm, rand(600, 300).t(), rand(1100, 600).t(), k=600)
    for dtype in (torch.bfloat16, torch.float16):  # bfloat16: AMX tiles where the CPU has them
        check(torch.mm, rand(128, 608, dtype=dtype), rand(608, 96, dtype=dtype), k=608)
        check(torch.mm, rand(130, 600, dtype=dtype), rand(600, 70, dtype=dtype).t().contiguous().t(), k=600)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_and_baddbmm(dtype, check):
    a, b = rand(6, 20, 33, dtype=dtype), rand(6, 33, 17, dtype=dtype)
    check(torch.bmm, a, b, k=33)
    check(torch.bmm, a.transpose(1, 2).contiguous().transpose(1, 2), b[:, :, :9], k=33)
    check(torch.bmm, rand(33, 20, dtype=dtype).expand(6, 33, 20).transpose(1, 2), b, k=33)  # batch stride 0
    c = rand(6, 20, 17, dtype=dtype)
    check(lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=-2), c, a, b, k=33)
    check(lambda c, a, b: torch.baddbmm(c, a, b), rand(17, dtype=dtype), a, b, k=33)  # broadcast self
    check(lambda c, a, b: c.clone().baddbmm_(a, b, alpha=3), c, a, b, k=33)


def test_many_small_batched_products(check):
    check(torch.bmm, rand(64, 64, 64), rand(64, 64, 64))
    check(torch.bmm, rand(500, 3, 5), rand(500, 5, 2), k=5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmm_forms(dtype, check):
    bias, a, b = rand(40, dtype=dtype), rand(30, 50, dtype=dtype), rand(50, 40, dtype=dtype)
    check(torch.addmm, bias, a, b, k=50)
    check(lambda s, a, b: torch.addmm(s, a, b, beta=0.25, alpha=1.5), rand(30, 40, dtype=dtype), a, b, k=50)
    check(lambda s, a, b: s.clone().addmm_(a, b, beta=-1), rand(30, 40, dtype=dtype), a, b, k=50)
    check(lambda s, a, b: s.clone().t().addmm_(b.t(), a.t()), rand(30, 40, dtype=dtype), a, b, k=50)

    def out_form(s, a, b):
        out = torch.empty(0, dtype=dtype, device=a.device)
        return torch.addmm(s, a, b, alpha=2, out=out), out
    check(out_form, bias, a, b, k=50)

    def strided_out(s, a, b):  # out= a transposed view: C written column by column
        out = torch.zeros(40, 30, dtype=dtype, device=a.device).t()
        torch.addmm(s, a, b, out=out)
        return out
    check(strided_out, bias, a, b, k=50)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_rows_go_to_the_product(dtype, check):
    # A self that is one row broadcast over the result (a linear layer's bias) is the product's bias row
    # (kernels' Note [GEMM bias row]): the result is not read first, strided and size-1 rows broadcast too.
    a, b = rand(33, 70, dtype=dtype), rand(70, 48, dtype=dtype)

    def into_nan_out(s, a, b):
        out = torch.full((33, 48), float("nan"), dtype=dtype, device=a.device)
        return torch.addmm(s, a, b, beta=0.5, alpha=-1.5, out=out)
    check(into_nan_out, rand(48, dtype=dtype), a, b, k=70)
    check(torch.addmm, rand(96, dtype=dtype)[::2], a, b, k=70)  # a strided bias
    check(torch.addmm, rand(1, 48, dtype=dtype), a, b, k=70)
    check(torch.addmm, rand(1, dtype=dtype), a, b, k=70)  # one value broadcast to every element
    check(lambda w, x, bias: F.linear(x, w, bias), rand(48, 70, dtype=dtype), a, rand(48, dtype=dtype), k=70)
    check(lambda s, a, b: torch.baddbmm(s, a, b, beta=2), rand(48, dtype=dtype), a.expand(3, 33, 70), b.expand(3, 70, 48),
          k=70)


@pytest.mark.parametrize("n", [64, 300])
def test_result_overlapping_an_operand(n):
    # The product's C must not overlap A or B (kernels' gemm.h): such calls go through a scratch result.
    a = torch.randn(n, n)
    x = a.to("mlu")
    x.addmm_(x, x)
    torch.testing.assert_close(x.cpu(), a + a @ a, rtol=1e-4, atol=1e-4 * n)
    y = a.to("mlu")
    torch.mm(y, y.t(), out=y)
    torch.testing.assert_close(y.cpu(), a @ a.t(), rtol=1e-4, atol=1e-4 * n)
    z = a.to("mlu")
    torch.baddbmm(z[None], z[None], z[None], beta=0.5, out=z[None])
    torch.testing.assert_close(z.cpu(), 0.5 * a + a @ a, rtol=1e-4, atol=1e-4 * n)


def test_beta_zero_does_not_read_self(check):
    nan = torch.full((8, 5), float("nan"))
    check(lambda s, a, b: torch.addmm(s, a, b, beta=0), nan, rand(8, 3), rand(3, 5), k=3)
    check(lambda s, a, b: torch.baddbmm(s, a, b, beta=0), nan.expand(2, 8, 5), rand(2, 8, 3), rand(2, 3, 5), k=3)
    check(lambda s, a, b: torch.addmv(s, a, b, beta=0), nan[:, 0], rand(8, 3), rand(3), k=3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addbmm_addmv_mv_dot(dtype, check):
    s, b1, b2 = rand(9, 11, dtype=dtype), rand(4, 9, 13, dtype=dtype), rand(4, 13, 11, dtype=dtype)
    check(lambda s, a, b: torch.addbmm(s, a, b, beta=0.5, alpha=2), s, b1, b2, k=52)
    check(lambda s, a, b: s.clone().addbmm_(a, b), s, b1, b2, k=52)
    m, v = rand(300, 70, dtype=dtype), rand(70, dtype=dtype)
    check(torch.mv, m, v, k=70)
    check(torch.mv, rand(70, 300, dtype=dtype).t(), v, k=70)
    check(torch.mv, m, rand(140, dtype=dtype)[::2], k=70)
    check(lambda s, m, v: torch.addmv(s, m, v, beta=2, alpha=0.5), rand(300, dtype=dtype), m, v, k=70)
    check(lambda s, m, v: s.clone().addmv_(m, v), rand(300, dtype=dtype), m, v, k=70)
    x, y = rand(1000, dtype=dtype), rand(1000, dtype=dtype)
    check(torch.dot, x, y, k=1000)
    check(torch.vdot, x[:999:3], y[1::3], k=333)
    check(torch.dot, x[:0], y[:0], k=1)


def test_large_dot_and_mv(check):
    check(torch.dot, rand(1 << 20), rand(1 << 20), k=1 << 20)
    check(torch.mv, rand(3000, 2000), rand(2000), k=2000)
    check(lambda a, b: a @ b, rand(2000), rand(2000, 3000), k=2000)  # one-row product


@pytest.mark.parametrize("shapes", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)),
                                    ((2, 3, 5), (5,)), ((5,), (2, 5, 4)), ((2, 3, 5), (5, 4)), ((3, 5), (2, 5, 4)),
                                    ((2, 1, 3, 5), (4, 5, 6)), ((7, 2, 3, 5), (7, 2, 5, 4))])
def test_matmul_rank_combinations(shapes, check):
    check(torch.matmul, rand(*shapes[0]), rand(*shapes[1]), k=5)


def test_composites_lower_to_native_products(check):
    x, w, b = rand(16, 10, 32), rand(24, 32), rand(24)
    check(F.linear, x, w, b, k=32)
    check(F.linear, x, w, k=32)
    check(lambda a, b: torch.einsum("bij,bjk->bik", a, b), rand(3, 4, 5), rand(3, 5, 6), k=5)
    check(lambda a, b: torch.einsum("ij,kj->ik", a, b), rand(4, 5), rand(6, 5), k=5)
    check(torch.outer, rand(7), rand(9), k=1)
    check(torch.inner, rand(3, 5), rand(4, 5), k=5)
    check(lambda a, b: torch.tensordot(a, b, dims=([1, 2], [0, 1])), rand(3, 4, 5), rand(4, 5, 6), k=20)


def test_autograd_through_linear_and_bmm(check):
    def loss(x, w, b, q):
        x, w, b, q = (t.clone().requires_grad_() for t in (x, w, b, q))
        y = torch.bmm(F.linear(x, w, b), q)
        y.square().sum().backward()
        return y, x.grad, w.grad, b.grad, q.grad
    check(loss, rand(3, 7, 12), rand(9, 12), rand(9), rand(3, 9, 5), k=40)


INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def rand_int(*shape, dtype):
    info = torch.iinfo(dtype)  # the whole range: sums and products overflow and wrap, as on the CPU
    return torch.randint(info.min, info.max, shape, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_products_are_native_and_wrap_like_the_cpu(dtype, native_oracle):
    """Note [Integer products]: every integer product form, bit-equal to the CPU's wrapping arithmetic."""
    a, b, c = rand_int(5, 37, dtype=dtype), rand_int(37, 9, dtype=dtype), rand_int(5, 9, dtype=dtype)
    batch1, batch2 = rand_int(3, 5, 37, dtype=dtype), rand_int(3, 37, 9, dtype=dtype)
    v = rand_int(37, dtype=dtype)
    cases = [
        lambda a, b, c, x, y, v: torch.mm(a, b),
        lambda a, b, c, x, y, v: torch.mm(b.t(), a.t()),  # transposed operands
        lambda a, b, c, x, y, v: torch.addmm(c, a, b, beta=3, alpha=-2),
        lambda a, b, c, x, y, v: torch.addmm(c, a, b, beta=0),
        lambda a, b, c, x, y, v: torch.bmm(x, y),
        lambda a, b, c, x, y, v: torch.baddbmm(c, x, y, alpha=5),
        lambda a, b, c, x, y, v: torch.addbmm(c, x, y),
        lambda a, b, c, x, y, v: torch.mv(a, v),
        lambda a, b, c, x, y, v: torch.matmul(x, b),
    ]
    if dtype in (torch.int32, torch.int64):  # the CPU's dot takes these integer types only
        cases.append(lambda a, b, c, x, y, v: torch.dot(v, v))
    for case in cases:
        native_oracle(case, a, b, c, batch1, batch2, v, rtol=0, atol=0)


def test_complex_products_are_native_and_bool_is_refused_as_on_the_cpu():
    a = torch.randn(4, 6, dtype=torch.complex64)
    torch_mlu.reset_fallback_report()
    torch.testing.assert_close(torch.mm(a.to("mlu"), a.t().to("mlu")).cpu(), a @ a.t())
    assert torch_mlu.fallback_report() == {}  # cgemm_ (tests/test_complex.py has the rest)
    b = torch.rand(3, 3) > 0.5
    with pytest.raises(RuntimeError) as cpu_error:
        torch.mm(b, b)
    with pytest.raises(RuntimeError) as mlu_error:  # the CPU refuses bool, and so does its fallback
        torch.mm(b.to("mlu"), b.to("mlu"))
    assert str(mlu_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


def test_errors_match_the_cpu():
    a = rand(3, 4).to("mlu")
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        torch.mm(a, rand(5, 2).to("mlu"))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        torch.mm(a, rand(4, 2).double().to("mlu"))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.bmm(a[None], rand(1, 4, 2).double().to("mlu"))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.baddbmm(rand(1, 3, 2).to("mlu"), a[None], rand(1, 4, 2).double().to("mlu"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        torch.mm(a, a.t(), out=torch.empty(0, dtype=torch.float64, device="mlu"))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
        torch.addmm(rand(3, 2).double().to("mlu"), a, rand(4, 2).to("mlu"))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype"):
        torch.addmv(rand(3).to("mlu"), a, rand(4).double().to("mlu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(a, rand(4, 2))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(a, a)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(rand(3).to("mlu"), rand(4).to("mlu"))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(a, a)
    assert torch.mm(a, a.t()).shape == (3, 3)  # still working


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_direct_path(p, native_oracle):
    torch.manual_seed(0)
    x1, x2 = torch.randn(2, 7, 5), torch.randn(2, 6, 5)
    x2[0, 0] = x1[0, 0]  # a zero distance: the gradient there is 0, as on the CPU

    def run(device):
        a, b = (t.detach().clone().to(device).requires_grad_() for t in (x1, x2))
        d = torch.cdist(a, b, p=p)
        d.backward(torch.ones_like(d))
        return d, a.grad, b.grad

    native_oracle(run, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, float("inf")])
def test_pdist(p, native_oracle):
    torch.manual_seed(1)
    x = torch.randn(6, 4)

    def run(device):
        leaf = x.detach().clone().to(device).requires_grad_()
        d = F.pdist(leaf, p=p)
        d.backward(torch.arange(d.numel(), dtype=d.dtype, device=device))
        return d, leaf.grad

    native_oracle(run, rtol=1e-5, atol=1e-5)
