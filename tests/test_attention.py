"""scaled_dot_product_attention on mlu runs the fused kernel (mlu_kernels/attention.h) through
PyTorch's overrideable SDPA backend, forward and backward, where the CPU runs its own fused kernel (the
math path elsewhere, as the CPU; with dropout always the fused kernel), and agrees with the CPU on
values and layouts.

Causal and arbitrary (boolean and additive, broadcast) masks with a gradient for the additive one,
grouped-query heads, 3-D inputs, custom scales, head-interleaved layouts (kept in the output), dropout
checked against PyTorch's math path given the kernel's own mask, the math backend when the user picks
it, clear errors, and MultiheadAttention / TransformerEncoderLayer on the fused kernel.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import torch_mlu  # noqa: F401  (registers mlu)

FUSED = "ScaledDotProductFusedAttentionOverrideableBackward0"


def significant_strides(t):
    """The strides of the dims longer than 1 (the others carry no layout)."""
    return [(d, s) for d, (n, s) in enumerate(zip(t.shape, t.stride())) if n > 1]


def sdpa_with_grads(q, k, v, mask=None, grad=None, mask_grad=True, **kw):
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    if mask is not None and mask.is_floating_point() and mask_grad:
        mask = mask.detach().clone().requires_grad_()
        leaves.append(mask)
    out = F.scaled_dot_product_attention(*leaves[:3], attn_mask=mask, **kw)
    out.backward(grad)
    return out, [t.grad for t in leaves], out.grad_fn.name()


@pytest.fixture
def check_against_cpu(native_oracle):
    """The shared oracle on SDPA and its gradients, in q's dtype, with the CPU's strides; 16-bit results are
    judged against float64 with the CPU's own error.

    mlu takes its fused kernel exactly where the CPU takes its own (flash) one, else the math path, so the
    outputs have the CPU's layouts (Note [SDPA on PrivateUse1]) and so do the leaves' gradients in every dim
    longer than 1: the fused backward lays its gradients out like its inputs, as PyTorch declares (Note [SDPA
    layouts are the meta kernel's]), and AccumulateGrad lays a leaf's .grad out like the leaf, but keeps a
    gradient whose strides differ only in dims of size 1 (the CPU's [batch, rows, heads, cols] ones there)."""
    def check(q, k, v, mask=None, **kw):
        torch.manual_seed(1)
        grad = torch.randn(q.shape[:-1] + (v.shape[-1],)).to(q.dtype)
        results = {}

        def run(q, k, v, mask, grad):
            out, grads, fn = sdpa_with_grads(q, k, v, mask, grad, **kw)
            fused = fn == FUSED if q.device.type == "mlu" else "FlashAttentionForCpu" in fn
            results[q.device.type] = [out] + grads
            return [out] + grads, fused

        if q.dtype == torch.float32:
            native_oracle(run, q, k, v, mask, grad, rtol=1e-5, atol=1e-5)
        else:
            wide = lambda t: None if t is None else t.double()  # noqa: E731
            ref_mask = wide(mask) if mask is not None and mask.is_floating_point() else mask
            ref_out, ref_grads, _ = sdpa_with_grads(wide(q), wide(k), wide(v), ref_mask, wide(grad), **kw)
            eps = torch.finfo(q.dtype).eps

            def within_twice_the_cpus_error(i, got, cpu):
                ref = ([ref_out] + ref_grads)[i]
                cpu_err = (cpu.double() - ref).abs().max().item()
                err = (got.double() - ref).abs().max().item()
                assert err <= 2 * cpu_err + 4 * eps * ref.abs().max().item(), (err, cpu_err)

            native_oracle(run, q, k, v, mask, grad, compare=within_twice_the_cpus_error)
        (out, *grads), (cpu_out, *cpu_grads) = results["mlu"], results["cpu"]
        assert out.stride() == cpu_out.stride(), \
            f"output strides {out.stride()} on mlu, {cpu_out.stride()} on the CPU"
        for i, (g, c) in enumerate(zip(grads, cpu_grads)):
            assert significant_strides(g) == significant_strides(c), \
                f"gradient {i}: strides {g.stride()} on mlu, {c.stride()} on the CPU, sizes {tuple(g.shape)}"
    return check


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_cpu(dtype, causal, check_against_cpu):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 32).to(dtype) for n in (300, 300, 300))
    check_against_cpu(q, k, v, is_causal=causal)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lengths_differ_and_value_dim(dtype, check_against_cpu):
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 70, 40).to(dtype), torch.randn(1, 2, 257, 40).to(dtype), torch.randn(1, 2, 257, 24).to(dtype)
    check_against_cpu(q, k, v)
    check_against_cpu(q, k, v, is_causal=True)
    check_against_cpu(q, k, v, scale=0.3)


