"""nll_loss / cross_entropy run natively on mlu (mlu_kernels/loss.h) and agree with the CPU.

Every reduction, class weights, ignore_index (including every target ignored), label smoothing and
probability targets (composites over the same ops), 1-D input, float32/float64/bfloat16, gradients,
and an out-of-range target as a device-side error after which the device keeps working.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu

torch.manual_seed(0)


@pytest.fixture
def check(native_oracle):
    """The shared oracle on fn(x, *rest) and x's gradient (NaNs equal: a mean over no target is 0 / 0)."""
    def check(fn, x, *rest, dtype=torch.float32):
        def run(device):
            leaf = x.detach().clone().to(dtype).to(device).requires_grad_()
            args = [r.to(device) if isinstance(r, torch.Tensor) else r for r in rest]
            out = fn(leaf, *args)
            out.sum().backward()
            return out, leaf.grad
        native_oracle(run, equal_nan=True, **({"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}))
    return check


X = torch.randn(12, 7)
T = torch.tensor([0, 3, 6, 1, 1, 2, -100, 4, 5, 0, 6, 3])
WEIGHT = torch.rand(7) + 0.5


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_nll_loss(reduction, weighted, dtype, check):
    w = WEIGHT.to(dtype) if weighted else None
    check(lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, weight=None if w is None else w.to(x.device),
                                  reduction=reduction), X, T, dtype=dtype)


def test_ignore_index_and_all_ignored(check):
    check(lambda x, t: F.nll_loss(x, t, ignore_index=3), X, T.clamp(min=0))
    all_ignored = torch.full((12,), -100)
    check(lambda x, t: F.nll_loss(x, t), X, all_ignored)  # 0 / 0: NaN, like the CPU
    check(lambda x, t: F.nll_loss(x, t, reduction="sum"), X, all_ignored)


def test_cross_entropy_variants(check):
    check(lambda x, t: F.cross_entropy(x, t), X, T)
    check(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1, weight=WEIGHT.to(x.device)), X, T.clamp(min=0))
    check(lambda x, t: F.cross_entropy(x, t), X, torch.softmax(torch.randn(12, 7), 1))  # probabilities
    check(lambda x, t: F.cross_entropy(x, t), torch.randn(7), torch.tensor(2))  # unbatched
    check(lambda x, t: F.cross_entropy(x, t, reduction="none"), torch.randn(4, 5, 3, 3),
          torch.randint(0, 5, (4, 3, 3)))  # spatial targets: nll_loss2d
    check(lambda x, t: F.cross_entropy(x, t, weight=WEIGHT[:5].to(x.device), ignore_index=1), torch.randn(2, 5, 4, 3),
          torch.randint(0, 5, (2, 4, 3)))


def test_out_of_range_target_is_a_device_error():
    x = torch.randn(3, 4).to("mlu")
    with pytest.raises(RuntimeError, match="Target 7 is out of bounds"):
        F.nll_loss(x, torch.tensor([0, 7, 1]).to("mlu"))
        torch.mlu.synchronize()
    assert F.nll_loss(x, torch.tensor([0, 3, 1]).to("mlu")).isfinite().item()  # the device keeps working


def test_dropout_backward_is_native():
    x = torch.randn(50, 40).to("mlu").requires_grad_()
    torch_mlu.reset_fallback_report()
    y = F.dropout(x, 0.3, training=True)
    y.backward(torch.ones_like(y))
    assert torch_mlu.fallback_report() == {}, torch_mlu.fallback_report()
    kept = y.detach() != 0
    torch.testing.assert_close(x.grad[kept].cpu(), torch.full((int(kept.sum()),), 1 / 0.7))
    assert (x.grad[~kept] == 0).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_mse_loss(reduction, dtype, check):  # and the out= form
    target = torch.randn(6, 5)
    check(lambda x, t: F.mse_loss(x, t, reduction=reduction), torch.randn(6, 5), target.to(dtype), dtype=dtype)
    out = torch.empty(0, device="mlu")
    got = torch.ops.aten.mse_loss.out(X.to("mlu"), (X * 0.5).to("mlu"), 1, out=out)
    torch.testing.assert_close(got.cpu(), F.mse_loss(X, X * 0.5))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted, native_oracle):
    torch.manual_seed(0)
    x = torch.rand(4, 5).clamp(1e-3, 1 - 1e-3)
    x[0, 0], x[0, 1] = 0.0, 1.0  # the log clamps at -100
    t = torch.rand(4, 5)
    w = torch.rand(5) if weighted else None

    def run(device):
        leaf = x.detach().clone().to(device).requires_grad_()
        loss = F.binary_cross_entropy(leaf, t.to(device), None if w is None else w.to(device), reduction=reduction)
        loss.backward(torch.ones_like(loss))
        return loss, leaf.grad

    native_oracle(run, rtol=1e-5, atol=1e-5)


def test_binary_cross_entropy_range_is_a_device_side_error():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, 1.5], device="mlu"), torch.tensor([0.0, 1.0], device="mlu"))
        torch.mlu.synchronize()
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, 0.5], device="mlu"), torch.tensor([0.0, 2.0], device="mlu"))
        torch.mlu.synchronize()
    torch._assert_async(torch.tensor(1, device="mlu"))
    with pytest.raises(RuntimeError, match="Expected Tensor with single nonzero value, but got zero"):
        torch._assert_async(torch.tensor(0.0, device="mlu"))
        torch.mlu.synchronize()
    assert F.binary_cross_entropy(torch.tensor([0.5], device="mlu"), torch.tensor([1.0], device="mlu")).item() > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_nll_loss_sums_give_the_cpus_bits(dtype):
    """Note [nll_loss sums as the CPU does]: the reduced loss and total weight equal the CPU's bit for bit (its
    cascade of partial sums in the input's own precision), for 1-D, 2-D and spatial inputs, small and large."""
    g = torch.Generator().manual_seed(0)
    for shape in [(3,), (5, 3), (300, 7), (4, 3, 9, 11), (2, 5, 40, 41), (70000, 2)]:
        x = torch.randn(shape, generator=g).log_softmax(min(1, len(shape) - 1)).to(dtype)
        classes = shape[1] if len(shape) > 1 else shape[0]
        target = torch.randint(0, classes, (shape[0],) + shape[2:] if len(shape) > 1 else (), generator=g)
        weight = torch.rand(classes, generator=g).to(dtype)
        for reduction in ("mean", "sum", "none"):
            for w in (None, weight):
                for ignore_index in (-100, 1):
                    def loss(device):
                        return torch.ops.aten.nll_loss_nd(x.to(device), target.to(device),
                                                          None if w is None else w.to(device),
                                                          ("none", "mean", "sum").index(reduction), ignore_index)
                    torch.testing.assert_close(loss("mlu").cpu(), loss("cpu"), rtol=0, atol=0, equal_nan=True,
                                               msg=lambda m: f"{shape} {reduction} {w is not None} {ignore_index}: {m}")
    total_weight = torch.ops.aten.nll_loss_forward(x.to("mlu"), target.to("mlu"), weight.to("mlu"), 1, -100)[1]
    assert total_weight.cpu().equal(torch.ops.aten.nll_loss_forward(x, target, weight, 1, -100)[1])
