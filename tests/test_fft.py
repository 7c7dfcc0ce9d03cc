"""torch.fft on mlu: native DFTI plans (csrc/aten/ops/SpectralOps.cpp, kernels/src/fft/) against the CPU.

The three primitives (_fft_c2c, _fft_r2c, _fft_c2r) mirror the CPU's layout step for step (Note [FFT layouts as the
CPU's]), so values and output strides are the CPU's; every torch.fft function, stft and istft are PyTorch's generic
code on top. Checked here: every transform, norm, dim choice and layout against the CPU with strides; out= forms;
two-sided r2c (the conjugate-symmetry fill); gradients; the batch split over the compute cores (with a short last
part); the plan cache (torch.backends.mlu.cnfft_plan_cache) and its errors; the CPU's errors for unsupported dtypes.
op_db's fft entries run through tests/test_opinfo.py (MLU_OPINFO=full).
"""
import pytest
import torch

import torch_mlu  # noqa: F401  (registers mlu)

from conftest import run_python

REAL = [torch.float32, torch.float64]
COMPLEX = [torch.complex64, torch.complex128]


def signal(shape, dtype, seed=0):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def tol(dtype):
    single = dtype in (torch.float32, torch.complex64)
    return dict(rtol=1e-5, atol=1e-5) if single else dict(rtol=1e-12, atol=1e-12)


C2C = {
    "fft": lambda x: torch.fft.fft(x),
    "ifft_ortho": lambda x: torch.fft.ifft(x, norm="ortho"),
    "fft_n_padded": lambda x: torch.fft.fft(x, n=13, dim=1),
    "fft_n_cropped": lambda x: torch.fft.fft(x, n=4, dim=0),
    "fft2": lambda x: torch.fft.fft2(x, norm="forward"),
    "fftn_all": lambda x: torch.fft.fftn(x),
    "ifftn_dims": lambda x: torch.fft.ifftn(x, dim=(0, 2)),
    "hfft": lambda x: torch.fft.hfft(x),
    "hfft2": lambda x: torch.fft.hfft2(x, s=(6, 9)),
    "irfft": lambda x: torch.fft.irfft(x, norm="ortho"),
    "irfft_odd": lambda x: torch.fft.irfft(x, n=11),
    "irfft2": lambda x: torch.fft.irfft2(x),
    "irfftn": lambda x: torch.fft.irfftn(x, dim=(0, 1, 2)),
    "fftshift_fft": lambda x: torch.fft.fftshift(torch.fft.fft(x), dim=-1),
}
R2C = {
    "rfft": lambda x: torch.fft.rfft(x),
    "rfft_by_n": lambda x: torch.fft.rfft(x, norm="forward", dim=0),
    "rfft2": lambda x: torch.fft.rfft2(x),
    "rfftn": lambda x: torch.fft.rfftn(x, dim=(2, 0)),
    "ihfft": lambda x: torch.fft.ihfft(x),
    "ihfft2": lambda x: torch.fft.ihfft2(x),
    "fft_of_real": lambda x: torch.fft.fft(x),  # two-sided r2c: the conjugate-symmetry fill
    "fft2_of_real": lambda x: torch.fft.fft2(x, norm="ortho"),
    "fftn_of_real": lambda x: torch.fft.fftn(x, dim=(0, 1, 2)),
}


# Views taken on each device (moving a view to mlu would make it contiguous).
LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, 2),
    "strided": lambda x: x[:, ::2],
    "expanded": lambda x: x[:1].expand(3, *x.shape[1:]),
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(C2C))
def test_complex_input_transforms_match_the_cpu(native_oracle, name, dtype):
    for layout, view in LAYOUTS.items():
        native_oracle(lambda x: C2C[name](view(x)), signal((5, 8, 7), dtype), check_stride=True, msg=layout,
                      **tol(dtype))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("name", sorted(R2C))
def test_real_input_transforms_match_the_cpu(native_oracle, name, dtype):
    for layout, view in LAYOUTS.items():
        native_oracle(lambda x: R2C[name](view(x)), signal((5, 8, 7), dtype), check_stride=True, msg=layout,
                      **tol(dtype))


