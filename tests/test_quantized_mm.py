"""The quantized matrix products of LLM inference run natively on mlu and agree with the CPU's kernels
(csrc/aten/ops/QuantizedOps.cpp, mlu_kernels/quantized_gemm.h).

Every op x dtype x row count (decode sizes and the prefill path past 32 rows), then the situations: a
non-current device, a busy stream on the other device, strided inputs, graph capture and replay, torch.compile,
weights packed on the CPU moved to mlu and back, the CPU packing for each vector width it has (the layout
follows the host's, Note [int4 packing follows the host CPU]), CUDA's tinygemm layout, and bad inputs (a clear
error, the device still working).
"""
import pytest
import torch
from torch.testing._internal.common_quantization import _group_quantize_tensor

import torch_mlu

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
ROWS = [1, 4, 7, 33]  # one row, a row tile, a tile and a remainder, the panel path


def tolerance(dtype, k):
    """Sums of k terms in float in another order, then one rounding to dtype."""
    if dtype == torch.float32:
        return dict(rtol=1e-5 * max(1, k / 64), atol=1e-5 * max(1, k / 64))
    return dict(rtol=1.6e-2 if dtype == torch.bfloat16 else 2e-3, atol=1e-2)


# ---- int8 weight-only ---------------------------------------------------------------------------------------


def int8_reference(x, w, scales):
    """x @ w^T * scales in float64, rounded once to x's dtype."""
    return (x.double() @ w.double().t() * scales.double()).to(x.dtype)


def run_natively(fn, *args):
    """fn on args moved to mlu, asserting no op took the CPU fallback; the results on the CPU."""
    torch_mlu.reset_fallback_report()
    out = fn(*[a.to("mlu") if isinstance(a, torch.Tensor) else a for a in args])
    assert torch_mlu.fallback_report() == {}
    assert out.device.type == "mlu"
    return out.cpu()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", ROWS)
def test_int8_weight_only_matches_the_dequantised_product(dtype, m):
    """Against float64, not the CPU's kernel: in torch 2.13 the CPU's bfloat16 _weight_int8pack_mm returns
    garbage (NaN, 1e12) or crashes once the same shape ran in another dtype in the process (the next test runs
    it one dtype per shape)."""
    torch.manual_seed(m)
    n, k = 72, 200
    x = torch.randn(m, k).to(dtype)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8)
    scales = (torch.rand(n) * 0.02).to(dtype)
    got = run_natively(torch._weight_int8pack_mm, x, w, scales)
    assert got.dtype == dtype and got.shape == (m, n)
    torch.testing.assert_close(got, int8_reference(x, w, scales), **tolerance(dtype, k))


def test_int8_weight_only_matches_the_cpus_kernel_in_one_dtype(python):
    """The CPU's kernel itself as the oracle, in a process that runs one dtype per shape."""
    result = python("""
        import torch, torch_mlu
        for n, dtype in [(40, torch.float32), (48, torch.float16), (56, torch.bfloat16)]:
            x, w = torch.randn(3, 160).to(dtype), torch.randint(-128, 128, (n, 160), dtype=torch.int8)
            s = (torch.rand(n) * 0.02).to(dtype)
            want = torch._weight_int8pack_mm(x, w, s)
            got = torch._weight_int8pack_mm(x.to("mlu"), w.to("mlu"), s.to("mlu")).cpu()
            tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else {}
            torch.testing.assert_close(got, want, **tol)
    """)
    assert result.returncode == 0, result.stderr[-3000:]


def test_int8_weight_only_takes_rows_with_a_stride():
    x = torch.randn(5, 96)[:, :64]  # rows 96 apart, unit columns: the CPU's accepted layout
    w, scales = torch.randint(-128, 128, (48, 64), dtype=torch.int8), torch.rand(48) * 0.02
    got = run_natively(torch._weight_int8pack_mm, x, w, scales)
    torch.testing.assert_close(got, int8_reference(x, w, scales), **tolerance(torch.float32, 64))


# ---- int4 weight-only, the CPU's packing --------------------------------------------------------------------


