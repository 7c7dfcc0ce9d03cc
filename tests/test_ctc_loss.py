"""The CTC loss (F.ctc_loss / nn.CTCLoss) runs natively on mlu (mlu_kernels/ctc.h) and agrees with the CPU.

Both target layouts ([N, S] padded and 1-D concatenated), int32 / int64 targets, lengths as lists and as
tensors (on the CPU or on mlu), every reduction, zero_infinity with an item no alignment fits, a blank
other than 0, unbatched input, float32 / float64, gradients; argument errors with the CPU's exception and
text; an out-of-range target label as a device-side error after which the device keeps working.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)

T_STEPS, BATCH, LABELS = 12, 5, 6
INPUT_LENGTHS = [12, 9, 12, 3, 7]
TARGET_LENGTHS = [4, 0, 6, 3, 2]  # item 3 (3 steps, labels 1, 1, 2 need 4 steps) has no alignment


def make_targets(concatenated, dtype=torch.long, blank=0):
    g = torch.Generator().manual_seed(1)
    rows = [torch.randint(1, LABELS, (n,), generator=g) for n in TARGET_LENGTHS]
    rows[3] = torch.tensor([1, 1, 2])
    if blank != 0:  # labels avoid the blank
        rows = [torch.where(r == blank, 0, r) for r in rows]
    if concatenated:
        return torch.cat(rows).to(dtype)
    padded = torch.full((BATCH, max(TARGET_LENGTHS)), 1)
    for b, r in enumerate(rows):
        padded[b, :len(r)] = r
    return padded.to(dtype)


def run(device, logits, targets, input_lengths, target_lengths, dtype=torch.float32, **kwargs):
    leaf = logits.detach().to(dtype).to(device).requires_grad_()
    # Length tensors stay where the test put them on mlu (the CPU or mlu); the CPU run takes host copies.
    lengths = [x.cpu() if device == "cpu" and isinstance(x, torch.Tensor) else x
               for x in (input_lengths, target_lengths)]
    loss = F.ctc_loss(F.log_softmax(leaf, -1), targets.to(device), *lengths, **kwargs)
    weights = torch.linspace(0.5, 2, loss.numel()).reshape(loss.shape).to(device)
    (loss * weights).sum().backward()
    return loss, leaf.grad


@pytest.fixture
def check(native_oracle):
    """The shared oracle on the CTC loss and its gradient (NaNs equal); returns the mlu run's (loss, grad)."""
    def check(targets, input_lengths=INPUT_LENGTHS, target_lengths=TARGET_LENGTHS, dtype=torch.float32,
              logits=None, cpu_targets=None, **kwargs):
        logits = torch.randn(T_STEPS, BATCH, LABELS, generator=torch.Generator().manual_seed(0)) if logits is None \
            else logits
        cpu_targets = targets.cpu() if cpu_targets is None else cpu_targets
        return native_oracle(lambda device: run(device, logits, cpu_targets if device == "cpu" else targets,
                                                input_lengths, target_lengths, dtype=dtype, **kwargs),
                             equal_nan=True)
    return check


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_matches_cpu(reduction, concatenated, zero_infinity, check):
    loss, grad = check(make_targets(concatenated), reduction=reduction, zero_infinity=zero_infinity)
    if reduction == "none":  # the infeasible item: inf, or 0 with zero_infinity
        assert loss[3].item() == (0 if zero_infinity else float("inf"))
        assert loss[torch.arange(BATCH) != 3].isfinite().all()
    if zero_infinity:
        assert grad.isfinite().all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("target_dtype", [torch.int32, torch.int64])
def test_dtypes(dtype, target_dtype, check):
    check(make_targets(False, target_dtype), dtype=dtype, zero_infinity=True)
    check(make_targets(True, target_dtype), dtype=dtype, reduction="sum", zero_infinity=True)


def test_lengths_as_tensors_on_either_device_and_blank(check):
    il, tl = torch.tensor(INPUT_LENGTHS), torch.tensor(TARGET_LENGTHS, dtype=torch.int32)
    check(make_targets(True), il, tl, zero_infinity=True)
    check(make_targets(False), il.to("mlu"), tl.to("mlu"), zero_infinity=True)
    check(make_targets(False, blank=LABELS - 1), tuple(INPUT_LENGTHS), tuple(TARGET_LENGTHS), blank=LABELS - 1,
          zero_infinity=True)


