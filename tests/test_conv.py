"""Convolutions run natively on mlu (mlu_kernels/conv.h) and agree with the CPU.

conv1d/2d/3d and conv_transpose1d/2d/3d with stride, padding (including "same"), dilation, groups
(depthwise too) and bias, forward and all three gradients, both memory formats (the result keeps
the CPU's format), float32/float64/bfloat16, and the errors a user can hit.
"""
import glob
import os
import tempfile

import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)

from conftest import run_python

torch.manual_seed(0)


def forward_backward(fn, args, dtype):
    """run(device): fn(*args) in dtype on device, then backward; returns the output and the gradients."""
    def run(device):
        leaves = [a.detach().to(device=device, dtype=dtype).requires_grad_() if a is not None else None for a in args]
        out = fn(*leaves)
        torch.manual_seed(1)
        grad = torch.randn(out.shape).to(device=device, dtype=dtype)
        out.backward(grad)
        return [out] + [leaf.grad for leaf in leaves if leaf is not None]
    return run


@pytest.fixture
def check(native_oracle):
    """The shared oracle on fn(*args) and its gradients, with this file's tolerances."""
    def check(fn, args, dtype=torch.float32):
        tol = {"rtol": 2e-2, "atol": 5e-2} if dtype == torch.bfloat16 else {"rtol": 1e-4, "atol": 1e-4}
        native_oracle(forward_backward(fn, args, dtype), **tol)
    return check


CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding=2, dilation=2),
    dict(padding="same", dilation=(1, 2)),
    dict(stride=(2, 1), padding=(0, 1), groups=2),
]


@pytest.mark.parametrize("kwargs", CONV2D, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kwargs, bias, check):
    x, w = torch.randn(2, 4, 11, 9), torch.randn(6, 4 // kwargs.get("groups", 1), 3, 3)
    b = torch.randn(6) if bias else None
    check(lambda x, w, *b: F.conv2d(x, w, b[0] if b else None, **kwargs), [x, w] + ([b] if bias else []))


def test_depthwise_and_pointwise(check):
    check(lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=8), [torch.randn(2, 8, 10, 10), torch.randn(8, 1, 3, 3),
                                                                   torch.randn(8)])
    check(lambda x, w: F.conv2d(x, w), [torch.randn(3, 16, 7, 7), torch.randn(32, 16, 1, 1)])  # 1x1: no unfolding
    check(lambda x, w: F.conv2d(x, w, stride=2), [torch.randn(3, 16, 7, 7), torch.randn(32, 16, 1, 1)])


def test_conv1d_conv3d_and_unbatched(check):
    check(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=3, dilation=2),
          [torch.randn(3, 5, 40), torch.randn(7, 5, 4), torch.randn(7)])
    check(lambda x, w, b: F.conv3d(x, w, b, padding=1, stride=(1, 2, 1)),
          [torch.randn(2, 3, 6, 7, 5), torch.randn(4, 3, 3, 3, 3), torch.randn(4)])
    check(lambda x, w: F.conv2d(x, w, padding=1), [torch.randn(4, 9, 9), torch.randn(5, 4, 3, 3)])


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2)],
                         ids=str)
def test_conv_transpose(kwargs, check):
    x, w, b = torch.randn(2, 4, 7, 6), torch.randn(4, 6 // kwargs.get("groups", 1), 3, 3), torch.randn(6)
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs), [x, w, b])
    check(lambda x, w: F.conv_transpose1d(x, w, stride=3), [torch.randn(2, 3, 9), torch.randn(3, 2, 4)])
    check(lambda x, w: F.conv_transpose3d(x, w, padding=1), [torch.randn(1, 2, 4, 5, 3), torch.randn(2, 3, 3, 3, 3)])


HOST_HAS_AVX512_FP16 = "avx512_fp16" in open("/proc/cpuinfo").read()