@pytest.mark.parametrize("primitive", ["c2c", "r2c", "r2c_twosided", "c2r"])
def test_out_forms_match_the_cpu(native_oracle, primitive):
    def run(device):
        out_dtype = torch.float32 if primitive == "c2r" else torch.complex64
        out = torch.empty(0, dtype=out_dtype, device=device)
        x = signal((4, 6, 10), torch.float32 if primitive.startswith("r2c") else torch.complex64).to(device)
        if primitive == "c2c":
            torch._fft_c2c(x, [1, 2], 1, True, out=out)
        elif primitive == "r2c":
            torch._fft_r2c(x, [2], 2, True, out=out)
        elif primitive == "r2c_twosided":
            torch._fft_r2c(x, [1, 2], 0, False, out=out)
        else:
            torch._fft_c2r(x, [1, 2], 2, 18, out=out)
        return out

    native_oracle(run, check_stride=True, rtol=1e-5, atol=1e-5)


def test_empty_batch_fails_and_size_one_signals_match_as_on_the_cpu(native_oracle):
    x = signal((0, 8), torch.float32)
    with pytest.raises(RuntimeError) as cpu:
        torch.fft.rfft(x)
    with pytest.raises(RuntimeError) as mlu:
        torch.fft.rfft(x.to("mlu"))
    assert str(mlu.value).startswith(str(cpu.value).split("\n")[0])  # MKL's own error, on both
    native_oracle(torch.fft.fft, signal((3, 1), torch.complex64), check_stride=True)
    native_oracle(lambda x: torch.fft.irfft(x, n=1), signal((3, 1), torch.complex64), check_stride=True)


def test_batch_split_over_the_cores_with_a_short_last_part(native_oracle):
    # 1000 transforms of 64 points: several parts, and 1000 is no multiple of the part count.
    x = signal((1000, 64), torch.float64)
    native_oracle(torch.fft.rfft, x, check_stride=True, **tol(torch.float64))
    native_oracle(torch.fft.fft, x.to(torch.complex128), check_stride=True, **tol(torch.float64))


def test_speech_front_end_is_native(native_oracle):
    audio = signal((2, 16000), torch.float32)
    window = torch.hann_window(400)
    native_oracle(lambda a, w: torch.stft(a, 400, 160, window=w, return_complex=True), audio, window,
                  check_stride=True, rtol=1e-4, atol=1e-4)
    spec = torch.stft(audio, 400, 160, window=window, return_complex=True)
    native_oracle(lambda s, w: torch.istft(s, 400, 160, window=w, length=16000), spec, window,
                  rtol=1e-4, atol=1e-4)
    native_oracle(lambda a, w: torch.stft(a, 400, 160, window=w, return_complex=True).abs().pow(2), audio, window,
                  rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["rfft", "fft_of_real", "irfft", "fft2"])
def test_gradients_match_the_cpu(name):
    fn = {**C2C, **R2C}[name]
    dtype = torch.float64 if name in R2C else torch.complex128
    x = signal((3, 6, 5), dtype)
    weight = signal(fn(x).shape, fn(x).dtype, seed=3)

    def grad(device):
        leaf = x.to(device).requires_grad_()
        (fn(leaf) * weight.to(device)).real.sum().backward() if fn(x).is_complex() else \
            (fn(leaf) * weight.to(device)).sum().backward()
        return leaf.grad

    torch.testing.assert_close(grad("mlu").cpu(), grad("cpu"), **tol(dtype))


