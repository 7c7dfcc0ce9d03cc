"""Complex numbers on mlu: element-wise ops, sums, products and autograd natively, against the CPU.

Element-wise ops compute in std::complex with c10::complex's formulas (Note [Complex pointwise] in
kernels/src/pointwise/complex.cpp); sums and means reduce the real views (Note [Complex sums] in ReduceOps.cpp);
products go through the vendor BLAS's cgemm/zgemm (kernels/src/gemm/gemm_vendor.cpp), with lazily conjugated
operands materialised first. Checked here: values, dtypes and strides against the CPU with no CPU fallback, mixed
real/complex operands, CPU scalars (complex ones too), conjugate views, unfold's gradient (istft's overlap-add),
gradients through a small complex computation, and the CPU's errors.
"""
import pytest
import torch

import torch_mlu

COMPLEX = [torch.complex64, torch.complex128]


def z(shape, dtype, seed=0):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def tol(dtype):
    single = dtype in (torch.complex64, torch.float32)
    return dict(rtol=1e-5, atol=1e-5) if single else dict(rtol=1e-12, atol=1e-12)


UNARY = {
    "neg": torch.neg, "conj_physical": torch.conj_physical, "abs": torch.abs, "angle": torch.angle,
    "sgn": torch.sgn, "reciprocal": torch.reciprocal, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "exp": torch.exp,
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "sin": torch.sin, "cos": torch.cos,
    "tan": torch.tan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asin": torch.asin,
    "acos": torch.acos, "atan": torch.atan, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "sigmoid": torch.sigmoid, "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite,
    "logical_not": torch.logical_not, "real_times_two": lambda x: x.real * 2, "imag_view": lambda x: x.imag + 1,
    "view_as_real": lambda x: torch.view_as_real(x) * 3, "square": torch.square,
}
BINARY = {
    "add": torch.add, "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "add_complex_alpha":
    lambda a, b: torch.add(a, b, alpha=0.5 - 1j), "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "pow": torch.pow, "eq": torch.eq, "ne": torch.ne, "logical_and": torch.logical_and,
    "mul_real": lambda a, b: a * b.real, "add_python_complex": lambda a, b: a + (2 - 3j),
    "mul_cpu_scalar": lambda a, b: a * torch.tensor(1 + 1j), "where": lambda a, b: torch.where(a.real > 0, a, b),
    "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5), "addcdiv": lambda a, b: torch.addcdiv(a, a, b),
    "complex": lambda a, b: torch.complex(a.real, b.imag), "polar": lambda a, b: torch.polar(a.abs(), b.real),
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_the_cpu(native_oracle, name, dtype):
    x = z((6, 7), dtype)
    x[0, 0] = 0  # sgn(0), angle(0), reciprocal(0)
    native_oracle(UNARY[name], x, check_stride=True, equal_nan=True, **tol(dtype))
    native_oracle(lambda t: UNARY[name](t.mT[::2]), x, check_stride=True, equal_nan=True, msg="strided",
                  **tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_the_cpu(native_oracle, name, dtype):
    native_oracle(BINARY[name], z((6, 7), dtype), z((7,), dtype, seed=1), check_stride=True, equal_nan=True,
                  **tol(dtype))


def test_division_by_zero_and_infinities_match_the_cpu(native_oracle):
    a = torch.tensor([1 + 2j, 0j, 1 + 0j, complex("inf"), 3 - 1j], dtype=torch.complex64)
    b = torch.tensor([0j, 0j, 0j, 1 + 1j, complex("nan")], dtype=torch.complex64)
    native_oracle(torch.div, a, b, equal_nan=True)
    native_oracle(torch.reciprocal, b, equal_nan=True)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sums_and_means_match_the_cpu(native_oracle, dtype):
    x = z((3, 4, 5), dtype)
    for name, fn in {"sum": torch.sum, "sum_dims": lambda t: t.sum((0, 2)), "sum_keepdim":
                     lambda t: t.sum(1, keepdim=True), "mean": torch.mean, "mean_dim": lambda t: t.mean(-1),
                     "sum_of_conj": lambda t: t.conj().sum(0), "sum_transposed": lambda t: t.mT.sum(-1),
                     "sum_to_complex128": lambda t: t.sum(0, dtype=torch.complex128)}.items():
        native_oracle(fn, x, check_stride=True, msg=name, **tol(dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_products_match_the_cpu(native_oracle, dtype):
    a, b = z((4, 5), dtype), z((5, 3), dtype, seed=1)
    cases = {
        "mm": lambda a, b: a @ b, "mm_conj": lambda a, b: a.conj() @ b, "mm_adjoint": lambda a, b: a.mH @ a,
        "mm_strided": lambda a, b: a[:, ::2] @ b[::2], "bmm": lambda a, b: torch.bmm(a.expand(2, 4, 5), b.expand(2, 5, 3)),
        "addmm": lambda a, b: torch.addmm(a @ b, a, b, beta=0.5, alpha=2), "addmm_bias_row":
        lambda a, b: torch.addmm(b[0], a, b), "mv": lambda a, b: torch.mv(a, b[:, 0]), "dot":
        lambda a, b: torch.dot(a[0], b[:, 0]), "vdot": lambda a, b: torch.vdot(a[0], b[:, 0]), "matmul_batched":
        lambda a, b: a.expand(3, 4, 5) @ b, "linear": lambda a, b: torch.nn.functional.linear(a, b.mT, b[0]),
        "einsum": lambda a, b: torch.einsum("ij,jk->ik", a, b),
    }
    for name, fn in cases.items():
        native_oracle(fn, a, b, check_stride=True, msg=name, rtol=1e-4 if dtype == torch.complex64 else 1e-10,
                      atol=1e-4 if dtype == torch.complex64 else 1e-10)


def test_complex_scalars_with_real_tensors_fall_back_for_the_cpus_error():
    a = torch.randn(3, 3)
    torch_mlu.reset_fallback_report()
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        torch.addmm(a.to("mlu"), a.to("mlu"), a.to("mlu"), alpha=1j)
    assert torch_mlu.fallback_report() == {"aten::addmm": 1}


def test_gradients_through_complex_arithmetic_match_the_cpu():
    x = z((4, 6), torch.complex128)
    w = z((6, 3), torch.complex128, seed=2)

    def grads(device):
        xx, ww = x.to(device).requires_grad_(), w.to(device).requires_grad_()
        y = torch.sigmoid(xx @ ww).exp() / (1 + xx.abs().sum())
        (y.abs() ** 2).sum().backward()
        return xx.grad, ww.grad

    torch_mlu.reset_fallback_report()
    got = grads("mlu")
    fell_back = torch_mlu.fallback_report()
    for g, e in zip(got, grads("cpu")):
        torch.testing.assert_close(g.cpu(), e)
    assert fell_back == {}, fell_back


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("shape,dim,size,step", [((10,), 0, 4, 1), ((3, 17, 2), 1, 5, 2), ((2, 9), -1, 3, 2)])
def test_unfold_gradient_with_overlapping_windows_matches_the_cpu(dtype, shape, dim, size, step):
    x = torch.randn(*shape, dtype=dtype)
    g = torch.randn(x.unfold(dim, size, step).shape, dtype=dtype)

    def grad(device):
        leaf = x.to(device).requires_grad_()
        leaf.unfold(dim, size, step).backward(g.to(device))
        return leaf.grad

    torch_mlu.reset_fallback_report()
    got = grad("mlu")
    assert torch_mlu.fallback_report() == {}
    torch.testing.assert_close(got.cpu(), grad("cpu"))


def test_errors_match_the_cpu():
    a = z((3,), torch.complex64)
    cases = [
        lambda d: torch.complex(torch.ones(2, device=d), torch.ones(2, device=d, dtype=torch.float64)),
        lambda d: torch.complex(torch.ones(2, device=d, dtype=torch.int64), torch.ones(2, device=d, dtype=torch.int64)),
        lambda d: torch.abs(a.to(d), out=torch.empty(3, dtype=torch.int32, device=d)),
        lambda d: torch.sign(a.to(d)),
        lambda d: torch.polar(torch.ones(2, device=d), torch.ones(2, device=d),
                              out=torch.empty(2, dtype=torch.complex128, device=d)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu:
            case("cpu")
        with pytest.raises(RuntimeError) as mlu:
            case("mlu")
        assert str(mlu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_complex32_tensors_store_copy_and_fill_natively(native_oracle):
    # ComplexHalf has no kernels: creation, copies between dtypes and fill_ move Float16 pairs natively;
    # arithmetic on it goes to the CPU fallback (visibly), as the CPU's few ComplexHalf kernels compute it.
    x, c = torch.randn(3, 4), z((3, 4), torch.complex64)
    native_oracle(lambda a: a.chalf(), x)
    native_oracle(lambda a: a.t().chalf(), c)
    native_oracle(lambda a: a.chalf().to(torch.complex64), c)
    native_oracle(lambda a: a.chalf().real.float(), c)
    native_oracle(lambda device: torch.full((2, 3), 1.5 - 2.25j, dtype=torch.complex32, device=device))
    native_oracle(lambda device: torch.zeros(5, dtype=torch.complex32, device=device))
    torch_mlu.reset_fallback_report()
    got = c.to("mlu").chalf().abs()
    assert torch_mlu.fallback_report()  # abs of ComplexHalf: the CPU's kernel, through the fallback
    torch.testing.assert_close(got.cpu(), c.chalf().abs())


# Note [Complex elements moved as bits] (csrc/aten/KernelArgs.h): indexing ops move complex elements as they are;
# those that add or fill work on the real and imaginary planes; cumsum and the vector norm too.
INDEXING = {
    "gather": lambda x, i, m: torch.gather(x, 0, i),
    "index_select": lambda x, i, m: x.index_select(1, i[0, :3] + 1),
    "index": lambda x, i, m: x[i[:, 0]],
    "index_mask": lambda x, i, m: x[m],
    "masked_select": lambda x, i, m: torch.masked_select(x, m),
    "nonzero": lambda x, i, m: torch.nonzero(x * m),
    "masked_fill": lambda x, i, m: x.clone().masked_fill_(m, 2 - 3j),
    "masked_fill_tensor": lambda x, i, m: x.clone().masked_fill_(m, torch.tensor(1 + 1j, dtype=x.dtype,
                                                                                    device=x.device)),
    "masked_scatter": lambda x, i, m: x.clone().masked_scatter_(m, x.flip(0)),
    "scatter_value": lambda x, i, m: x.clone().scatter_(0, i, 1.5j),
    "scatter_src": lambda x, i, m: torch.scatter(x, 0, i, x[1:] * 1j),
    "scatter_add": lambda x, i, m: torch.scatter_add(x, 0, i, x[:3]),
    "index_add_real_alpha": lambda x, i, m: x.clone().index_add_(0, i[:, 0], x[:3], alpha=2),
    "index_copy": lambda x, i, m: x.clone().index_copy_(1, i[0, :2].unique(), x[:, :i[0, :2].unique().numel()]),
    "index_put": lambda x, i, m: x.clone().index_put_((i[:2, 0],), x[1:3]),
    "index_put_accumulate": lambda x, i, m: x.clone().index_put_((i[:, 0],), x[1:4], accumulate=True),
    "cumsum": lambda x, i, m: torch.cumsum(x, 1),
    "cumsum_transposed": lambda x, i, m: torch.cumsum(x.t(), 0),
    "cumsum_dtype": lambda x, i, m: torch.cumsum(x, 0, dtype=torch.complex128),
    "vector_norm": lambda x, i, m: torch.linalg.vector_norm(x),
    "vector_norm_dim_3": lambda x, i, m: torch.linalg.vector_norm(x, 3, dim=1),
    "vector_norm_inf": lambda x, i, m: torch.linalg.vector_norm(x, float("inf"), dim=0, keepdim=True),
    "vector_norm_dtype": lambda x, i, m: torch.linalg.vector_norm(x, dtype=torch.complex128),
    # Note [Complex products by pairs]
    "prod": lambda x, i, m: torch.prod(x),
    "prod_dim": lambda x, i, m: torch.prod(x, 1),
    "prod_dim_keepdim_dtype": lambda x, i, m: torch.prod(x, 0, keepdim=True, dtype=torch.complex128),
    "prod_odd_length": lambda x, i, m: torch.prod(x[:, :3], 1),
    "prod_empty": lambda x, i, m: torch.prod(x[:, :0], 1),
    "cumprod": lambda x, i, m: torch.cumprod(x, 1),
    "cumprod_transposed": lambda x, i, m: torch.cumprod(x.t(), 0),
    "all_any": lambda x, i, m: (torch.all(x * m), torch.any(x * m, 1), torch.all(x, 0, keepdim=True)),
    "addmm_complex_scalars": lambda x, i, m: torch.addmm(x[:, :4], x, x.t().conj(), beta=0.5 + 1j, alpha=2 - 1j),
    "addmm_complex_alpha_no_beta": lambda x, i, m: torch.addmm(x[:, :4], x, x.t(), beta=0, alpha=1j),
    "fold": lambda x, i, m: torch.nn.functional.fold(x.reshape(1, 4, 5).repeat(1, 1, 2)[..., :9], (4, 4), 2),
    "baddbmm_complex_scalars": lambda x, i, m: torch.baddbmm(x[:1], x[None, :, :3], x[None, :3], alpha=-1j),
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_cumsum_and_norms_run_natively(native_oracle, name, dtype):
    x = z((4, 5), dtype)
    index = torch.tensor([[3, 0, 1, 1, 2], [0, 0, 2, 3, 1], [1, 3, 3, 0, 0]])
    mask = x.real > 0
    native_oracle(INDEXING[name], x, index, mask, msg=name)


def test_complex_index_add_with_a_complex_alpha_falls_back_visibly():
    x = z((4, 3), torch.complex64)
    index = torch.tensor([0, 2])
    torch_mlu.reset_fallback_report()
    got = x.to("mlu").index_add_(0, index.to("mlu"), x[:2].to("mlu"), alpha=1j)
    torch.testing.assert_close(got.cpu(), x.clone().index_add_(0, index, x[:2], alpha=1j))
    assert torch_mlu.fallback_report() == {"aten::index_add_": 1}


def test_complex_norm_dtype_error_matches_the_cpu():
    x = z((3,), torch.complex64)
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs, but got Float"):
        torch.linalg.vector_norm(x.to("mlu"), dtype=torch.float32)
