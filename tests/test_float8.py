"""float8 on mlu: the four 8-bit float dtypes as device dtypes, and torch._scaled_mm.

The dtypes are storage types (Note [Storage-only types] in kernels/src/common/dispatch.h): created, filled,
copied, converted to and from every dtype natively with the CPU's rounding, saturation and NaNs (compared byte
for byte), and every other op does on mlu what it does on the CPU (the same bytes, or the same error: most
arithmetic is refused by the CPU too). _scaled_mm / _scaled_mm_v2 are native (Note [float8 products] in
csrc/aten/ops/ScaledMMOps.cpp) and equal the CPU's emulated path, checked with oneDNN off (an AMX host takes
oneDNN otherwise), in every scaling, bias, out_dtype and scale_result combination, then on a non-current
device, in a graph, compiled, and under autocast.
"""
import warnings

import pytest
import torch

import torch_mlu

FP8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]
OTHERS = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def name(dtype):
    return str(dtype).removeprefix("torch.")


def raw(t):
    """t's bytes, for comparisons that see NaN payloads and -0."""
    t = t.detach().cpu().contiguous()
    if t.is_complex():
        t = torch.view_as_real(t).contiguous()
    return t.view(torch.uint8) if t.dtype != torch.bool else t.to(torch.uint8)


def assert_same_bytes(got, want, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    g, w = raw(got), raw(want)
    bad = (g != w).reshape(-1).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.numel()} bytes differ, first at byte {bad[0].item()}"


def codes(dtype):
    """All 256 values of a float8 dtype."""
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)


def float32_patterns():
    """Every float32 high half with low halves at the rounding boundaries of both mantissa widths."""
    high = torch.arange(1 << 16, dtype=torch.int64) << 16
    low = torch.tensor([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x0800, 0x1801], dtype=torch.int64)
    bits = (high[:, None] | low[None, :]).reshape(-1)
    return bits.to(torch.int32).view(torch.float32)  # int64 -> int32 wraps the top bit into the sign


# ---- conversions --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FP8, ids=name)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "flipped", "single"])
def test_float32_to_float8_rounds_as_the_cpu(dtype, layout):
    x = float32_patterns()
    views = {"contiguous": lambda t: t, "strided": lambda t: t[::3], "flipped": lambda t: t.flip(0),
             "single": lambda t: t[12345:12346]}
    view = views[layout]
    got = view(x.to("mlu")).to(dtype)
    assert got.device.type == "mlu"
    assert_same_bytes(got, view(x).to(dtype), f"float32 -> {name(dtype)} ({layout})")


@pytest.mark.parametrize("source", FP8, ids=name)
@pytest.mark.parametrize("target", OTHERS + FP8, ids=name)
def test_every_float8_value_converts_as_the_cpu(source, target):
    """All 256 codes (NaNs and infinities included) to every dtype, in a long and a one-element run."""
    x = codes(source)
    if not target.is_floating_point and not target.is_complex and target != torch.bool:
        finite = x.float().isfinite()  # a NaN or infinity to an integer is undefined in C++ and in PyTorch
        x = x[finite & (x.float().abs() < 2**31)]
    if target == source:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> float8 warns that it drops the imaginary part
        torch_mlu.reset_fallback_report()
        got = x.to("mlu").to(target)
        assert torch_mlu.fallback_report() == {}
        assert_same_bytes(got, x.to(target), f"{name(source)} -> {name(target)}")
        for i in (0, 0x7F, 0x80, 0xFF):
            if i < x.numel():
                assert_same_bytes(x[i:i + 1].to("mlu").to(target), x[i:i + 1].to(target), f"element {i}")


