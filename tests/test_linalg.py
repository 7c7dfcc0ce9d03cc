"""torch.linalg on mlu: native LAPACK kernels (csrc/aten/ops/LinalgOps.cpp) against the CPU.

The ops run PyTorch's own generic impls with the LAPACK stubs registered for PrivateUse1 (Note [Linalg through
PyTorch's impls]); the stubs call the oneMKL libtorch_cpu carries (Note [Which MKL] in kernels/src/common/vendor/mkl.h).
Checked here: values and strides equal to the CPU's for every factorization and solver, real and complex, batched
and broadcast; no op through the CPU fallback; info-style errors as the CPU raises them, and `_ex` forms that do
not sync; gradients; wrong out= dtypes refused; only one oneMKL in the process. op_db's linalg entries run through
tests/test_opinfo.py (MLU_OPINFO=full).
"""
import pytest
import torch

import torch_mlu  # noqa: F401  (registers mlu)

from conftest import run_python

FLOATING_AND_COMPLEX = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def spd(batch, n, dtype, seed=0):
    """A batch of well-conditioned Hermitian positive-definite matrices on the CPU."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch, n, n, dtype=dtype, generator=g)
    return a @ a.mH + n * torch.eye(n, dtype=dtype)


def general(shape, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=g)


# A few complex ops the linalg impls use (prod for det, scatter_ for lu_unpack) still run on the CPU fallback;
# for complex dtypes the tests below only require the LAPACK ops themselves to be native.
LAPACK_OPS = ("linalg", "cholesky", "svd", "qr", "lu_", "eigh", "triangular", "geqrf", "ormqr", "householder")


def run_natively(oracle, fn, *args, dtype, **kwargs):
    if not dtype.is_complex:
        return oracle(fn, *args, **kwargs)
    fell_back = set()
    result = oracle(fn, *args, fell_back=fell_back, **kwargs)
    lapack = sorted(op for op in fell_back if any(name in op for name in LAPACK_OPS))
    assert not lapack, f"LAPACK ops on the CPU fallback: {lapack}"
    return result


def tol(dtype):
    single = dtype in (torch.float32, torch.complex64)
    return dict(rtol=1e-4, atol=1e-4) if single else dict(rtol=1e-10, atol=1e-10)


FACTORIZATIONS = {
    "cholesky": lambda a, m, b: torch.linalg.cholesky(a),
    "cholesky_upper": lambda a, m, b: torch.linalg.cholesky(a, upper=True),
    "cholesky_ex": lambda a, m, b: torch.linalg.cholesky_ex(a),
    "inv": lambda a, m, b: torch.linalg.inv(a),
    "inv_ex": lambda a, m, b: torch.linalg.inv_ex(a),
    "det": lambda a, m, b: torch.linalg.det(a),
    "slogdet": lambda a, m, b: torch.linalg.slogdet(a),
    "logdet": lambda a, m, b: torch.logdet(a),
    "solve": lambda a, m, b: torch.linalg.solve(a, b),
    "solve_right": lambda a, m, b: torch.linalg.solve(a, b.mT, left=False),
    "solve_ex": lambda a, m, b: torch.linalg.solve_ex(a, b),
    "lu_factor": lambda a, m, b: torch.linalg.lu_factor(m),
    "lu_solve": lambda a, m, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b),
    "lu_solve_adjoint": lambda a, m, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True),
    "eigh": lambda a, m, b: torch.linalg.eigh(a),
    "eigh_upper": lambda a, m, b: torch.linalg.eigh(a, UPLO="U"),
    "eigvalsh": lambda a, m, b: torch.linalg.eigvalsh(a),
    "svd": lambda a, m, b: torch.linalg.svd(m, full_matrices=False),
    "svd_full": lambda a, m, b: torch.linalg.svd(m),
    "svdvals": lambda a, m, b: torch.linalg.svdvals(m),
    "qr": lambda a, m, b: torch.linalg.qr(m),
    "qr_complete": lambda a, m, b: torch.linalg.qr(m, mode="complete"),
    "qr_r": lambda a, m, b: torch.linalg.qr(m, mode="r"),
    "solve_triangular": lambda a, m, b: torch.linalg.solve_triangular(torch.linalg.cholesky(a), b, upper=False),
    "solve_triangular_right": lambda a, m, b: torch.linalg.solve_triangular(
        torch.linalg.cholesky(a).mT, b.mT, upper=True, left=False, unitriangular=True),
    "solve_triangular_row_major": lambda a, m, b: torch.linalg.solve_triangular(
        torch.linalg.cholesky(a).contiguous(), b, upper=False),
    "cholesky_inverse": lambda a, m, b: torch.cholesky_inverse(torch.linalg.cholesky(a)),
    "cholesky_inverse_upper": lambda a, m, b: torch.cholesky_inverse(torch.linalg.cholesky(a, upper=True),
                                                                      upper=True),
    "geqrf": lambda a, m, b: torch.geqrf(m),
    "householder_product": lambda a, m, b: torch.linalg.householder_product(*torch.geqrf(m)),
    "ormqr": lambda a, m, b: torch.ormqr(*torch.geqrf(m), m[..., :2].contiguous(), transpose=True),
    "pinv": lambda a, m, b: torch.linalg.pinv(m),
    "matrix_rank": lambda a, m, b: torch.linalg.matrix_rank(m),
    "cond": lambda a, m, b: torch.linalg.cond(a),
    "nuclear_norm": lambda a, m, b: torch.linalg.matrix_norm(m, "nuc"),
}


@pytest.mark.parametrize("dtype", FLOATING_AND_COMPLEX, ids=str)
@pytest.mark.parametrize("name", sorted(FACTORIZATIONS))
def test_matches_the_cpu_natively(native_oracle, name, dtype):
    fn = FACTORIZATIONS[name]
    a, m, b = spd((3,), 5, dtype), general((3, 6, 4), dtype), general((3, 5, 2), dtype)
    if name == "lu_factor":
        m = general((3, 5, 5), dtype)  # square: its pivots are well defined
    run_natively(native_oracle, fn, a, m, b, dtype=dtype, check_stride=True, tolerances=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64], ids=str)
def test_broadcast_batches_and_unbatched_inputs(native_oracle, dtype):
    a = spd((2, 1), 4, dtype)
    b = general((2, 3, 4, 2), dtype)
    lu, piv = torch.linalg.lu_factor(a)
    run_natively(native_oracle, lambda lu, piv, b: torch.linalg.lu_solve(lu, piv, b), lu, piv, b, dtype=dtype,
                 check_stride=True, tolerances=tol)
    run_natively(native_oracle, lambda a, b: torch.linalg.solve(a, b), a, b, dtype=dtype, check_stride=True,
                 tolerances=tol)
    run_natively(native_oracle, lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), a, b, dtype=dtype,
                 check_stride=True, tolerances=tol)
    single = spd((), 4, dtype)
    run_natively(native_oracle, lambda x: (torch.linalg.cholesky(x), torch.linalg.inv(x), torch.linalg.eigh(x)),
                 single, dtype=dtype, check_stride=True, tolerances=tol)


def test_empty_and_one_by_one_inputs(native_oracle):
    for shape in [(0, 3, 3), (2, 0, 0), (1, 1), (4, 1, 1)]:
        x = spd(shape[:-2], shape[-1], torch.float64) if shape[-1] else torch.zeros(shape, dtype=torch.float64)
        native_oracle(lambda x: (torch.linalg.cholesky(x), torch.linalg.inv(x), torch.linalg.det(x),
                                 torch.linalg.svd(x), torch.linalg.qr(x), torch.linalg.eigh(x)), x,
                      check_stride=True)


def test_errors_are_the_cpus_and_the_process_keeps_working():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    not_pd = [[1.0, 0.0], [0.0, -1.0]]
    cases = [
        lambda d: torch.linalg.inv(torch.tensor(singular, device=d)),
        lambda d: torch.linalg.cholesky(torch.tensor(not_pd, device=d)),
        lambda d: torch.linalg.cholesky(torch.stack([torch.eye(2), torch.tensor(not_pd)]).to(d)),
        lambda d: torch.linalg.solve(torch.tensor(singular, device=d), torch.ones(2, 1, device=d)),
        lambda d: torch.cholesky_inverse(torch.zeros(2, 2, device=d)),
        lambda d: torch.linalg.svd(torch.tensor(singular, device=d).half()),
        lambda d: torch.linalg.eigh(torch.ones(2, 3, device=d)),
        lambda d: torch.linalg.lu_factor(torch.eye(3, device=d), pivot=False),
    ]
    for fn in cases:
        with pytest.raises(Exception) as cpu:
            fn("cpu")
        with pytest.raises(type(cpu.value)) as mlu:
            fn("mlu")
        # AT_DISPATCH errors name the kernel: linalg_svd_cpu there, linalg_svd_mlu here.
        assert str(mlu.value) == str(cpu.value).replace('_cpu"', '_mlu"')
    # info-style failures leave the device usable
    assert torch.linalg.inv(torch.eye(3, device="mlu")).cpu().equal(torch.eye(3))


def test_ex_forms_return_info_without_syncing():
    x = torch.tensor([[[4.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]], device="mlu")
    big = torch.randn(1500, 1500, device="mlu")
    torch.mlu.synchronize()
    busy = big @ big @ big  # keeps the stream busy for a while
    L, info = torch.linalg.cholesky_ex(x)
    inverse, inv_info = torch.linalg.inv_ex(torch.zeros(2, 2, device="mlu"))
    # Had either op synced, the product queued before it would be done.
    assert not torch.mlu.current_stream().query()
    assert info.device.type == "mlu" and info.dtype == torch.int32
    assert info.tolist() == [0, 2]
    assert inv_info.item() == 1
    torch.testing.assert_close(L[0].cpu(), torch.tensor([[2.0, 0.0], [0.0, 1.0]]))
    del busy


def test_out_of_range_pivots_fail_on_the_device():
    lu, piv = torch.linalg.lu_factor(torch.eye(3, device="mlu"))
    bad = piv.clone()
    bad[0] = 7
    with pytest.raises(RuntimeError, match="Pivots given to lu_solve must all be smaller or equal to LU.size"):
        torch.linalg.lu_solve(lu, bad, torch.ones(3, 1, device="mlu"))
        torch.mlu.synchronize()
    assert torch.linalg.lu_solve(lu, piv, torch.ones(3, 1, device="mlu")).cpu().equal(torch.ones(3, 1))


def test_out_dtype_mismatch_is_refused_as_on_the_cpu():
    for dev in ("cpu", "mlu"):
        a, b = torch.eye(3, device=dev), torch.ones(3, 2, device=dev)
        out = torch.empty(3, 2, dtype=torch.int64, device=dev)
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
            torch.linalg.solve_triangular(a, b, upper=True, out=out)


@pytest.mark.parametrize("name", ["cholesky", "inv", "det", "slogdet", "solve", "eigh", "svd", "qr", "pinv",
                                  "solve_triangular", "cholesky_inverse", "lu_solve"])
def test_gradients_match_the_cpu(native_oracle, name):
    fn = FACTORIZATIONS[name]
    a, m, b = spd((2,), 4, torch.float64), general((2, 5, 3), torch.float64), general((2, 4, 2), torch.float64)

    def grads(a, m, b):
        leaves = [t.detach().requires_grad_() for t in (a, m, b)]
        out = fn(*leaves)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        # Gauge-invariant loss for decompositions: the singular values / eigenvalues and |U|, |V|.
        loss = sum(o.abs().sum() for o in outs)
        return torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)

    native_oracle(grads, a, m, b, tolerances=tol)


def test_the_process_has_one_mkl_and_calls_torchs():
    """No second oneMKL beside libtorch_cpu's (Note [Which MKL]): pip's would be partly interposed by it."""
    result = run_python("""
        import torch, torch_mlu
        a = torch.randn(4, 4, device="mlu")
        torch.linalg.svd(a @ a.mT); torch.mlu.synchronize()
        maps = open("/proc/self/maps").read()
        print("pip-mkl" if "libmkl_" in maps else "torch-mkl-only")
        print(torch_mlu._C._kernel_config()["mkl_linked"])
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["torch-mkl-only", "True"]