TRANSPOSED_16BIT = [  # (dims, in_channels, out_channels, groups, kwargs)
    (1, 4, 8, 1, dict(stride=3, padding=1)),
    (2, 5, 6, 1, dict()),
    (2, 8, 6, 2, dict(stride=2, padding=1, output_padding=1, dilation=2)),
    (2, 17, 5, 1, dict(stride=(2, 3), output_padding=(1, 0))),
    (2, 6, 4, 1, dict(stride=1, dilation=3, output_padding=1)),  # output_padding >= stride: the CPU's slow path
    (3, 4, 3, 1, dict(stride=2, padding=(0, 1, 0))),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", TRANSPOSED_16BIT, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_16bit_bit_equal_to_the_cpu(dtype, case, bias):
    # Note [16-bit transposed convolution as the CPU sums it]: oneDNN's channel-pair float sums or the slow
    # path's rounded columns and rounded adds, picked as the CPU picks them on this host.
    dims, ic, oc, groups, kwargs = case
    g = torch.Generator().manual_seed(ic * 31 + oc)
    x = torch.randn([2, ic] + [5, 4, 3][:dims], generator=g).to(dtype)
    w = torch.randn([ic, oc // groups] + [3, 2, 2][:dims], generator=g).to(dtype)
    b = torch.randn(oc, generator=g).to(dtype) if bias else None
    fn = [None, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][dims]
    want = fn(x, w, b, groups=groups, **kwargs)
    got = fn(x.to("mlu"), w.to("mlu"), b.to("mlu") if bias else None, groups=groups, **kwargs).cpu()
    if dtype == torch.float16 and HOST_HAS_AVX512_FP16 and not torch.equal(got, want):
        # On hosts with AVX512-FP16 the CPU's oneDNN sums float16 channels in an order of its own, which the
        # Note does not follow: there the results may differ in the last bit, and mlu must be as accurate.
        exact = fn(x.double(), w.double(), b.double() if bias else None, groups=groups, **kwargs)
        ulp = (want.float().abs() * 2.0 ** -10).clamp_min(2.0 ** -24)
        assert ((got.float() - want.float()).abs() <= ulp).all(), "more than one ulp from the CPU"
        assert (got.double() - exact).abs().mean() <= (want.double() - exact).abs().mean() * 1.01
        return
    assert torch.equal(got, want)


def test_float64(check):
    check(lambda x, w, b: F.conv2d(x, w, b, padding=1), [torch.randn(2, 8, 12, 12), torch.randn(16, 8, 3, 3),
                                                         torch.randn(16)], dtype=torch.float64)


def test_bfloat16_is_as_accurate_as_the_cpu():
    """The CPU's own bfloat16 convolution depends on the host (oneDNN's AVX512-BF16 kernels, or float
    accumulation on AVX2 hosts), so results differ by an ulp here and there: against a float64 reference, mlu's
    output and gradients must be about as accurate as the CPU's."""
    fn = lambda x, w, b: F.conv2d(x, w, b, padding=1)  # noqa: E731
    args = [torch.randn(2, 8, 12, 12), torch.randn(16, 8, 3, 3), torch.randn(16)]
    exact = forward_backward(fn, args, torch.float64)("cpu")
    cpu = forward_backward(fn, args, torch.bfloat16)("cpu")
    mlu = forward_backward(fn, args, torch.bfloat16)("mlu")
    for i, (e, c, m) in enumerate(zip(exact, cpu, mlu)):
        assert m.dtype == torch.bfloat16 and m.shape == e.shape
        cpu_error = (c.double() - e).abs().max().item()
        mlu_error = (m.cpu().double() - e).abs().max().item()
        assert mlu_error <= 1.5 * cpu_error + 1e-3, (i, mlu_error, cpu_error)


def test_channels_last_operands_give_contiguous_results(check):
    # PyTorch's shape functions for convolution_overrideable (meta, fake tensors) declare contiguous
    # results and gradients, and compiled graphs rely on them (Note [Convolution results are contiguous]).
    x = torch.randn(2, 8, 10, 10).to(memory_format=torch.channels_last)
    w = torch.randn(4, 8, 3, 3)
    expected = F.conv2d(x, w, padding=1)
    xm = x.to("mlu").requires_grad_()
    wm = w.to("mlu").to(memory_format=torch.channels_last).requires_grad_()
    got = F.conv2d(xm, wm, padding=1)
    assert got.is_contiguous()
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    fake_x, fake_w = mode.from_tensor(xm.detach()), mode.from_tensor(wm.detach())
    with mode:
        declared = F.conv2d(fake_x, fake_w, padding=1)
    assert got.stride() == declared.stride()
    grad_x, grad_w = torch.autograd.grad(got.sum(), [xm, wm])  # raw gradients (no AccumulateGrad)
    assert grad_x.is_contiguous() and grad_w.is_contiguous()
    torch.testing.assert_close(got.detach().cpu(), expected, rtol=1e-4, atol=1e-4)
    check(lambda x, w: F.conv2d(x, w, padding=1), [x, w])


def test_modules_train():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, stride=2),
                              torch.nn.ConvTranspose2d(8, 4, 2, stride=2))
    cpu = [p.detach().clone() for p in net.parameters()]
    x = torch.randn(2, 3, 12, 12)
    net.to("mlu")
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        net(x.to("mlu")).square().mean().backward()
        opt.step()
    ref = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, stride=2),
                              torch.nn.ConvTranspose2d(8, 4, 2, stride=2))
    with torch.no_grad():
        for p, c in zip(ref.parameters(), cpu):
            p.copy_(c)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        ref_opt.zero_grad()
        ref(x).square().mean().backward()
        ref_opt.step()
    for p, r in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), r.detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8], ids=str)
