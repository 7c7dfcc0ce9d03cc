"""Sparse COO and compressed (CSR/CSC/BSR/BSC) tensors on mlu agree with the CPU.

The oracle is stock PyTorch on the CPU: every result's layout, and for COO its raw indices, values and
coalesced flag (not merely the dense picture), so an mlu kernel that sorts or sums in another order shows.
The hot paths (coalesce, sparse x dense, dense + sparse, sparse_mask, sparse embedding gradients and the
optimizers that consume them) are asserted native; the long tail runs through the visible sparse CPU
fallback. PyTorch's sparse OpInfo samples run the same comparison.
"""
import io
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import torch_mlu
from conftest import REPO

I = torch.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])  # (0, 2) twice: uncoalesced
V = torch.tensor([3., 4., 5., 6., 7.])


def coo(device, values=V, size=(3, 3)):
    return torch.sparse_coo_tensor(I, values, size).to(device)


def dense(device):
    return torch.arange(9.).reshape(3, 3).to(device)


def hybrid(device):
    return torch.sparse_coo_tensor(I, torch.arange(10.).reshape(5, 2), (3, 3, 2)).to(device)


def assert_same(got, want, where="result"):
    """got (mlu) is want (CPU): layout, dtype, shape; COO raw indices, values and coalesced flag."""
    if isinstance(want, (tuple, list)):
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
        return
    if not isinstance(want, torch.Tensor):
        assert got == want, f"{where}: {got!r} on mlu, {want!r} on the CPU"
        return
    assert got.device.type == "mlu", f"{where} is on {got.device}"
    assert (got.layout, got.dtype, got.shape) == (want.layout, want.dtype, want.shape), \
        f"{where}: {got.layout} {got.dtype} {tuple(got.shape)} on mlu, {want.layout} {want.dtype} {tuple(want.shape)}"
    got = got.detach().cpu()
    if want.layout == torch.sparse_coo:
        assert got.is_coalesced() == want.is_coalesced(), f"{where}: coalesced {got.is_coalesced()} on mlu"
        torch.testing.assert_close(got._indices(), want._indices(), msg=lambda m: f"{where} indices: {m}")
        torch.testing.assert_close(got._values(), want._values(), msg=lambda m: f"{where} values: {m}")
    elif want.layout != torch.strided:
        torch.testing.assert_close(got.to_dense(), want.to_dense(), msg=lambda m: f"{where}: {m}")
    else:
        torch.testing.assert_close(got, want.detach(), equal_nan=True, msg=lambda m: f"{where}: {m}")


def compare(fn, native=True):
    """fn(device) on the CPU and on mlu: the same results; no fallback when native."""
    want = fn("cpu")
    torch_mlu.reset_fallback_report()
    got = fn("mlu")
    report = torch_mlu.fallback_report()
    if native:
        assert report == {}, f"the mlu run used the CPU fallback: {report}"
    assert_same(got, want)
    return report