@pytest.mark.parametrize("dtype", FLOATING_AND_COMPLEX, ids=str)
def test_cholesky_solve_lu_unpack_and_linalg_lu(native_oracle, dtype):
    a, m, b = spd((3,), 5, dtype), general((2, 6, 4), dtype), general((3, 5, 2), dtype)
    run_natively(native_oracle, lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a)), a, b, dtype=dtype,
                 check_stride=True, tolerances=tol)
    run_natively(native_oracle, lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a, upper=True),
                                                                  upper=True), a, b, dtype=dtype, tolerances=tol)
    run_natively(native_oracle, lambda m: torch.linalg.lu(m), m, dtype=dtype, check_stride=True, tolerances=tol)
    run_natively(native_oracle, lambda m: torch.linalg.lu(m.mT), m, dtype=dtype, check_stride=True, tolerances=tol)
    run_natively(native_oracle, lambda m: torch.lu_unpack(*torch.linalg.lu_factor(m)), m, dtype=dtype,
                 check_stride=True, tolerances=tol)


def test_lu_unpack_refuses_bad_pivots_on_the_device():
    lu, piv = torch.linalg.lu_factor(torch.eye(3, device="mlu"))
    with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and LU.size"):
        torch.lu_unpack(lu, piv * 0)
        torch.mlu.synchronize()
    assert torch.lu_unpack(lu, piv)[0].cpu().equal(torch.eye(3))