def test_integer_convolutions_equal_the_cpu(dtype):
    """The CPU's slow convolutions take integer tensors (wrapping on overflow); so does mlu's im2col path, for
    every integer dtype and every convolution form."""
    g = torch.Generator().manual_seed(0)
    low = 0 if dtype == torch.uint8 else -20

    def rand(*shape):
        return torch.randint(low, 20, shape, generator=g).to(dtype)

    cases = [  # (spatial dims, kwargs, transposed)
        (1, dict(stride=2, padding=1), False), (2, dict(dilation=2, groups=2), False),
        (3, dict(padding=1), False), (2, dict(stride=2, padding=1, output_padding=1), True),
        (1, dict(groups=2, dilation=2), True), (3, dict(stride=2), True),
    ]
    torch_mlu.reset_fallback_report()
    for dims, kwargs, transposed in cases:
        x = rand(2, 4, *([6] * dims))
        w = rand(4, 4 // kwargs.get("groups", 1), *([3] * dims)) if not transposed else \
            rand(4, 6 // kwargs.get("groups", 1), *([3] * dims))
        b = rand(w.shape[1] * kwargs.get("groups", 1) if transposed else w.shape[0])
        f = getattr(F, f"conv_transpose{dims}d" if transposed else f"conv{dims}d")
        # In int64 on the CPU, then wrapped to dtype: the CPU's own int32 / int16 / int8 kernels exist only for
        # some of these cases (its dilated convolutions take int64 alone), and wrapping commutes with + and *.
        want = f(x.long(), w.long(), b.long(), **kwargs).to(dtype)
        got = f(x.to("mlu"), w.to("mlu"), b.to("mlu"), **kwargs)
        assert got.dtype == dtype and got.device.type == "mlu"
        assert torch.equal(got.cpu(), want), (dims, kwargs, transposed)
    assert not torch_mlu.fallback_report()


def test_errors():
    x, w = torch.randn(1, 3, 8, 8).to("mlu"), torch.randn(4, 3, 3, 3).to("mlu")
    with pytest.raises(RuntimeError, match="convolution on mlu supports float32"):
        F.conv2d(x.bool(), w.bool())
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x, w.cpu())
    with pytest.raises(RuntimeError):
        F.conv2d(x, torch.randn(4, 5, 3, 3).to("mlu"))  # channel mismatch: PyTorch's own check
    assert F.conv2d(x, w).shape == (1, 4, 6, 6)


def test_debians_onednn_keeps_to_itself_beside_torchs():
    """Note [oneDNN beside PyTorch's]: libdnnl is opened with RTLD_DEEPBIND, so none of its calls bind into the
    oneDNN libtorch_cpu carries (they did when it was linked, and a CPU convolution after an mlu one crashed)."""
    result = run_python("""
        import torch, torch_mlu
        assert torch_mlu._C._kernel_config()["dnnl_linked"]
        x, w = torch.randn(2, 3, 10), torch.randn(4, 3, 3)
        y = torch.nn.functional.conv1d(x.to("mlu"), w.to("mlu")).cpu()
        torch.testing.assert_close(y, torch.nn.functional.conv1d(x, w))
        a = torch.randn(32, 32, dtype=torch.bfloat16)
        torch.testing.assert_close((a.to("mlu") @ a.to("mlu")).cpu(), a @ a)
    """, env={"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": os.path.join(tempfile.gettempdir(), f"mlu-dnnl-{os.getpid()}")})
    assert result.returncode == 0, result.stderr
    logs = glob.glob(os.path.join(tempfile.gettempdir(), f"mlu-dnnl-{os.getpid()}.*"))
    try:
        lines = [line for path in logs for line in open(path)]
    finally:
        for path in logs:
            os.remove(path)
    from_dnnl = [line for line in lines if "libdnnl.so" in line.split(" to ")[0] and "binding file" in line]
    assert from_dnnl, "LD_DEBUG recorded no binding of libdnnl: was it loaded?"
    into_torch = [line.strip() for line in from_dnnl if "libtorch_cpu" in line.split(" to ")[-1]]
    assert not into_torch, into_torch[:5]