def test_generated_registrations_are_current():
    result = subprocess.run([sys.executable, "tools/gen_sparse_generic_ops.py", "--check"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


NATIVE = {
    "construct": lambda d: torch.sparse_coo_tensor(I, V, (3, 3), device=d),
    "construct checked": lambda d: torch.sparse_coo_tensor(I, V, (3, 3), device=d, check_invariants=True),
    "to": lambda d: coo(d),
    "accessors": lambda d: (coo(d)._indices(), coo(d)._values(), coo(d)._nnz(), coo(d).sparse_dim(),
                            coo(d).dense_dim(), coo(d).is_coalesced()),
    "coalesce": lambda d: coo(d).coalesce(),
    "coalesce hybrid": lambda d: hybrid(d).coalesce(),
    "coalesce complex": lambda d: coo(d, V.to(torch.complex64)).coalesce(),
    "coalesce int64": lambda d: coo(d, V.long()).coalesce(),
    "coalesce one entry": lambda d: torch.sparse_coo_tensor(I[:, :1], V[:1], (3, 3)).to(d).coalesce(),
    "coalesce empty": lambda d: torch.zeros(3, 3, device=d).to_sparse().coalesce(),
    "coalesce 3 sparse dims": lambda d: torch.sparse_coo_tensor(
        torch.tensor([[1, 0, 1], [2, 2, 2], [0, 3, 0]]), V[:3], (2, 3, 4)).to(d).coalesce(),
    "to_dense": lambda d: coo(d).to_dense(),
    "to_dense hybrid": lambda d: hybrid(d).to_dense(),
    "to_sparse": lambda d: dense(d).to_sparse(),
    "to_sparse sparse_dim": lambda d: dense(d).to_sparse(1),
    "to_sparse_csr": lambda d: dense(d).to_sparse_csr(),
    "to_sparse_csc": lambda d: dense(d).to_sparse_csc(),
    "csr accessors": lambda d: (dense(d).to_sparse_csr().crow_indices(), dense(d).to_sparse_csr().col_indices(),
                                dense(d).to_sparse_csr().values()),
    "csr to_dense": lambda d: dense(d).to_sparse_csr().to_dense(),
    "coo to csr": lambda d: coo(d).coalesce().to_sparse_csr(),
    "csr to coo": lambda d: dense(d).to_sparse_csr().to_sparse(),
    "dense + sparse": lambda d: dense(d) + coo(d),
    "dense + sparse hybrid": lambda d: torch.ones(3, 3, 2, device=d) + hybrid(d),
    "dense += alpha sparse": lambda d: dense(d).add_(coo(d), alpha=2),
    "double + float sparse": lambda d: dense(d).double() + coo(d),
    "coalesced + coalesced": lambda d: torch.add(coo(d).coalesce(), coo(d).coalesce(), alpha=2),
    "sparse * 2": lambda d: coo(d) * 2,
    "2 * sparse": lambda d: 2 * coo(d).coalesce(),
    "sparse / 2": lambda d: coo(d) / 2,
    "neg abs": lambda d: (-coo(d)).abs(),
    "sparse.mm": lambda d: torch.sparse.mm(coo(d), dense(d)),
    "mm coalesced": lambda d: coo(d).coalesce() @ dense(d),
    "addmm": lambda d: torch.addmm(dense(d), coo(d), dense(d), beta=0.5, alpha=2),
    "addmm broadcast self": lambda d: torch.addmm(torch.ones(3, device=d), coo(d), dense(d)),
    "addmm beta 0": lambda d: torch.addmm(torch.full((3, 3), float("nan"), device=d), coo(d), dense(d), beta=0),
    "addmm_": lambda d: dense(d).addmm_(coo(d), dense(d)),
    "csr @ dense": lambda d: dense(d).to_sparse_csr() @ torch.ones(3, 4, device=d),
    "csr addmm": lambda d: torch.addmm(torch.ones(3, 4, device=d), dense(d).to_sparse_csr(),
                                       torch.ones(3, 4, device=d), alpha=3),
    "mv": lambda d: torch.mv(coo(d), torch.arange(3., device=d)),
    "sparse_mask": lambda d: dense(d).sparse_mask(coo(d)),
    "sparse_mask coalesced": lambda d: dense(d).sparse_mask(coo(d).coalesce()),
    "t coalesce": lambda d: coo(d).t().coalesce(),
    "sum dim": lambda d: torch.sparse.sum(coo(d), dim=1),
    "sum": lambda d: torch.sparse.sum(coo(d)),
    "narrow_copy": lambda d: coo(d).narrow_copy(1, 1, 2),
    "clone zero_": lambda d: coo(d).clone().zero_(),
    "pow": lambda d: coo(d).coalesce().pow(2),
}


@pytest.mark.parametrize("case", NATIVE)
def test_native(case):
    compare(NATIVE[case])


FALLBACK = {
    "uncoalesced + coalesced": (lambda d: coo(d) + coo(d).coalesce(), "aten::add.out"),
    "sparse * sparse": (lambda d: coo(d).coalesce() * coo(d).coalesce(), "aten::mul.out"),
    "softmax": (lambda d: torch.sparse.softmax(coo(d), 1), "aten::_sparse_softmax"),
    "log_softmax": (lambda d: torch.sparse.log_softmax(coo(d), 0), "aten::_sparse_log_softmax"),
    "index_select": (lambda d: coo(d).index_select(0, torch.tensor([2, 0], device=d)), "aten::index_select"),
    "bmm": (lambda d: torch.bmm(torch.stack([coo("cpu").to_dense()] * 2).to_sparse().to(d),
                                torch.ones(2, 3, 4, device=d)), "aten::bmm"),
    "csr + csr": (lambda d: dense(d).to_sparse_csr() + dense(d).to_sparse_csr(), "aten::add.out"),
}


@pytest.mark.parametrize("case", FALLBACK)
def test_fallback_is_visible_and_agrees(case):
    fn, op = FALLBACK[case]
    report = compare(fn, native=False)
    assert op in report, f"{op} should show in the fallback report: {report}"


def test_bsr_round_trip():
    compare(lambda d: torch.arange(16.).reshape(4, 4).to(d).to_sparse_bsr((2, 2)).to_dense(), native=False)


def test_errors_are_the_cpus():
    s = coo("mlu")
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\)"):
        s + dense("mlu")
    with pytest.raises(RuntimeError, match="expected 'self' and 'other' to have same size"):
        dense("mlu")[:1] + s
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
        torch.addmm(torch.ones(3, 4, device="mlu"), s, torch.ones(2, 4, device="mlu"))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.addmm(torch.ones(3, 4, device="mlu"), s, torch.ones(3, 4, device="mlu", dtype=torch.float64))
    with pytest.raises(RuntimeError, match="same device"):
        dense("cpu") + s
    assert torch.sparse.sum(s).item() == V.sum().item()  # the process keeps working


def test_fallback_off_is_an_error(python):
    result = python("""
        import torch, torch_mlu
        s = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 2), device="mlu")
        print((s.coalesce() * 3).to_dense().sum().item())  # native: allowed
        try:
            torch.sparse.softmax(s, 1)
        except NotImplementedError as e:
            print("refused:", e)
    """, env={"TORCH_MLU_FALLBACK": "0"})
    assert result.returncode == 0, result.stderr
    assert "9.0" in result.stdout
    assert "refused: The operator 'aten::_sparse_softmax' has no mlu kernel" in result.stdout


def test_save_and_load():
    buffer = io.BytesIO()
    torch.save({"coo": coo("mlu"), "csr": dense("mlu").to_sparse_csr()}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert_same(loaded["coo"], coo("cpu"))
    assert_same(loaded["csr"], dense("cpu").to_sparse_csr())


def embedding_training(device, module, optimizer, steps=3):
    torch.manual_seed(0)
    model = module().to(device)
    opt = optimizer(model.parameters())
    indices = torch.tensor([1, 2, 1, 5, 9, 2], device=device)
    for _ in range(steps):
        opt.zero_grad()
        if isinstance(model, torch.nn.EmbeddingBag):
            out = model(indices, torch.tensor([0, 2, 2, 5], device=device))
        else:
            out = model(indices)
        (out * torch.arange(out.numel(), device=device).reshape(out.shape)).pow(2).sum().backward()
        assert model.weight.grad.is_sparse
        opt.step()
    return model.weight.detach(), model.weight.grad


MODULES = {
    "embedding": lambda: torch.nn.Embedding(10, 4, sparse=True),
    "embedding padding_idx": lambda: torch.nn.Embedding(10, 4, sparse=True, padding_idx=2),
    "embedding_bag sum": lambda: torch.nn.EmbeddingBag(10, 4, sparse=True, mode="sum"),
    "embedding_bag mean": lambda: torch.nn.EmbeddingBag(10, 4, sparse=True, mode="mean"),
}
OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.1),
    "SparseAdam": lambda p: torch.optim.SparseAdam(list(p), lr=0.1),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("module", MODULES)
def test_sparse_gradients_train_natively(module, optimizer):
    compare(lambda d: embedding_training(d, MODULES[module], OPTIMIZERS[optimizer]))


def test_embedding_sparse_gradient_is_uncoalesced_like_the_cpu():
    def grad(device):
        weight = torch.randn(10, 3, generator=torch.Generator().manual_seed(1)).to(device).requires_grad_()
        F.embedding(torch.tensor([[1, 2], [2, 7]], device=device), weight, sparse=True).sum().backward()
        return weight.grad
    compare(grad)


# --- PyTorch's sparse OpInfo samples ----------------------------------------------------------------

LAYOUTS = {torch.sparse_coo: "supports_sparse", torch.sparse_csr: "supports_sparse_csr",
           torch.sparse_csc: "supports_sparse_csc", torch.sparse_bsr: "supports_sparse_bsr",
           torch.sparse_bsc: "supports_sparse_bsc"}
RANDOM = {"randn_like", "rand_like", "randint_like", "bernoulli", "normal", "uniform"}


def to_mlu(value):
    if isinstance(value, torch.Tensor):
        return value.to("mlu")
    if isinstance(value, (list, tuple)):
        return type(value)(to_mlu(v) for v in value)
    if isinstance(value, dict):
        return {k: to_mlu(v) for k, v in value.items()}
    return value


def as_dense(value):
    """A COO result as its dense picture; a compressed one as its parts (op_db's samples include
    compressed results whose values outnumber their nnz, on the CPU too, which to_dense refuses)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.layout in (torch.sparse_csr, torch.sparse_bsr):
            return [value.crow_indices(), value.col_indices(), value.values()]
        if value.layout in (torch.sparse_csc, torch.sparse_bsc):
            return [value.ccol_indices(), value.row_indices(), value.values()]
        return value.to_dense() if value.layout != torch.strided else value
    if isinstance(value, (list, tuple)):
        return [as_dense(v) for v in value]
    return value


def sparse_samples(op, layout, dtype):
    """op_db's own sparse samples for the layout; else its dense 2-D samples with the input made sparse."""
    try:
        return list(op.sample_inputs_sparse(layout, "cpu", dtype))[:12]
    except (NotImplementedError, Exception) as e:  # no sample function, or unittest.SkipTest
        if not isinstance(e, NotImplementedError) and type(e).__name__ != "SkipTest":
            raise
    if layout not in (torch.sparse_coo, torch.sparse_csr):
        return []
    samples = []
    for s in op.sample_inputs("cpu", dtype):
        if isinstance(s.input, torch.Tensor) and s.input.dim() == 2 and len(samples) < 4:
            s.input = s.input.to_sparse(layout=layout)
            samples.append(s)
    return samples


OPINFO_CASES = [(op, layout, dtype) for op in op_db for layout, attr in LAYOUTS.items()
                if getattr(op, attr, False) and op.name not in RANDOM
                for dtype in (torch.float32, torch.complex64) if dtype in op.supported_dtypes("cpu")]


@pytest.mark.parametrize("op,layout,dtype", OPINFO_CASES,
                         ids=[f"{op.name}-{str(layout)[6:]}-{str(dtype)[6:]}" for op, layout, dtype in OPINFO_CASES])
def test_opinfo_sparse_samples(op, layout, dtype):
    compared = 0
    for sample in sparse_samples(op, layout, dtype):
        try:
            want = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:  # the CPU rejects it: not a case to compare
            continue
        got = op(to_mlu(sample.input), *to_mlu(sample.args), **to_mlu(sample.kwargs))
        if isinstance(want, torch.Tensor):
            assert got.layout == want.layout, f"{got.layout} on mlu, {want.layout} on the CPU"
        torch.testing.assert_close(as_dense(got), as_dense(want), equal_nan=True)
        compared += 1
    if compared == 0:
        pytest.skip("no sample the CPU accepts")
