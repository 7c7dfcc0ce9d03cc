"""nn.EmbeddingBag / F.embedding_bag run natively on mlu (mlu_kernels/embedding_bag.h) and agree with the CPU.

sum / mean / max, offsets and 2-D inputs, include_last_offset, empty bags, padding_idx, per_sample_weights
(with their gradient), scale_grad_by_freq, int32 indices, 16-bit weights, and device-side errors for bad
indices and offsets.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)


def run(device, weight, indices, offsets=None, psw=None, dtype=torch.float32, **kw):
    w = weight.detach().clone().to(dtype).to(device).requires_grad_()
    p = None if psw is None else psw.detach().clone().to(dtype).to(device).requires_grad_()
    out = F.embedding_bag(indices.to(device), w, None if offsets is None else offsets.to(device),
                          per_sample_weights=p, **kw)
    torch.manual_seed(3)
    out.backward(torch.randn(out.shape).to(dtype).to(device))
    return [out, w.grad] + ([] if p is None else [p.grad])


@pytest.fixture
def check(native_oracle):
    """The shared oracle on F.embedding_bag and its gradients."""
    def check(*args, dtype=torch.float32, **kw):
        tol = dict(rtol=1.6e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
        native_oracle(lambda device: run(device, *args, dtype=dtype, **kw), **tol)
    return check


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_modes_with_offsets(mode, include_last_offset, check):
    torch.manual_seed(0)
    weight = torch.randn(20, 7)
    indices = torch.randint(0, 20, (30,))
    offsets = torch.tensor([0, 4, 4, 11, 25, 30] if include_last_offset else [0, 4, 4, 11, 25])  # an empty bag
    check(weight, indices, offsets, mode=mode, include_last_offset=include_last_offset)
    check(weight, indices, offsets, mode=mode, include_last_offset=include_last_offset, padding_idx=int(indices[5]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_input_int32_frequency_scaling_and_bfloat16(mode, check):
    torch.manual_seed(1)
    weight = torch.randn(12, 5)
    indices = torch.randint(0, 12, (6, 4), dtype=torch.int32)
    check(weight, indices, mode=mode)
    check(weight, indices, mode=mode, dtype=torch.bfloat16)
    if mode != "max":
        # The CPU's scale_grad_by_freq for embedding_bag divides by the count of the i-th smallest index of the
        # batch instead of the row's own (EmbeddingBag.cpp: `scale /= counts[indices_data[i]]`, i the i-th
        # unique group); the oracle is F.embedding's correct scaling, reduced per bag.
        w = weight.clone().requires_grad_()
        rows = F.embedding(indices.long(), w, scale_grad_by_freq=True)
        (rows.sum(1) if mode == "sum" else rows.mean(1)).backward(torch.ones(6, 5))
        dw = weight.to("mlu").requires_grad_()
        F.embedding_bag(indices.to("mlu"), dw, mode=mode, scale_grad_by_freq=True).backward(
            torch.ones(6, 5, device="mlu"))
        torch.testing.assert_close(dw.grad.cpu(), w.grad)


def test_per_sample_weights(check):
    torch.manual_seed(2)
    weight = torch.randn(10, 6)
    indices = torch.randint(0, 10, (14,))
    offsets = torch.tensor([0, 3, 9])
    check(weight, indices, offsets, psw=torch.rand(14), mode="sum")
    check(weight, indices, offsets, psw=torch.rand(14), mode="sum", padding_idx=int(indices[0]))


def test_module_and_errors():
    torch.manual_seed(3)
    bag = torch.nn.EmbeddingBag(10, 4, mode="mean")
    x = torch.randint(0, 10, (3, 5))
    expected = bag(x)
    torch.testing.assert_close(bag.to("mlu")(x.to("mlu")).cpu(), expected)
    weight = torch.randn(10, 4, device="mlu")
    with pytest.raises(RuntimeError, match="found idx to be 10"):
        F.embedding_bag(torch.tensor([1, 10], device="mlu"), weight, torch.tensor([0], device="mlu"))
        torch.mlu.synchronize()
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(torch.tensor([1, 2], device="mlu"), weight, torch.tensor([1], device="mlu"))
        torch.mlu.synchronize()
    with pytest.raises(RuntimeError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(torch.tensor([1, 2], device="mlu"), weight, torch.tensor([0], device="mlu"), mode="mean",
                        per_sample_weights=torch.ones(2, device="mlu"))
    # The device keeps working after a device-side error.
    assert F.embedding_bag(torch.tensor([[1, 2]], device="mlu"), weight).shape == (1, 4)