def test_plan_cache_counts_caps_and_clears():
    cache = torch.backends.mlu.cnfft_plan_cache
    assert cache is torch.backends.mlu.cnfft_plan_cache and cache[0] is cache["mlu:0"]
    cache.clear()
    assert cache.size == 0 and cache.max_size == 4096
    x = signal((4, 32), torch.float32).to("mlu")
    torch.fft.rfft(x)
    torch.fft.rfft(x)  # the same layout: one plan
    assert cache.size == 1
    torch.fft.fft(x)
    torch.fft.rfft(x, n=40)
    assert cache[0].size == 3
    try:
        cache.max_size = 2  # shrinking evicts the least recently used
        assert cache.size == 2
        cache.max_size = 0  # no caching at all, results unchanged
        assert cache.size == 0
        torch.testing.assert_close(torch.fft.rfft(x).cpu(), torch.fft.rfft(x.cpu()))
        assert cache.size == 0
    finally:
        cache.max_size = 4096
    with pytest.raises(RuntimeError, match="read-only property"):
        cache.size = 3
    with pytest.raises(RuntimeError, match="must be non-negative, but got -1"):
        cache.max_size = -1
    with pytest.raises(RuntimeError, match=r"expected 0 <= device index < \d+, but got device with index 99"):
        cache[99]
    cache.clear()
    assert cache.size == 0


def test_clearing_the_cache_under_queued_transforms_keeps_them_right():
    x = signal((64, 4096), torch.float32)
    xm = x.to("mlu")
    torch.mlu._sleep(2_000_000)  # hold the queue so the transforms below are still pending
    results = [torch.fft.rfft(xm, norm=n) for n in ("backward", "ortho", "forward")]
    torch.backends.mlu.cnfft_plan_cache.clear()
    for got, n in zip(results, ("backward", "ortho", "forward")):
        torch.testing.assert_close(got.cpu(), torch.fft.rfft(x, norm=n), rtol=1e-4, atol=1e-4)


def test_integer_input_is_promoted_as_on_the_cpu(native_oracle):
    native_oracle(torch.fft.rfft, torch.arange(12).reshape(3, 4), check_stride=True)
    native_oracle(torch.fft.fft, torch.arange(12, dtype=torch.int32), check_stride=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_unsupported_dtypes_fail_as_on_the_cpu(dtype):
    x = torch.ones(8, dtype=dtype)
    with pytest.raises(RuntimeError) as cpu:
        torch.fft.rfft(x)
    with pytest.raises(RuntimeError) as mlu:
        torch.fft.rfft(x.to("mlu"))
    assert str(mlu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_out_on_another_device_is_refused():
    x = signal((4, 8), torch.complex64).to("mlu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch._fft_c2c(x, [1], 0, True, out=torch.empty(0, dtype=torch.complex64))


def test_preferred_linalg_library_is_accepted():
    backends = torch.backends.mlu
    assert backends.is_built()
    try:
        assert backends.preferred_linalg_library("magma") == torch._C._LinalgBackend.Magma
        assert backends.preferred_linalg_library() == torch._C._LinalgBackend.Magma
        assert backends.preferred_linalg_library(torch._C._LinalgBackend.Cusolver) == torch._C._LinalgBackend.Cusolver
        with pytest.raises(RuntimeError, match="Unknown input value. Choose from: default, cusolver, magma."):
            backends.preferred_linalg_library("lapack")
        with pytest.raises(RuntimeError, match="Unknown input value type."):
            backends.preferred_linalg_library(3)
    finally:
        backends.preferred_linalg_library("default")
    a = torch.eye(3, device="mlu") * 2
    torch.testing.assert_close(torch.linalg.inv(a).cpu(), torch.eye(3) / 2)


def test_fft_runs_without_the_fallback_in_a_fresh_process():
    out = run_python(
        "import torch, torch_mlu\n"
        "import torch.backends.mlu as b\n"
        "x = torch.randn(3, 16, device='mlu')\n"
        "y = torch.fft.irfft(torch.fft.rfft(x), n=16)\n"
        "assert torch.allclose(y.cpu(), x.cpu(), atol=1e-5)\n"
        "assert torch_mlu.fallback_report() == {}, torch_mlu.fallback_report()\n"
        "print('plans', b.cnfft_plan_cache.size)\n")
    assert out.returncode == 0, out.stderr
    assert "plans 2" in out.stdout
