"""F.interpolate runs natively on mlu (mlu_kernels/resample.h), forward and backward, and agrees with the CPU.

nearest / nearest-exact 1-3-D, linear / bilinear / bicubic / trilinear with align_corners both ways, sizes
and scale factors (up and down, recompute_scale_factor), channels_last kept, integer images for nearest,
16-bit inputs judged against float64 with the CPU's own error.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)

SHAPES = {1: (2, 3, 11), 2: (2, 3, 9, 7), 3: (2, 2, 5, 4, 6)}
MODES = [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 1), ("nearest-exact", 2),
         ("nearest-exact", 3), ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3)]
SIZES = [dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=0.6), dict(scale_factor=1.3,
         recompute_scale_factor=True), "size"]


def run(x, device, grad_seed=4, **kw):
    leaf = x.detach().clone().to(device).requires_grad_(x.is_floating_point())
    out = F.interpolate(leaf, **kw)
    if not x.is_floating_point():
        return out, None
    torch.manual_seed(grad_seed)
    out.backward(torch.randn(out.shape).to(out.dtype).to(device))
    return out, leaf.grad


@pytest.mark.parametrize("how", SIZES, ids=str)
@pytest.mark.parametrize("mode,dims", MODES, ids=str)
def test_matches_cpu(mode, dims, how, native_oracle):
    torch.manual_seed(0)
    x = torch.randn(SHAPES[dims])
    kw = dict(mode=mode)
    if how == "size":
        kw["size"] = tuple(s + 3 for s in x.shape[2:])
    else:
        kw.update(how)
    for align in ([False, True] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]):
        if align is not None:
            kw["align_corners"] = align
        native_oracle(lambda device: run(x, device, **kw), check_stride=True, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_channels_last_and_uint8(mode, native_oracle):
    x = torch.randn(2, 3, 6, 5).to(memory_format=torch.channels_last)
    kw = dict(scale_factor=2, mode=mode)
    expected, actual = F.interpolate(x, **kw), F.interpolate(x.to("mlu"), **kw)
    assert actual.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(
        memory_format=torch.channels_last)
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-5, atol=1e-5)
    if mode == "nearest":
        img = torch.randint(0, 256, (1, 3, 5, 4), dtype=torch.uint8)
        native_oracle(lambda t: F.interpolate(t, scale_factor=3), img, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mode,dims", [("bilinear", 2), ("bicubic", 2), ("trilinear", 3)], ids=str)
def test_16_bit_at_most_the_cpus_error(mode, dims, dtype):
    torch.manual_seed(1)
    x = torch.randn(SHAPES[dims]).to(dtype)
    kw = dict(scale_factor=1.7, mode=mode, align_corners=False)
    ref = run(x.double(), "cpu", **kw)
    cpu = run(x, "cpu", **kw)
    mlu = run(x, "mlu", **kw)
    eps = torch.finfo(dtype).eps
    for m, c, r in zip(mlu, cpu, ref):
        cpu_err = (c.double() - r).abs().max().item()
        err = (m.cpu().double() - r).abs().max().item()
        assert err <= cpu_err + 2 * eps * r.abs().max().item(), (err, cpu_err)


def test_errors_match_cpu():
    x = torch.randn(1, 1, 4, 4)
    for kw in (dict(size=(2, 2, 2), mode="bilinear"), dict(scale_factor=-1.0, mode="nearest")):
        with pytest.raises(Exception) as cpu_error:
            F.interpolate(x, **kw)
        with pytest.raises(type(cpu_error.value)):
            F.interpolate(x.to("mlu"), **kw)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_16bit_weights_are_kept_where_the_cpu_keeps_them(dtype):
    """Note [Interpolation weights in 16 bits]: the CPU's generic kernel rounds the linear / cubic weights to the
    input's dtype, its channels-last kernel does not (bilinear on small outputs, channels-last inputs of more than 3
    channels). mlu follows the same choice, so the results are the CPU's but for last-bit flips where a float weight
    sits on a 16-bit rounding boundary (the CPU's compiler fuses its cubic weight arithmetic into FMAs: up to ~2% of
    float16 bicubic outputs); the wrong choice differs in about half of them."""
    g = torch.Generator().manual_seed(0)
    cases = [((2, 3, 12, 9), "bicubic", dict(scale_factor=1.7)), ((2, 3, 12), "linear", dict(size=23)),
             ((2, 3, 5, 6, 7), "trilinear", dict(scale_factor=1.7)), ((1, 5, 4, 5, 6), "trilinear", dict(size=(7, 9, 11))),
             ((2, 3, 150, 150), "bilinear", dict(size=(90, 90))), ((2, 3, 40, 40), "bilinear", dict(size=(23, 17))),
             ((1, 5, 100, 100), "bilinear", dict(size=(181, 181)))]
    for shape, mode, size in cases:
        x = torch.randn(shape, generator=g).to(dtype)
        views = [x]
        if x.dim() == 4:
            views.append(x.contiguous(memory_format=torch.channels_last))
        for view in views:
            for align_corners in (False, True):
                expected = F.interpolate(view, mode=mode, align_corners=align_corners, **size)
                got = F.interpolate(view.to("mlu"), mode=mode, align_corners=align_corners, **size).cpu()
                differing = int((got != expected).sum())
                assert differing <= max(2, expected.numel() // 40), (shape, mode, align_corners, differing)
                # A weight one ulp apart moves an output by up to about that ulp times the input's magnitude.
                torch.testing.assert_close(got, expected, rtol=0, atol=8 * torch.finfo(dtype).eps)
