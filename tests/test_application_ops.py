"""The characteristic ops of the application examples, checked on their own against the CPU: an ArcFace angular
margin loss, a temporal shift of video features (TSM), the vocoder's transposed 1-D convolutions and a
multi-resolution STFT loss. Each runs forward and backward on mlu:0 and mlu:1 (the latter with a busy queue on
mlu:0), in float32 and under bfloat16 autocast, compiled as well as eager for the shift, with no CPU fallback; the
oracle is the same code on the CPU, with PyTorch's tolerances for the dtype."""
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import face_recognition  # noqa: E402
import speech_synthesis  # noqa: E402

DEVICES = ["mlu:0", "mlu:1"]
PRECISIONS = [None, torch.bfloat16]


def tolerances(precision):
    return dict(rtol=1.6e-2, atol=1e-2) if precision is torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)


@pytest.fixture
def busy_other_device(request):
    """A long queue of work on mlu:0 while the test runs on another device (none when it runs on mlu:0)."""
    device = request.getfixturevalue("device")
    if device != "mlu:1":
        yield
        return
    a = torch.randn(512, 512, device="mlu:0")
    for _ in range(20):
        a = a @ a / 512
    yield
    torch.mlu.synchronize("mlu:0")


def run_both(fn, inputs, device, precision):
    """fn(*inputs) and the gradients of its (summed) result on `device` and on the CPU: [(out, grads)] x 2."""
    results = []
    for where in (device, "cpu"):
        leaves = [x.detach().to(where).requires_grad_(x.is_floating_point()) for x in inputs]
        kind = torch.device(where).type
        with torch.autocast(kind, dtype=precision or torch.float32, enabled=precision is not None):
            out = fn(*leaves)
        out.float().sum().backward()
        results.append((out.detach().float().cpu(), [x.grad.cpu() for x in leaves if x.grad is not None]))
    return results


def check(fn, inputs, device, precision):
    torch_mlu.reset_fallback_report()
    (out, grads), (expected, expected_grads) = run_both(fn, inputs, device, precision)
    assert torch_mlu.fallback_report() == {}
    torch.testing.assert_close(out, expected, **tolerances(precision))
    assert len(grads) == len(expected_grads)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, **tolerances(precision))


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("device", DEVICES)
def test_arcface_margin_loss(device, precision, busy_other_device):
    torch.manual_seed(0)
    head = face_recognition.ArcFace(20)
    embeddings = F.normalize(torch.randn(32, face_recognition.EMBEDDING), dim=1)
    labels = torch.randint(0, 20, (32,))
    # Targets past theta = pi - m take the linear branch: one sample's embedding is its class's opposite.
    embeddings[0] = -F.normalize(head.weight[labels[0]].detach(), dim=0)

    check(lambda e, w, y: face_recognition.ArcFace.forward(_Head(w), e, y), [embeddings, head.weight.detach(), labels],
          device, precision)


class _Head:
    """ArcFace.forward's `self`, with the weight given as a tensor (a leaf of the test)."""

    def __init__(self, weight, scale=16.0, margin=0.3):
        self.weight, self.scale, self.margin = weight, scale, margin


def temporal_shift(x, fold_div=8):
    """TSM's shift of [N, C, T, H, W] features: 1/8 of the channels one step back in time, 1/8 one step forward."""
    fold = x.shape[1] // fold_div
    out = torch.zeros_like(x)
    out[:, :fold, :-1] = x[:, :fold, 1:]
    out[:, fold:2 * fold, 1:] = x[:, fold:2 * fold, :-1]
    out[:, 2 * fold:] = x[:, 2 * fold:]
    return out


# Compiled on the non-current device beside a busy mlu:0 only (each case is an Inductor compile, ~5-25 s): the
# intersection that once broke (compile x multiple devices); mlu:0 compiles in test_compile.py.
@pytest.mark.parametrize("device,precision,compiled", [
    *[(device, precision, False) for device in DEVICES for precision in PRECISIONS],
    *[("mlu:1", precision, True) for precision in PRECISIONS]])
def test_temporal_shift_of_channels_last_clips(device, precision, compiled, busy_other_device):
    torch.manual_seed(1)
    x = torch.randn(2, 16, 6, 5, 7).contiguous(memory_format=torch.channels_last_3d)
    weight = torch.randn(16, 16, 1, 3, 3)

    def block(x, w):  # a shift, then a spatial convolution (TSM's residual branch)
        return F.conv3d(temporal_shift(x), w, padding=(0, 1, 1))

    fn = torch.compile(block, backend="inductor", fullgraph=True) if compiled else block
    check(fn, [x, weight], device, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("device", DEVICES)
def test_vocoder_transposed_convolutions(device, precision, busy_other_device):
    torch.manual_seed(2)
    x = torch.randn(3, 32, 24)
    cases = []
    for stride, channels in ((4, 32), (4, 16), (8, 8)):
        weight = torch.randn(channels, channels // 2, 2 * stride) / channels
        cases.append((weight, torch.randn(channels // 2), stride))

    def upsample(x, *params):
        for k, (_, _, stride) in enumerate(cases):
            x = F.conv_transpose1d(F.leaky_relu(x, 0.1), params[2 * k], params[2 * k + 1], stride, stride // 2)
        return x

    check(upsample, [x] + [t for w, b, _ in cases for t in (w, b)], device, precision)


def stft_loss_and_gradients(generated, target, device, dtype):
    g, t = (x.to(device, dtype).clone().requires_grad_() for x in (generated, target))
    windows = {}

    def magnitude(x, n_fft, hop):  # the example's, with the window in the signals' dtype
        window = windows.setdefault(n_fft, torch.hann_window(n_fft, device=x.device, dtype=x.dtype))
        return torch.stft(x, n_fft, hop, window=window, return_complex=True).abs().clamp(min=1e-7)

    original, speech_synthesis.stft_magnitude = speech_synthesis.stft_magnitude, magnitude
    try:
        loss = speech_synthesis.multi_resolution_stft_loss(g, t)
    finally:
        speech_synthesis.stft_magnitude = original
    loss.backward()
    return [x.detach().double().cpu() for x in (loss, g.grad, t.grad)]


@pytest.mark.parametrize("device", DEVICES)
def test_multi_resolution_stft_loss(device, busy_other_device):
    """Against float64 on the CPU: the log-magnitude term's gradients (1 / |S|) amplify rounding, so float32 on the
    CPU is itself 1e-3 off there; mlu must be as close to the exact result as the CPU's float32 is."""
    g = torch.Generator().manual_seed(4)
    target = speech_synthesis.synthesize(3, seed=3) + 0.01 * torch.randn(3, speech_synthesis.LENGTH, generator=g)
    generated = target + 0.1 * torch.randn(target.shape, generator=g)
    torch_mlu.reset_fallback_report()
    got = stft_loss_and_gradients(generated, target, device, torch.float32)
    assert torch_mlu.fallback_report() == {}
    cpu = stft_loss_and_gradients(generated, target, "cpu", torch.float32)
    exact = stft_loss_and_gradients(generated, target, "cpu", torch.float64)
    for name, x, c, e in zip(("loss", "grad of generated", "grad of target"), got, cpu, exact):
        cpu_error, error = (c - e).abs().max().item(), (x - e).abs().max().item()
        assert error <= 4 * cpu_error + 1e-6 * e.abs().max().item(), (name, error, cpu_error)