def test_unbatched_long_sequence_and_module(check):
    logits = torch.randn(200, 1, 30, generator=torch.Generator().manual_seed(3))
    targets = torch.randint(1, 30, (1, 60), generator=torch.Generator().manual_seed(4))
    check(targets, [200], [60], logits=logits)
    # unbatched: [T, C] log_probs, [S] targets
    x = torch.randn(20, 5).log_softmax(-1)
    t = torch.tensor([1, 2, 2, 4])
    expected = F.ctc_loss(x, t, [20], [4])
    got = torch.nn.CTCLoss()(x.to("mlu"), t.to("mlu"), torch.tensor([20]), torch.tensor([4]))
    torch.testing.assert_close(got.cpu(), expected)


def test_strided_concatenated_targets_read_their_elements(check):
    # Note [Strided concatenated targets]: the CPU misreads a strided 1-D targets tensor; mlu gives what the
    # contiguous copy gives on the CPU.
    flat = make_targets(True)
    spread = torch.stack([flat, torch.full_like(flat, 5)], 1).reshape(-1)[::2]
    assert spread.stride(0) == 2
    check(spread.to("mlu"), cpu_targets=spread.contiguous(), zero_infinity=True)


def test_argument_errors_match_the_cpu():
    x = torch.randn(T_STEPS, BATCH, LABELS).log_softmax(-1)
    targets = make_targets(False)
    cases = [
        dict(blank=LABELS),  # blank out of range
        dict(input_lengths=[13] + INPUT_LENGTHS[1:]),  # longer than T
        dict(input_lengths=INPUT_LENGTHS[:-1]),  # wrong count
        dict(target_lengths=[-1] + TARGET_LENGTHS[1:]),
        dict(target_lengths=[7] + TARGET_LENGTHS[1:]),  # longer than the padded targets
    ]
    for case in cases:
        args = dict(input_lengths=INPUT_LENGTHS, target_lengths=TARGET_LENGTHS, blank=0) | case
        with pytest.raises(RuntimeError) as cpu_error:
            F.ctc_loss(x, targets, **args)
        with pytest.raises(RuntimeError) as mlu_error:
            F.ctc_loss(x.to("mlu"), targets.to("mlu"), **args)
        assert str(mlu_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0], case
    with pytest.raises(RuntimeError, match=r"float32 or float64 log_probs"):
        F.ctc_loss(x.to("mlu", torch.bfloat16), targets.to("mlu"), INPUT_LENGTHS, TARGET_LENGTHS)
    # F.ctc_loss converts targets to int64; the op itself takes int32 or int64 only.
    with pytest.raises(RuntimeError, match=r"targets' to have scalar type Int; but got .*Short"):
        torch.ops.aten._ctc_loss(x.to("mlu"), targets.to("mlu", torch.int16), INPUT_LENGTHS, TARGET_LENGTHS)
    # CUDA's generated device check (the Tensor-lengths overload alone takes CPU targets).
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but got targets is on cpu"):
        torch.ops.aten._ctc_loss(x.to("mlu"), targets, INPUT_LENGTHS, TARGET_LENGTHS)


def test_out_of_range_label_is_a_device_error():
    x = torch.randn(T_STEPS, BATCH, LABELS).log_softmax(-1).to("mlu")
    targets = make_targets(False)
    targets[2, 1] = LABELS + 3
    with pytest.raises(RuntimeError, match=r"ctc_loss\(\): target label 9 is out of range for 6 labels"):
        F.ctc_loss(x, targets.to("mlu"), INPUT_LENGTHS, TARGET_LENGTHS)
        torch.mlu.synchronize()
    ok = F.ctc_loss(x, make_targets(False).to("mlu"), INPUT_LENGTHS, TARGET_LENGTHS, zero_infinity=True)
    assert ok.isfinite().item()  # the device keeps working