@pytest.mark.parametrize("kind", ["bool", "additive", "additive_broadcast", "additive_and_causal"])
def test_masks(kind, check_against_cpu):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 65, 16), torch.randn(2, 4, 90, 16), torch.randn(2, 4, 90, 16)
    if kind == "bool":
        mask = torch.rand(2, 1, 65, 90) > 0.3
        mask[0, 0, 5] = False  # a fully masked row gives 0, as PyTorch's _safe_softmax
    elif kind == "additive":
        mask = torch.randn(2, 4, 65, 90)
        mask[1, 2, :, 7] = float("-inf")
    else:
        mask = torch.randn(65, 90)
    # The CPU takes a mask with is_causal only when the mask needs no gradient (else it refuses).
    both = kind == "additive_and_causal"
    check_against_cpu(q, k, v, mask, is_causal=both, mask_grad=not both)


def test_fully_masked_rows_are_zero():
    q, k, v = (torch.randn(1, 1, 4, 8, device="mlu") for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool, device="mlu")
    mask[2] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out[0, 0, 2].eq(0).all() and out[0, 0, 3].ne(0).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_query_attention(dtype, check_against_cpu):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 8, 50, 32).to(dtype), torch.randn(2, 2, 50, 32).to(dtype), torch.randn(2, 2, 50, 32).to(dtype)
    check_against_cpu(q, k, v, is_causal=True, enable_gqa=True)


def test_three_d_and_interleaved_layouts(check_against_cpu):
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 33, 16) for _ in range(3))
    check_against_cpu(q, k, v)
    # [batch, seq, heads, dim] transposed to [batch, heads, seq, dim]: the output keeps that layout.
    q, k, v = (torch.randn(2, 70, 4, 16).transpose(1, 2) for _ in range(3))
    check_against_cpu(q, k, v, is_causal=True)


def test_empty_and_single_key(check_against_cpu):
    # PyTorch answers an empty query itself, before choosing a backend.
    check_against_cpu(torch.randn(1, 2, 0, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))
    check_against_cpu(torch.randn(1, 2, 6, 8), torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8))


def test_dropout_matches_math_given_the_mask():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 2, 40, 16), torch.randn(2, 2, 50, 16), torch.randn(2, 2, 50, 8)
    grad = torch.randn(2, 2, 40, 8)
    leaves = [t.to("mlu").requires_grad_() for t in (q, k, v)]
    torch.mlu.manual_seed(7)
    out, *_, mask = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(*leaves, None, 0.3, False, True)
    assert mask.dtype == torch.bool and mask.shape == (2, 2, 40, 50)
    kept = mask.float().mean().item()
    assert 0.65 < kept < 0.75, kept
    out.backward(grad.to("mlu"))
    cpu = [t.clone().requires_grad_() for t in (q, k, v)]
    expected, _ = torch.ops.aten._scaled_dot_product_attention_math(*cpu, None, 0.3, False, mask.cpu())
    expected.backward(grad)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    for a, e in zip(leaves, cpu):
        torch.testing.assert_close(a.grad.cpu(), e.grad, rtol=1e-5, atol=1e-5)
    # The mask is a function of the generator's state: same seed, same mask; next call, another one.
    torch.mlu.manual_seed(7)
    again = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(*leaves, None, 0.3, False, True)[-1]
    after = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(*leaves, None, 0.3, False, True)[-1]
    assert torch.equal(again, mask) and not torch.equal(after, mask)


def test_dropout_through_functional():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 64, 16, device="mlu", requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert out.grad_fn.name() == FUSED and out.eq(0).all()
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0