@pytest.mark.parametrize("target", FP8, ids=name)
@pytest.mark.parametrize("source", OTHERS, ids=name)
def test_every_dtype_converts_to_float8_as_the_cpu(source, target):
    torch.manual_seed(0)
    if source in (torch.float16, torch.bfloat16):
        x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(source)  # every pattern
    elif source == torch.float32:
        x = float32_patterns()[::5]  # the exhaustive patterns are test_float32_to_float8_rounds_as_the_cpu's
    elif source == torch.float64:
        # Rounded through float32 first, as the CPU does: 1.0625 + 2^-30 lands on a tie, then goes to even.
        special = torch.tensor([1.0625 + 2**-30, 1.125 + 2**-30, 1e300, -1e300, 2**-1000, float("nan"), 479.99999,
                                -0.0], dtype=torch.float64)
        x = torch.cat([special, torch.randn(4096, dtype=torch.float64) * 100])
    elif source == torch.bool:
        x = torch.tensor([True, False, True])
    elif source.is_complex:
        x = torch.randn(1024, dtype=source) * 50
    else:
        info = torch.iinfo(source)
        x = torch.cat([torch.tensor([info.min, info.max, 0, 1, -1 if info.min < 0 else 2]).to(source),
                       torch.randint(info.min, info.max, (4096,), dtype=torch.int64).to(source)])
        if source == torch.int64:
            x = torch.cat([x, torch.tensor([2**24 + 1, 2**40 + 2**36 + 1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_bytes(x.to("mlu").to(target), x.to(target), f"{name(source)} -> {name(target)}")
        assert_same_bytes(x[::2].to("mlu").to(target), x[::2].to(target), "strided")


def test_float_nans_keep_their_payload_into_float16_at_any_length():
    """A float32 NaN's payload survives into float16 as on the CPU (F16C), also for the one-element tail."""
    nans = torch.tensor([0x7FF00000, 0xFFA02000 - 2**32, 0x7F800001, 0x7FC00000], dtype=torch.int32)
    x = nans.view(torch.float32)
    for n in (1, 3, 64):
        t = x.repeat(n)[:n] if n < 4 else x.repeat(16)
        assert_same_bytes(t.to("mlu").half(), t.half(), f"{n} NaNs")
    e4 = codes(torch.float8_e4m3fn)[0x7F:0x80]  # its NaN is 0x7FF00000 as a float
    assert_same_bytes(e4.to("mlu").half(), e4.half())


@pytest.mark.parametrize("dtype", FP8, ids=name)
def test_creation_and_filling_convert_the_scalar_as_the_cpu(dtype):
    for value in (0.0, 1.5, -3.25, 240.0, 2**-9, 7, 200):
        assert_same_bytes(torch.full((5,), value, dtype=dtype, device="mlu"), torch.full((5,), value, dtype=dtype))
    for make in (torch.zeros, torch.ones, torch.empty):
        assert make(3, 2, dtype=dtype, device="mlu").dtype == dtype
    assert_same_bytes(torch.eye(4, dtype=dtype, device="mlu"), torch.eye(4, dtype=dtype))
    t = torch.ones(4, 4, dtype=dtype, device="mlu")[:, 1]
    t.fill_(-2.0)  # a strided fill
    assert_same_bytes(t, torch.full((4,), -2.0, dtype=dtype))
    overflowed = 0
    for value in (300.0, 1000.0, 1e6, 100000, float("inf"), -float("inf")):
        try:
            want = torch.empty(2, dtype=dtype).fill_(value)
        except RuntimeError as e:  # c10's overflow check on the Scalar, done on the host for mlu too
            overflowed += 1
            with pytest.raises(RuntimeError, match="without overflow") as got:
                torch.empty(2, dtype=dtype, device="mlu").fill_(value)
            assert str(got.value) == str(e)
            continue
        assert_same_bytes(torch.empty(2, dtype=dtype, device="mlu").fill_(value), want, f"fill_({value})")
    assert overflowed >= 2  # every format refuses some of these (e5m2: 1e6 and 100000; its infinities fit)
    assert (torch.ones(2, dtype=dtype, device="mlu").float().sum().item()) == 2


# ---- every other op: the CPU's result or the CPU's refusal ----------------------------------------------------


def table_ops():
    def idx(d, *v):
        return torch.tensor(v, device=d)

    return {
        "clone": lambda a, d: a.clone(),
        "contiguous_t": lambda a, d: a.t().contiguous(),
        "cat": lambda a, d: torch.cat([a, a[:1]]),
        "stack": lambda a, d: torch.stack([a, a]),
        "flip": lambda a, d: a.flip(0),
        "flip_t": lambda a, d: a.t().flip(1).contiguous(),
        "roll": lambda a, d: a.roll(1, 0),
        "repeat": lambda a, d: a.repeat(2, 1),
        "repeat_interleave": lambda a, d: a.repeat_interleave(2, 0),
        "expand": lambda a, d: a[:1].expand(4, 4).contiguous(),
        "unfold": lambda a, d: a.unfold(0, 2, 1).contiguous(),
        "diag": lambda a, d: a.diag(),
        "pad": lambda a, d: torch.nn.functional.pad(a, (1, 1)),
        "as_strided": lambda a, d: a.as_strided((2, 2), (1, 4)).contiguous(),
        "view_uint8": lambda a, d: a.view(torch.uint8).clone(),
        "index_select": lambda a, d: a.index_select(0, idx(d, 0, 2)),
        "index": lambda a, d: a[idx(d, 3, 0)],
        "bool_mask": lambda a, d: a[idx(d, True, False, True, False)],
        "masked_select": lambda a, d: a.masked_select(a.float() > 0),
        "setitem": lambda a, d: (a.__setitem__(idx(d, 0), a[1].clone()), a)[1],
        "setitem_scalar": lambda a, d: (a.__setitem__(0, 1.0), a)[1],
        "index_put_accumulate": lambda a, d: a.index_put_((idx(d, 0),), a[1].clone(), accumulate=True),
        "where": lambda a, d: torch.where(a.float() > 0, a, a.flip(0)),
        "eq": lambda a, d: a == a.flip(0),
        "ne_scalar": lambda a, d: a != 0.5,
        "isnan": lambda a, d: a.isnan(),
        "isinf": lambda a, d: a.isinf(),
        "any": lambda a, d: a.any(),
        "mul": lambda a, d: a * a,
        "abs": lambda a, d: a.abs(),
        "mm": lambda a, d: a @ a,
        "linear": lambda a, d: torch.nn.functional.linear(a, a),
        "item": lambda a, d: a[0, 1].item(),
        "copy_from_float": lambda a, d: a.copy_(torch.full((4, 4), 500.0, device=d)),
        "copy_to_double": lambda a, d: torch.empty(4, 4, dtype=torch.float64, device=d).copy_(a.t()),
        "resize_": lambda a, d: a.clone().resize_(20)[:16],
        # The CPU refuses these (its own error on mlu too, through the fallback).
        "add": lambda a, d: a + a,
        "neg": lambda a, d: -a,
        "sum": lambda a, d: a.sum(),
        "max": lambda a, d: a.max(),
        "lt": lambda a, d: a < a,
        "sort": lambda a, d: a.sort(),
        "masked_fill": lambda a, d: a.masked_fill(a.float() > 0, 1.0),
        "gather": lambda a, d: a.gather(0, torch.zeros(4, 4, dtype=torch.long, device=d)),
        "bmm": lambda a, d: torch.bmm(a[None], a[None]),
        "softmax": lambda a, d: a.softmax(-1),
        "clamp": lambda a, d: a.clamp(-1, 1),
        "arange": lambda a, d: torch.arange(4, dtype=a.dtype, device=d),
        "linspace": lambda a, d: torch.linspace(0, 1, 4, dtype=a.dtype, device=d),
        "add_float32": lambda a, d: a + torch.ones(4, 4, device=d),
        "mm_float32": lambda a, d: a @ torch.ones(4, 4, device=d),
        # The CPU refuses these; mlu gives the message of its own kernel (the same exception type).
        "uniform_": lambda a, d: a.uniform_(),
        "normal_": lambda a, d: a.normal_(),
        "index_fill": lambda a, d: a.index_fill(0, idx(d, 0), 2.0),
    }


OWN_MESSAGE = {"uniform_", "normal_", "index_fill"}


@pytest.mark.parametrize("dtype", FP8, ids=name)
@pytest.mark.parametrize("op", list(table_ops()))
def test_ops_do_what_they_do_on_the_cpu(dtype, op):
    fn = table_ops()[op]
    made = (torch.arange(16, dtype=torch.float32).reshape(4, 4) / 4 - 1.3).to(dtype)

    def run(device):
        try:
            return "ok", fn(made.clone().to(device), device)
        except Exception as e:  # noqa: BLE001: the exception itself is the result compared
            return "error", e

    want_kind, want = run("cpu")
    got_kind, got = run("mlu")
    assert got_kind == want_kind, f"mlu: {got!r}; CPU: {want!r}"
    if want_kind == "error":
        assert type(got) is type(want)
        if op not in OWN_MESSAGE:
            assert str(got).splitlines()[0] == str(want).splitlines()[0]
        else:
            assert name(dtype).capitalize().replace("Float8_", "Float8_") in str(got) or "float8" in str(got).lower()
        assert (torch.ones(2, dtype=dtype, device="mlu").float().sum().item()) == 2  # the device keeps working
        return
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if isinstance(w, torch.Tensor):
            assert g.device.type == "mlu"
            assert_same_bytes(g, w, op)
        else:
            assert g == w or (g != g and w != w)


def test_equal_and_count_nonzero_answer_where_the_cpu_refuses():
    """mlu's equal and count_nonzero are generic (eq / ne and a reduction), so float8 gets an answer; the CPU's
    dedicated kernels have no float8 case. The answers are those of the same ops in float32."""
    a = (torch.arange(16.0).reshape(4, 4) / 4 - 1).to(torch.float8_e4m3fn)
    with pytest.raises(NotImplementedError):
        torch.equal(a, a)
    m = a.to("mlu")
    assert torch.equal(m, m) and not torch.equal(m, m.flip(0))
    assert m.count_nonzero().item() == a.float().count_nonzero().item()


# ---- _scaled_mm ---------------------------------------------------------------------------------------------


def cpu_emulated(fn, *args, **kwargs):
    """The CPU's emulated _scaled_mm (what mlu mirrors): oneDNN off, which non-AMX hosts never use."""
    with torch.backends.mkldnn.flags(enabled=False):
        return fn(*args, **kwargs)


def operands(m, k, n, dtype_a, dtype_b, scaling, seed=0):
    torch.manual_seed(seed)
    a = (torch.randn(m, k) * 4).to(dtype_a)
    b = (torch.randn(n, k) * 4).to(dtype_b).t()  # column-major, as CUDA's kernels want it
    if scaling == "tensor":
        sa, sb = torch.tensor(0.37), torch.tensor(1.9)
    else:
        sa, sb = torch.rand(m, 1) + 0.25, torch.rand(1, n) + 0.25
    return a, b, sa, sb


def to_mlu(*ts, device="mlu"):
    return [t.to(device) if isinstance(t, torch.Tensor) else t for t in ts]


PAIRS = [(torch.float8_e4m3fn, torch.float8_e4m3fn), (torch.float8_e4m3fn, torch.float8_e5m2),
         (torch.float8_e5m2, torch.float8_e5m2), (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)]
OUT_DTYPES = [None, torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{name(p[0])}x{name(p[1])}")
@pytest.mark.parametrize("scaling", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", OUT_DTYPES, ids=lambda d: name(d) if d else "default")
@pytest.mark.parametrize("bias", [None, torch.float32, torch.bfloat16], ids=lambda d: name(d) if d else "nobias")
def test_scaled_mm_is_the_cpus_emulated_product(pair, scaling, out_dtype, bias):
    a, b, sa, sb = operands(13, 40, 9, *pair, scaling)
    bias_t = None if bias is None else torch.randn(9).to(bias)
    scale_result = torch.tensor(0.5) if out_dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else None
    want = cpu_emulated(torch._scaled_mm, a, b, sa, sb, bias=bias_t, scale_result=scale_result, out_dtype=out_dtype)
    torch_mlu.reset_fallback_report()
    got = torch._scaled_mm(*to_mlu(a, b, sa, sb), bias=None if bias_t is None else bias_t.to("mlu"),
                           scale_result=None if scale_result is None else scale_result.to("mlu"),
                           out_dtype=out_dtype)
    assert torch_mlu.fallback_report() == {}
    assert got.device.type == "mlu"
    # The same products and roundings; the sums in the order of each side's float32 GEMM, which is the same
    # order at these shapes on the Xeon (bit for bit there) and not on every host (AMD EPYC: float32 sums an ulp
    # apart, which a float16 or bfloat16 output rounds to the same value or one ulp apart).
    close = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=1e-3, atol=1e-5)}
    if got.dtype in close:
        torch.testing.assert_close(got.cpu(), want, **close[got.dtype])
    else:
        assert_same_bytes(got, want, "small shapes: mlu's float32 GEMM sums as the CPU's")


@pytest.mark.parametrize("scaling", ["tensor", "row"])
def test_scaled_mm_at_a_model_size_is_close_to_the_cpu(scaling):
    a, b, sa, sb = operands(64, 1024, 96, torch.float8_e4m3fn, torch.float8_e4m3fn, scaling, seed=3)
    want = cpu_emulated(torch._scaled_mm, a, b, sa, sb, out_dtype=torch.float32)
    got = torch._scaled_mm(*to_mlu(a, b, sa, sb), out_dtype=torch.float32)
    # Sums of 1024 products in another order.
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-3)


def test_scaled_mm_out_and_v2_match_the_cpu():
    a, b, sa, sb = operands(8, 32, 16, torch.float8_e4m3fn, torch.float8_e5m2, "row")
    out = torch.empty(8, 16, dtype=torch.bfloat16, device="mlu")
    r = torch._scaled_mm(*to_mlu(a, b, sa, sb), out_dtype=torch.bfloat16, out=out)
    assert r.data_ptr() == out.data_ptr()
    assert_same_bytes(out, cpu_emulated(torch._scaled_mm, a, b, sa, sb, out_dtype=torch.bfloat16))
    for recipe, (ra, rb) in {0: (torch.tensor([0.5]), torch.tensor([2.0])), 1: (sa, sb)}.items():
        args = (a, b, [ra], [recipe], [0], [rb], [recipe], [0], torch.randn(16), torch.bfloat16)
        want = torch.ops.aten._scaled_mm_v2(*args)
        got = torch.ops.aten._scaled_mm_v2(*[[t.to("mlu") for t in x] if isinstance(x, list) and x and
                                             isinstance(x[0], torch.Tensor) else x for x in to_mlu(*args)])
        assert_same_bytes(got, want, f"v2 recipe {recipe}")
    # Empty products: M = 0 gives an empty result, K = 0 zeros.
    z = torch.ops.aten._scaled_mm_v2(*to_mlu(a[:, :0], b[:0]), [sa.to("mlu")], [1], [0], [sb.to("mlu")], [1], [0],
                                     None, torch.float32)
    assert z.shape == (8, 16) and z.abs().sum().item() == 0


def bad_scaled_mm_calls():
    """Each case: device -> (op, args, kwargs), its tensors made on the device (a strided scale stays strided)."""
    e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
    a, b, sa, sb = operands(8, 32, 16, e4, e4, "tensor")
    _, _, ra, rb = operands(8, 32, 16, e4, e4, "row")
    mm, v2 = torch._scaled_mm, torch.ops.aten._scaled_mm_v2
    return {
        "3-D a": lambda d: (mm, (a[None].to(d), b.to(d), sa.to(d), sb.to(d)), {}),
        "3-D b": lambda d: (mm, (a.to(d), b[None].to(d), sa.to(d), sb.to(d)), {}),
        "K mismatch": lambda d: (mm, (a[:, :16].to(d), b.to(d), sa.to(d), sb.to(d)), {}),
        "bfloat16 a": lambda d: (mm, (a.bfloat16().to(d), b.to(d), sa.to(d), sb.to(d)), {}),
        "float64 scale": lambda d: (mm, (a.to(d), b.to(d), sa.double().to(d), sb.to(d)), {}),
        "mixed scalings": lambda d: (mm, (a.to(d), b.to(d), sa.to(d), rb.to(d)), {}),
        "row scale strided": lambda d: (mm, (a.to(d), b.to(d), torch.rand(8, 2).to(d)[:, :1], rb.to(d)), {}),
        "row scale short": lambda d: (mm, (a.to(d), b.to(d), ra[:4].to(d), rb.to(d)), {}),
        "bias size": lambda d: (mm, (a.to(d), b.to(d), sa.to(d), sb.to(d)), {"bias": torch.randn(15).to(d)}),
        "out dtype": lambda d: (mm, (a.to(d), b.to(d), sa.to(d), sb.to(d)),
                                {"out_dtype": torch.float32, "out": torch.empty(8, 16, dtype=torch.bfloat16).to(d)}),
        "scale_result": lambda d: (mm, (a.to(d), b.to(d), sa.to(d), sb.to(d)),
                                   {"scale_result": torch.ones(2).to(d), "out_dtype": e5}),
        "v2 swizzle": lambda d: (v2, (a.to(d), b.to(d), [sa.to(d)], [0], [1], [sb.to(d)], [0], [0], None, None), {}),
        "v2 blockwise": lambda d: (v2, (a.to(d), b.to(d), [sa.to(d)], [2], [0], [sb.to(d)], [2], [0], None, None), {}),
        "v2 bias dtype": lambda d: (v2, (a.to(d), b.to(d), [sa.to(d)], [0], [0], [sb.to(d)], [0], [0],
                                         torch.randn(16).double().to(d), None), {}),
        "v2 3-D a": lambda d: (v2, (a[None].to(d), b.to(d), [sa.to(d)], [0], [0], [sb.to(d)], [0], [0], None, None),
                               {}),
    }


@pytest.mark.parametrize("case", list(bad_scaled_mm_calls()))
def test_scaled_mm_bad_input_is_the_cpus_error_and_the_device_keeps_working(case):
    make = bad_scaled_mm_calls()[case]
    fn, args, kwargs = make("cpu")
    with pytest.raises(Exception) as want:
        cpu_emulated(fn, *args, **kwargs)
    fn, args, kwargs = make("mlu")
    with pytest.raises(Exception) as got:
        fn(*args, **kwargs)
        torch.mlu.synchronize()
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8


# ---- with the other features --------------------------------------------------------------------------------


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")
def test_conversions_and_products_on_a_non_current_device_with_the_other_busy():
    torch.mlu.set_device(0)
    big = torch.randn(1024, 1024, device="mlu:0")
    for _ in range(4):
        big = big @ big / 32  # queued work on mlu:0 while mlu:1 runs
    a, b, sa, sb = operands(16, 64, 24, torch.float8_e4m3fn, torch.float8_e5m2, "row")
    x = float32_patterns()[::7]
    on = x.to("mlu:1").to(torch.float8_e4m3fn)
    got = torch._scaled_mm(*to_mlu(a, b, sa, sb, device="mlu:1"), out_dtype=torch.float32)
    assert torch.mlu.current_device() == 0 and got.device == torch.device("mlu:1")
    assert_same_bytes(on, x.to(torch.float8_e4m3fn))
    assert_same_bytes(got, cpu_emulated(torch._scaled_mm, a, b, sa, sb, out_dtype=torch.float32))
    with pytest.raises(RuntimeError, match="same device"):
        torch._scaled_mm(*to_mlu(a, b, sa, device="mlu:1"), sb.to("mlu:0"))


def test_scaled_mm_and_conversions_replay_in_a_graph_with_new_scales():
    a, b, sa, sb = [t.to("mlu") for t in operands(16, 64, 24, torch.float8_e4m3fn, torch.float8_e4m3fn, "tensor")]
    x = torch.randn(16, 64, device="mlu")

    def step():
        q = (x * 8).to(torch.float8_e4m3fn)  # a dynamic quantisation, then the product
        return torch._scaled_mm(q, b, sa, sb, out_dtype=torch.bfloat16)

    step()  # warm-up: the pool holds the buffers the capture allocates
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        out = step()
    for seed in range(2):
        torch.manual_seed(seed)
        x.copy_(torch.randn(16, 64))
        sa.fill_(0.25 + seed)
        g.replay()
        want = cpu_emulated(torch._scaled_mm, (x.cpu() * 8).to(torch.float8_e4m3fn), b.cpu(), sa.cpu(), sb.cpu(),
                            out_dtype=torch.bfloat16)
        assert_same_bytes(out, want, f"replay {seed}")


def test_compiled_float8_layer_matches_eager_and_stays_native():
    a, b, sa, sb = [t.to("mlu") for t in operands(16, 64, 24, torch.float8_e4m3fn, torch.float8_e4m3fn, "row")]

    def layer(x, w, sx, sw):
        q = x.to(torch.float8_e4m3fn)
        y = torch._scaled_mm(q, w, sx, sw, out_dtype=torch.bfloat16)
        return torch.relu(y).float() * 2

    x = a.float()
    eager = layer(x, b, sa, sb)
    compiled = torch.compile(layer, dynamic=False)
    torch_mlu.reset_fallback_report()
    got = compiled(x, b, sa, sb)
    assert torch_mlu.fallback_report() == {}
    assert_same_bytes(got, eager)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=name)
def test_autocast_casts_float8_as_the_cpu_does_and_leaves_scaled_mm_alone(dtype):
    """Autocast treats float8 as floating (ATen's is_autocast_eligible), on the CPU and on mlu: mm of float8
    operands runs in the autocast dtype; _scaled_mm is on no autocast list, so its dtypes are the caller's."""
    a, b, sa, sb = operands(8, 32, 16, torch.float8_e4m3fn, torch.float8_e4m3fn, "tensor")
    with torch.autocast("cpu", dtype=dtype):
        want = torch.mm(a, b)
        want_scaled = cpu_emulated(torch._scaled_mm, a, b, sa, sb, out_dtype=torch.float32)
    with torch.autocast("mlu", dtype=dtype):
        got = torch.mm(*to_mlu(a, b))
        got_scaled = torch._scaled_mm(*to_mlu(a, b, sa, sb), out_dtype=torch.float32)
    assert got.dtype == want.dtype == dtype
    torch.testing.assert_close(got.cpu(), want)
    assert got_scaled.dtype == torch.float32
    assert_same_bytes(got_scaled, want_scaled)


# ---- _scaled_grouped_mm (no CPU kernel: CUDA's contract, against float64) -----------------------------------


def grouped_case(layout, groups=3, m=12, k=32, n=8, seed=0):
    """Operands of one layout (Note [Scaled grouped products]), and the float64 reference output."""
    torch.manual_seed(seed)
    e4 = torch.float8_e4m3fn
    offs = torch.tensor([4, 9, 12] if layout in ("2d3d",) else [3, 5, 8] if layout == "3d2d" else [8, 20, 32],
                        dtype=torch.int32)[:groups]
    if layout == "2d3d":
        a = (torch.randn(m, k) * 3).to(e4)
        b = (torch.randn(groups, n, k) * 3).to(e4).transpose(-2, -1)
        sa, sb = torch.rand(m) + 0.5, torch.rand(groups, n) + 0.5
        rows, start = [], 0
        for g, end in enumerate(offs.tolist()):
            rows.append((a[start:end].double() * sa[start:end, None].double()) @ (b[g].double() * sb[g].double()))
            start = end
        want = torch.cat(rows)
    elif layout == "3d2d":
        a = (torch.randn(groups, m, k) * 3).to(e4)
        b = (torch.randn(n, k) * 3).to(e4).t()
        sa, sb = torch.rand(groups, m) + 0.5, torch.rand(n) + 0.5
        want = torch.zeros(m, n, dtype=torch.float64)
        start = 0
        for g, end in enumerate(offs.tolist()):
            want[:, start:end] = (a[g].double() * sa[g, :, None].double()) @ (b[:, start:end].double()
                                                                                * sb[start:end].double())
            start = end
    elif layout == "3d3d":
        offs = None
        a = (torch.randn(groups, m, k) * 3).to(e4)
        b = (torch.randn(groups, n, k) * 3).to(e4).transpose(-2, -1)
        sa, sb = torch.rand(groups, m) + 0.5, torch.rand(groups, n) + 0.5
        want = (a.double() * sa[..., None].double()) @ (b.double() * sb[:, None, :].double())
    else:  # 2d2d: offs split K; group g's scales are rows g of [G, M] and [G, N]
        a = (torch.randn(m, k) * 3).to(e4)
        b = (torch.randn(n, k) * 3).to(e4).t()
        sa, sb = torch.rand(groups * m) + 0.5, torch.rand(groups * n) + 0.5
        parts, start = [], 0
        for g, end in enumerate(offs.tolist()):
            parts.append((a[:, start:end].double() * sa.view(groups, m)[g, :, None].double())
                         @ (b[start:end].double() * sb.view(groups, n)[g].double()))
            start = end
        want = torch.stack(parts)
    return (a, b, sa, sb, offs), want.to(torch.bfloat16)


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "3d3d", "2d2d"])
def test_scaled_grouped_mm_matches_the_scaled_product_per_group(layout):
    args, want = grouped_case(layout)
    torch_mlu.reset_fallback_report()
    got = torch._scaled_grouped_mm(*[t.to("mlu") if t is not None else None for t in args], out_dtype=torch.bfloat16)
    assert torch_mlu.fallback_report() == {}
    assert got.dtype == torch.bfloat16 and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, rtol=1.6e-2, atol=1e-2)  # one rounding to bfloat16


def test_scaled_grouped_mm_refuses_what_cudas_refuses():
    (a, b, sa, sb, offs), _ = grouped_case("2d3d")
    on = [t.to("mlu") for t in (a, b, sa, sb, offs)]
    a, b, sa, sb, offs = on
    cases = [
        ((a.float(), b, sa, sb), dict(offs=offs), "Expected inputs of E4M3 FP8 type"),
        ((a, b.transpose(-2, -1).contiguous(), sa, sb), dict(offs=offs), "column major"),
        ((a, b, sa.double(), sb), dict(offs=offs), "scales must both be float32"),
        ((a, b, sa[:5], sb), dict(offs=offs), "Expected scale_a to have 12 elements"),
        ((a, b, sa, sb), dict(), "Offsets tensor not provided"),
        ((a, b, sa, sb), dict(offs=offs, out_dtype=torch.float32), "must be torch.bfloat16"),
    ]
    for args, kwargs, text in cases:
        with pytest.raises(RuntimeError, match=text):
            torch._scaled_grouped_mm(*args, **kwargs)
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8