@pytest.mark.parametrize("dtype", FLOATING_AND_COMPLEX, ids=str)
def test_eig_and_eigvals(native_oracle, dtype):
    # A rotation block gives a conjugate pair for real dtypes (LAPACK's packed real eigenvectors).
    rotation = torch.tensor([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]]).to(dtype)
    m = torch.stack([general((3, 3), dtype), rotation])
    run_natively(native_oracle, lambda m: torch.linalg.eig(m), m, dtype=torch.complex64, tolerances=tol)
    run_natively(native_oracle, lambda m: torch.linalg.eigvals(m), m, dtype=torch.complex64, tolerances=tol)


@pytest.mark.parametrize("dtype", FLOATING_AND_COMPLEX, ids=str)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_and_solve(native_oracle, dtype, hermitian):
    # Symmetric indefinite: Bunch-Kaufman picks 2x2 pivots (negative entries in pivots).
    g = general((3, 6, 6), dtype)
    a = g + (g.mH if hermitian else g.mT)
    b = general((3, 6, 2), dtype)
    run_natively(native_oracle, lambda a: torch.linalg.ldl_factor_ex(a, hermitian=hermitian), a, dtype=dtype,
                 check_stride=True, tolerances=tol)
    run_natively(native_oracle,
                 lambda a, b: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a, hermitian=hermitian), b,
                                                     hermitian=hermitian),
                 a, b, dtype=dtype, check_stride=True, tolerances=tol)
    # One factorization for a batch of right-hand sides (LD's batch broadcasts).
    run_natively(native_oracle,
                 lambda a, b: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a[0], hermitian=hermitian), b,
                                                     hermitian=hermitian),
                 a, b, dtype=dtype, check_stride=True, tolerances=tol)