def int4_weight(n, k, group, dtype, seed=0):
    """Random 4-bit values [n, k] (int32) and scales-and-zeros [k / group, n, 2]."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=g)
    sz = torch.stack([torch.rand(k // group, n, generator=g) * 0.05 + 0.01,
                      torch.randn(k // group, n, generator=g) * 0.1], -1).to(dtype)
    return q, sz


@pytest.mark.parametrize("n", [16, 48, 64, 80, 192])
def test_int4_packing_gives_the_cpus_bytes(n):
    q, _ = int4_weight(n, 64, 32, torch.float32)
    packed = torch._convert_weight_to_int4pack_for_cpu(q.to("mlu"), 2)
    assert packed.device.type == "mlu" and packed.dtype == torch.uint8 and packed.shape == (n, 32)
    assert torch.equal(packed.cpu(), torch._convert_weight_to_int4pack_for_cpu(q, 2))


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_int4_packing_follows_the_cpus_vector_width(python, capability):
    """Where the CPU's ATen kernels run narrower, the CPU packs otherwise, and mlu with it."""
    result = python(f"""
        import torch, torch_mlu
        assert torch.backends.cpu.get_cpu_capability() == {capability.upper()!r}
        q = torch.randint(0, 16, (80, 64), dtype=torch.int32)
        cpu = torch._convert_weight_to_int4pack_for_cpu(q, 2)
        mlu = torch._convert_weight_to_int4pack_for_cpu(q.to("mlu"), 2)
        assert torch.equal(mlu.cpu(), cpu)
        x, sz = torch.randn(3, 64), torch.rand(2, 80, 2) * 0.1
        torch.testing.assert_close(torch._weight_int4pack_mm_for_cpu(x.to("mlu"), mlu, 32, sz.to("mlu")).cpu(),
                                   torch._weight_int4pack_mm_for_cpu(x, cpu, 32, sz), rtol=1e-5, atol=1e-5)
    """, env={"ATEN_CPU_CAPABILITY": capability})
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", ROWS)
@pytest.mark.parametrize("group", [32, 128])
def test_int4_weight_only_matches_cpu(native_oracle, dtype, m, group):
    n, k = 80, 256
    q, sz = int4_weight(n, k, group, dtype, seed=m)
    x = torch.randn(m, k).to(dtype)

    def product(x, q, sz):
        return torch._weight_int4pack_mm_for_cpu(x, torch._convert_weight_to_int4pack_for_cpu(q, 2), group, sz)

    native_oracle(product, x, q, sz, **tolerance(dtype, k))


def test_a_weight_packed_on_the_cpu_runs_on_mlu_and_back():
    q, sz = int4_weight(64, 128, 64, torch.bfloat16)
    x = torch.randn(2, 128).bfloat16()
    packed = torch._convert_weight_to_int4pack_for_cpu(q, 2)
    on_mlu = torch._weight_int4pack_mm_for_cpu(x.to("mlu"), packed.to("mlu"), 64, sz.to("mlu"))
    torch.testing.assert_close(on_mlu.cpu(), torch._weight_int4pack_mm_for_cpu(x, packed, 64, sz))
    packed_on_mlu = torch._convert_weight_to_int4pack_for_cpu(q.to("mlu"), 2)
    torch.testing.assert_close(torch._weight_int4pack_mm_for_cpu(x, packed_on_mlu.cpu(), 64, sz), on_mlu.cpu())


# ---- int4 weight-only, CUDA's tinygemm packing --------------------------------------------------------------


