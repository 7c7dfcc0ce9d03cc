"""The CPU fallback: correct results, queue order, visible, device checks."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

# Under the host-access trap the fallback copies what it would read in place (Note [Zero-copy fallback]):
# these run in both passes of `make test`, so both paths are checked.
pytestmark = pytest.mark.also_untrapped


def mlu(t):
    return t.to("mlu")


@pytest.mark.parametrize("fn", [
    lambda a, b: a + b,
    lambda a, b: a * b - b,
    lambda a, b: torch.matmul(a, b.t()),
    lambda a, b: torch.where(a > 0, a, b),
    lambda a, b: F.softmax(a, dim=-1),
    lambda a, b: a.sum(dim=0),
    lambda a, b: torch.cat([a, b], dim=1),
    lambda a, b: a.abs(),
    lambda a, b: torch.isfinite(a / b),
    lambda a, b: a.max(dim=1).values,
    lambda a, b: torch.nonzero(a > 0.5),
    lambda a, b: a[a > 0],
])
def test_fallback_results_match_cpu(fn):
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
    expected = fn(a, b)
    got = fn(mlu(a), mlu(b))
    assert got.device.type == "mlu"
    torch.testing.assert_close(got.cpu(), expected)


def test_inplace_and_out_variants():
    a = torch.arange(6.0)
    x = mlu(a)
    x.add_(1).mul_(2)
    assert torch.equal(x.cpu(), (a + 1) * 2)
    out = torch.empty(0, device="mlu")
    torch.add(x, 1, out=out)  # out is resized by the CPU kernel, then copied back
    assert out.shape == (6,) and torch.equal(out.cpu(), (a + 1) * 2 + 1)


def test_factories_with_device_mlu():
    assert torch.equal(torch.arange(5, device="mlu").cpu(), torch.arange(5))
    assert torch.equal(torch.linspace(0, 1, 5, device="mlu").cpu(), torch.linspace(0, 1, 5))
    assert torch.equal(torch.eye(3, device="mlu").cpu(), torch.eye(3))
    r = torch.randn(3, 3, device="mlu")
    assert r.device.type == "mlu" and r.shape == (3, 3)


def test_autograd_through_fallback():
    a = torch.randn(3, 4, requires_grad=True)
    b = a.detach().to("mlu").requires_grad_()
    (a.exp() * 2).sum().backward()
    (b.exp() * 2).sum().backward()
    assert b.grad.device.type == "mlu"
    torch.testing.assert_close(b.grad.cpu(), a.grad)


def test_fallback_sees_earlier_device_work_in_order():
    x = torch.zeros(1000, device="mlu")
    torch.mlu._sleep(30_000_000)  # the fill below runs 30 ms later on the stream
    x.fill_(2.0)                  # native and asynchronous
    y = x * 3                     # fallback: must see the fill
    assert torch.equal(y.cpu(), torch.full((1000,), 6.0))


def test_warns_once_per_op_and_reports_counts():
    torch_mlu.reset_fallback_report()
    x = torch.ones(3, device="mlu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.histc(x)
        torch.histc(x)
        torch.histc(x)
    histc = [w for w in caught if "aten::histc" in str(w.message)]
    assert len(histc) <= 1  # TORCH_WARN is once per call site in C++; counted below regardless
    report = torch_mlu.fallback_report()
    assert report.get("aten::histc") == 3
    assert all(isinstance(k, str) and isinstance(v, int) for k, v in report.items())
    torch_mlu.reset_fallback_report()
    assert torch_mlu.fallback_report() == {}


def test_first_fallback_warning_names_the_op(python):
    result = python(
        """
        import warnings, torch, torch_mlu
        x = torch.ones(2, device="mlu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.histc(x); torch.histc(x)
        print(sum("aten::histc" in str(w.message) for w in caught))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


def test_mixing_devices_is_an_error():
    a = torch.ones(3, device="mlu:0")
    b = torch.ones(3, device="mlu:1")
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*mlu:0.*mlu:1"):
        a + b
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*cpu"):
        a + torch.ones(3)
    # a CPU scalar tensor is fine, as for CUDA
    assert torch.equal((a + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))
    # CPU indices are accepted by indexing, as for CUDA
    assert torch.equal(a[torch.tensor([0, 2])].cpu(), torch.ones(2))
    # and the process goes on
    assert torch.equal((a + a).cpu(), torch.full((3,), 2.0))


def test_view_op_without_kernel_errors_instead_of_copying():
    x = torch.ones(4, 4, device="mlu")
    # diagonal is composite (a view through as_strided): it works natively
    d = x.diagonal()
    assert d.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_fallback_can_be_turned_off(python):
    result = python(
        """
        import torch, torch_mlu
        x = torch.ones(3, device="mlu")
        x.fill_(2.0)  # native ops still work
        try:
            torch.histc(x)
        except NotImplementedError as e:
            print(str(e).splitlines()[0])
        print(x.cpu().tolist())
        """,
        env={"TORCH_MLU_FALLBACK": "0"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().split("\n")
    assert "'aten::histc' has no mlu kernel" in lines[0] and "TORCH_MLU_FALLBACK=0" in lines[0]
    assert lines[1] == "[2.0, 2.0, 2.0]"