def test_ldl_solve_refuses_bad_pivots_on_the_device():
    LD, piv = torch.linalg.ldl_factor(torch.eye(3, device="mlu"))
    with pytest.raises(RuntimeError, match=r"Pivots given to ldl_solve must all satisfy \|pivot\| <= LD.size"):
        torch.linalg.ldl_solve(LD, piv * 9, torch.ones(3, 1, device="mlu"))
        torch.mlu.synchronize()
    torch.testing.assert_close(torch.linalg.ldl_solve(LD, piv, torch.ones(3, 1, device="mlu")).cpu(),
                               torch.ones(3, 1))


def test_lapack_calls_start_no_threads_of_their_own():
    """The device's compute cores are the only threads computing: MKL runs each call on the calling pool thread."""
    result = run_python("""
        import os, torch, torch_mlu
        x = torch.randn(64, 32, 32, device="mlu")
        x = x @ x.mT + 32 * torch.eye(32, device="mlu")
        torch.mlu.synchronize()
        before = len(os.listdir("/proc/self/task"))
        for _ in range(2):
            torch.linalg.svd(x); torch.linalg.eigh(x); torch.linalg.inv(x); torch.linalg.qr(x)
            torch.linalg.ldl_factor(x); torch.linalg.eig(x[:4])
        torch.mlu.synchronize()
        print(before, len(os.listdir("/proc/self/task")))
    """)
    assert result.returncode == 0, result.stderr
    before, after = map(int, result.stdout.split())
    assert after == before, f"{after - before} threads started by the LAPACK calls"


@pytest.mark.parametrize("dtype", FLOATING_AND_COMPLEX, ids=str)
def test_cholesky_reads_any_layout_and_writes_the_cpus_bits(dtype):
    """linalg.cholesky_ex copies the triangle and factors in one task (cholesky_ex_fused): the same bits as the
    CPU's tril_out + potrf for inputs at any strides, out= tensors of any layout, and out= aliasing the input."""
    base = spd((3,), 5, dtype)
    inputs = {
        "contiguous": base,
        "transposed": base.mT.contiguous().mT,
        "expanded batch": base[:1].expand(4, 5, 5),
        "sliced": spd((6,), 7, dtype)[::2, 1:6, 1:6],
        "unbatched": base[1],
        "deep batch": base.reshape(3, 1, 1, 5, 5).expand(3, 2, 1, 5, 5),
    }
    for name, a in inputs.items():
        for upper in (False, True):
            expected, expected_info = torch.linalg.cholesky_ex(a, upper=upper)
            got, info = torch.linalg.cholesky_ex(a.to("mlu"), upper=upper)
            assert got.cpu().equal(expected) and got.stride() == expected.stride(), (name, upper)
            assert info.cpu().equal(expected_info), (name, upper)
    for upper in (False, True):
        expected = torch.linalg.cholesky(base, upper=upper)
        row_major = torch.empty(3, 5, 5, dtype=dtype, device="mlu")  # not the column-major layout: a proxy
        torch.linalg.cholesky(base.to("mlu"), upper=upper, out=row_major)
        assert row_major.cpu().equal(expected)
        in_place = base.mT.contiguous().mT.to("mlu")  # column-major, as the op writes L
        torch.linalg.cholesky(in_place, upper=upper, out=in_place)
        assert in_place.cpu().equal(expected)
    # A matrix that is not positive-definite: the CPU's info and error.
    not_pd = base.clone()
    not_pd[1, 2, 2] = -100
    L, info = torch.linalg.cholesky_ex(not_pd.to("mlu"))
    assert info.cpu().equal(torch.linalg.cholesky_ex(not_pd)[1])
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\): The factorization could not be "):
        torch.linalg.cholesky(not_pd.to("mlu"))