def tinygemm_pack_reference(w, inner_k_tiles):
    """CUDA's _convert_weight_to_int4pack layout (int4mm.cu, matrix_to_m16n8k16_Bint4_layout) from its input
    bytes [n, k/2] (even k in the high nibble): per 8-column tile, pair of 16-deep k tiles and lane t, column
    tile * 8 + t // 4; nibble s of the lane's word is k = kt0 * 16 + 2 (t % 4) + 8 (s % 4) + s // 4."""
    n, k = w.shape[0], w.shape[1] * 2
    q = torch.stack([w >> 4, w & 15], -1).reshape(n, k).long()
    tiles, k_tiles, words = n // 8, k // (inner_k_tiles * 16), inner_k_tiles // 2
    tile, ko, t, j, s = torch.meshgrid(*(torch.arange(v) for v in (tiles, k_tiles, 32, words, 8)), indexing="ij")
    kk = (ko * inner_k_tiles + 2 * j) * 16 + 2 * (t % 4) + 8 * (s % 4) + s // 4
    word = (q[tile * 8 + t // 4, kk] << (4 * s)).sum(-1)
    return (word - (word >= 2**31).long() * 2**32).to(torch.int32)


@pytest.mark.parametrize("inner_k_tiles", [2, 4, 8])
def test_tinygemm_packing_is_cudas(inner_k_tiles):
    w = torch.randint(0, 256, (24, 128), dtype=torch.uint8)
    packed = torch._convert_weight_to_int4pack(w.to("mlu"), inner_k_tiles)
    assert packed.shape == (3, 256 // (inner_k_tiles * 16), 32, inner_k_tiles // 2)
    assert torch.equal(packed.cpu(), tinygemm_pack_reference(w, inner_k_tiles))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [1, 33])
def test_tinygemm_product_matches_the_dequantised_weight(dtype, m):
    """PyTorch's own quantisation helper for non-CPU devices, then the product against x @ W_dequantised^T."""
    torch.manual_seed(m)
    n, k, group = 64, 256, 64
    w = torch.randn(k, n)  # [K, N], as the helper takes it
    q, sz = _group_quantize_tensor(w.to("mlu"), n_bit=4, q_group_size=group)
    packed = torch._convert_weight_to_int4pack(q, 4)
    x = torch.randn(m, k).to(dtype)
    got = torch._weight_int4pack_mm(x.to("mlu"), packed, group, sz.to(dtype))
    values = torch.stack([q.cpu() >> 4, q.cpu() & 15], -1).reshape(n, k).float()
    scale_zeros = sz.cpu().to(dtype).float()
    scale = scale_zeros[..., 0].t().repeat_interleave(group, 1)
    zero = scale_zeros[..., 1].t().repeat_interleave(group, 1)
    expected = (x.float() @ ((values - 8) * scale + zero).t()).to(dtype)
    assert got.dtype == dtype and got.shape == (m, n)
    torch.testing.assert_close(got.cpu(), expected, **tolerance(dtype, k))


# ---- int8 x int8 -> int32 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("a_dtype", [torch.int8, torch.uint8])
@pytest.mark.parametrize("shape", [(1, 8, 8), (17, 64, 40), (40, 300, 200), (5, 0, 7)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_int_mm_is_exact(native_oracle, a_dtype, shape, layout):
    m, k, n = shape
    a = torch.randint(0 if a_dtype == torch.uint8 else -128, 128, (m, k)).to(a_dtype)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    if layout == "transposed":
        a, b = a.t().contiguous().t(), b.t().contiguous().t()
    native_oracle(torch._int_mm, a, b, rtol=0, atol=0)


def test_int_mm_out_fills_a_given_tensor_and_refuses_a_strided_one(native_oracle):
    def product(a, b, out):
        torch._int_mm(a, b, out=out)
        return out

    a, b = torch.randint(-128, 128, (6, 32), dtype=torch.int8), torch.randint(-128, 128, (32, 5), dtype=torch.int8)
    native_oracle(product, a, b, torch.zeros(6, 5, dtype=torch.int32), rtol=0, atol=0)
    for device in ("cpu", "mlu"):
        with pytest.raises(RuntimeError, match="Expected result to be contiguous"):
            torch._int_mm(a.to(device), b.to(device), out=torch.zeros(6, 10, dtype=torch.int32, device=device)[:, ::2])


# ---- dynamically quantised int4 (the CPU's reference kernels, bit for bit) ----------------------------------


@pytest.mark.parametrize("dtype,block", [(torch.float32, 128), (torch.float32, 32), (torch.bfloat16, 128)])
@pytest.mark.parametrize("bias", [False, True])
def test_dyn_quant_matmul_4bit_is_the_cpus_bit_for_bit(native_oracle, dtype, block, bias):
    torch.manual_seed(block)
    n, k = 48, 128
    w = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8)
    scales = torch.rand(n, k // block) * 0.05
    b = torch.randn(n) if bias else None
    x = (torch.randn(5, k) * 3 + 0.5).to(dtype)

    def product(x, w, scales, b):
        packed = torch._dyn_quant_pack_4bit_weight(w, scales, b, block, k, n)
        return packed, torch._dyn_quant_matmul_4bit(x, packed, block, k, n)

    native_oracle(product, x, w, scales, b, rtol=0, atol=0)


# ---- situations --------------------------------------------------------------------------------------------


def all_products(device, dtype=torch.float32, m=3):
    """The arguments of one call of each weight-only product on `device`, and the expected results."""
    torch.manual_seed(0)
    x = torch.randn(m, 128).to(dtype)
    w8, s8 = torch.randint(-128, 128, (32, 128), dtype=torch.int8), (torch.rand(32) * 0.02).to(dtype)
    q, sz = int4_weight(32, 128, 32, dtype)
    packed = torch._convert_weight_to_int4pack_for_cpu(q, 2)
    args = [(x, w8, s8), (x, packed, sz)]
    cpu = [int8_reference(*args[0]), torch._weight_int4pack_mm_for_cpu(x, packed, 32, sz)]
    on = [tuple(t.to(device) for t in a) for a in args]
    return on, cpu


def run_products(on):
    (x, w8, s8), (x4, packed, sz) = on
    return [torch._weight_int8pack_mm(x, w8, s8), torch._weight_int4pack_mm_for_cpu(x4, packed, 32, sz)]


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")
def test_products_on_a_non_current_device_with_the_other_busy():
    torch.mlu.set_device(0)
    big = torch.randn(1024, 1024, device="mlu:0")
    for _ in range(4):
        big = big @ big / 32  # queued work on mlu:0 while mlu:1 runs
    on, cpu = all_products("mlu:1")
    got = run_products(on)
    assert torch.mlu.current_device() == 0
    for g, c in zip(got, cpu):
        assert g.device == torch.device("mlu:1")
        torch.testing.assert_close(g.cpu(), c, **tolerance(torch.float32, 128))
    torch.mlu.synchronize()


def test_products_replay_in_a_graph_with_new_inputs():
    on, _ = all_products("mlu")
    g = torch.mlu.MLUGraph()
    run_products(on)  # warm-up: buffers the products allocate come from the pool
    with torch.mlu.graph(g):
        outs = run_products(on)
    for seed in range(2):
        torch.manual_seed(seed)
        x = torch.randn(3, 128)
        on[0][0].copy_(x.to("mlu"))
        on[1][0].copy_(x.to("mlu"))
        g.replay()
        (_, w8, s8), (_, packed, sz) = [[t.cpu() for t in a] for a in on]
        want = [int8_reference(x, w8, s8), torch._weight_int4pack_mm_for_cpu(x, packed, 32, sz)]
        for got, w in zip(outs, want):
            torch.testing.assert_close(got.cpu(), w, **tolerance(torch.float32, 128))


def test_compiled_products_match_eager_and_stay_native():
    on, _ = all_products("mlu", dtype=torch.bfloat16)

    def layer(on):
        a, b = run_products(on)
        return torch.relu(a) + b

    eager = layer(on)
    compiled = torch.compile(layer, dynamic=False)
    torch_mlu.reset_fallback_report()
    got = compiled(on)
    assert torch_mlu.fallback_report() == {}  # Inductor's int4 lowering reaches quantized::int4mm_packed_weight_cpu
    torch.testing.assert_close(got.cpu(), eager.cpu())


# ---- bad input ---------------------------------------------------------------------------------------------


def bad_calls():
    x, w8, s8 = torch.randn(4, 64), torch.randint(-128, 128, (32, 64), dtype=torch.int8), torch.rand(32)
    q = torch.randint(0, 16, (32, 64), dtype=torch.int32)
    sz = torch.rand(2, 32, 2)
    a8, b8 = torch.randint(-128, 128, (8, 16), dtype=torch.int8), torch.randint(-128, 128, (16, 8), dtype=torch.int8)
    mm4 = torch._weight_int4pack_mm_for_cpu
    pack4 = torch._convert_weight_to_int4pack_for_cpu
    return {
        "int8 A integer": (lambda d: torch._weight_int8pack_mm(x.int().to(d), w8.to(d), s8.to(d)), "float tensor"),
        "int8 B float": (lambda d: torch._weight_int8pack_mm(x.to(d), w8.float().to(d), s8.to(d)), "int8 tensor"),
        "int8 scales short": (lambda d: torch._weight_int8pack_mm(x.to(d), w8.to(d), s8[:16].to(d)), "size 32"),
        "int8 scales dtype": (lambda d: torch._weight_int8pack_mm(x.bfloat16().to(d), w8.to(d), s8.to(d)),
                              "expected scalar type BFloat16"),
        "int8 K mismatch": (lambda d: torch._weight_int8pack_mm(x[:, :32].contiguous().to(d), w8.to(d), s8.to(d)),
                            "K = 32"),
        "int4 pack N": (lambda d: pack4(q[:24].to(d), 2), "dividable by 16"),
        "int4 pack dtype": (lambda d: pack4(q.to(torch.uint8).to(d), 2), "kInt"),
        "int4 group": (lambda d: mm4(x.to(d), pack4(q.to(d), 2), 16, sz.to(d)), "32, 64, 128 or 256"),
        "int4 short scales": (lambda d: mm4(torch.randn(4, 128).to(d), pack4(torch.randint(0, 16, (32, 128),
                              dtype=torch.int32).to(d), 2), 32, sz.to(d)), "at least K / qGroupSize = 4"),
        "int4 B columns": (lambda d: mm4(x.to(d), pack4(q.to(d), 2)[:, :16].contiguous(), 32, sz.to(d)), "K/2"),
        "tinygemm innerKTiles": (lambda d: torch._convert_weight_to_int4pack(torch.zeros(8, 32, dtype=torch.uint8)
                                 .to(d), 3), "2, 4 or 8"),
        "int_mm mat2 uint8": (lambda d: torch._int_mm(a8.to(d), b8.to(torch.uint8).to(d)), "int8"),
        "int_mm K": (lambda d: torch._int_mm(a8.to(d), b8[:8].to(d)), "needs to match"),
        "int_mm out dtype": (lambda d: torch._int_mm(a8.to(d), b8.to(d), out=torch.empty(8, 8, dtype=torch.long,
                             device=d)), "kInt"),
        "dyn quant input width": (lambda d: torch._dyn_quant_matmul_4bit(x[:, :32].contiguous().to(d),
                                  torch.zeros(32 * 32 + 32).to(d), 64, 64, 32), "in_features = 64"),
        "dyn quant short packed": (lambda d: torch._dyn_quant_matmul_4bit(x.to(d), torch.zeros(100).to(d), 64, 64,
                                   32), "Invalid packed weight tensor size"),
    }


@pytest.mark.parametrize("case", list(bad_calls()))
def test_bad_input_is_a_clear_error_and_the_device_keeps_working(case):
    call, text = bad_calls()[case]
    with pytest.raises(RuntimeError, match=text):
        call("mlu")
        torch.mlu.synchronize()
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")
def test_operands_on_two_devices_are_refused():
    on, _ = all_products("mlu:0")
    (x, w8, s8), (x4, packed, sz) = on
    with pytest.raises(RuntimeError, match="same device"):
        torch._weight_int8pack_mm(x.to("mlu:1"), w8, s8)
    with pytest.raises(RuntimeError, match="same device"):
        torch._weight_int4pack_mm_for_cpu(x4, packed.to("mlu:1"), 32, sz)