def test_math_backend_when_chosen():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    with sdpa_kernel([SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(*(t.to("mlu").requires_grad_() for t in (q, k, v)))
    assert out.grad_fn.name() != FUSED
    torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(q, k, v), rtol=1e-5, atol=1e-5)
    with sdpa_kernel([SDPBackend.OVERRIDEABLE]):
        out = F.scaled_dot_product_attention(*(t.to("mlu").requires_grad_() for t in (q, k, v)))
    assert out.grad_fn.name() == FUSED


def test_float64_takes_the_math_path():
    q, k, v = (torch.randn(1, 2, 16, 8, dtype=torch.float64) for _ in range(3))
    out = F.scaled_dot_product_attention(*(t.to("mlu").requires_grad_() for t in (q, k, v)), is_causal=True)
    assert out.grad_fn.name() != FUSED
    torch.testing.assert_close(out.cpu(), F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("case", ["dtype", "gqa_not_enabled", "mask_shape"])
def test_errors_match_cpu(case):
    q, k, v = torch.randn(1, 4, 8, 16), torch.randn(1, 4, 8, 16), torch.randn(1, 4, 8, 16)
    kw = {}
    if case == "dtype":
        k = k.double()
    elif case == "gqa_not_enabled":
        k, v = k[:, :2], v[:, :2]
    else:
        kw["attn_mask"] = torch.zeros(3, 8)
    with pytest.raises(Exception) as cpu_error:
        F.scaled_dot_product_attention(q, k, v, **kw)
    mlu_kw = {n: t.to("mlu") if isinstance(t, torch.Tensor) else t for n, t in kw.items()}
    with pytest.raises(type(cpu_error.value)):
        F.scaled_dot_product_attention(q.to("mlu"), k.to("mlu"), v.to("mlu"), **mlu_kw)
    torch.mlu.synchronize()


def test_cross_device_is_an_error():
    q = torch.randn(1, 1, 4, 8, device="mlu")
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 8))
    assert F.scaled_dot_product_attention(q, q, q).device.type == "mlu"


def graph_names(fn, seen=None):
    """The names of the autograd nodes reachable from fn."""
    seen = set() if seen is None else seen
    if fn is not None and fn not in seen:
        seen.add(fn)
        for child, _ in fn.next_functions:
            graph_names(child, seen)
    return {f.name() for f in seen}


def run_module(module, inputs, **kw):
    out = module(*inputs, **kw)
    out = out[0] if isinstance(out, tuple) else out
    names = graph_names(out.grad_fn)
    out.square().mean().backward()
    return out, [p.grad for p in module.parameters()], names


@pytest.mark.parametrize("module_kind", ["mha", "encoder_layer"])
def test_modules_run_on_the_fused_kernel(module_kind, native_oracle):
    torch.manual_seed(0)
    x = torch.randn(3, 40, 64)
    mask = nn.Transformer.generate_square_subsequent_mask(40)
    if module_kind == "mha":
        module = nn.MultiheadAttention(64, 4, batch_first=True)
        inputs, kw = (x, x, x), dict(need_weights=False, attn_mask=mask, is_causal=True)
    else:
        module = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        inputs, kw = (x,), dict(src_mask=mask, is_causal=True)
    names = {}

    def run(device):
        module.zero_grad()
        out, grads, names[device] = run_module(
            module.to(device), [t.to(device) for t in inputs],
            **{n: t.to(device) if isinstance(t, torch.Tensor) else t for n, t in kw.items()})
        return out, grads

    native_oracle(run, rtol=1e-4, atol=1e-5)
    assert FUSED in names["mlu"], names["mlu"]


@pytest.mark.parametrize("batch_first", [True, False])
def test_compiled_multihead_attention_training_matches_eager(batch_first):
    """Issue 61 case 7: a compiled graph views and asserts the fused backward's gradients by the strides PyTorch
    declares for them (Note [SDPA layouts are the meta kernel's]); MultiheadAttention hands the kernel
    head-interleaved queries, whose gradients the CPU's layout ([batch, rows, heads, cols]) does not fit."""
    import torch._dynamo

    torch.manual_seed(0)
    block = nn.MultiheadAttention(32, 4, batch_first=batch_first).to("mlu")
    x = torch.randn(2, 16, 32) if batch_first else torch.randn(16, 2, 32)
    x = x.to("mlu")

    def step(module):
        module.zero_grad(set_to_none=True)
        module(x, x, x, need_weights=False)[0].square().mean().backward()
        return [p.grad.clone() for p in block.parameters()]

    eager = step(block)
    torch._dynamo.reset()
    try:
        compiled = step(torch.compile(block, backend="aot_eager"))
    finally:
        torch._dynamo.reset()
    for e, c in zip(eager, compiled):
        torch.testing.assert_close(c.cpu(), e.cpu(), rtol=1e-5, atol=1e-6)
