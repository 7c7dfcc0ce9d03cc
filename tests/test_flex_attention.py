"""flex_attention on mlu (Note [flex_attention on mlu], Note [Compiled flex_attention on mlu]): eager forward equal to
the CPU's eager flex_attention (PyTorch's math reference) over score_mod x block mask x grouped heads x dtype, with
the log-sum-exp; eager backward against the same math in float64 with autograd (the CPU refuses flex backward); a
block mask built on mlu; compiled through our Inductor backend (the CPU's C++ template) equal to eager; compiled
training (refused on the CPU) equal to eager through the dense math."""
import pytest
import torch
from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

import torch_mlu

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def causal(b, h, q, kv):
    return q >= kv


def sliding(b, h, q, kv):
    return (q >= kv) & (q - kv <= 5)


def relative_bias(score, b, h, q, kv):
    return score + (q - kv).to(score.dtype) * 0.1


def head_slopes(score, b, h, q, kv):
    return score - (h + 1).to(score.dtype) * (q - kv).abs().to(score.dtype) * 0.05


SCORE_MODS = {"none": None, "relative": relative_bias, "alibi-like": head_slopes}
MASKS = {"none": None, "causal": causal, "sliding": sliding}


def tolerance(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)


def operands(dtype, heads=4, kv_heads=4, q_len=40, kv_len=40, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, heads, q_len, d, generator=g).to(dtype)
    k = torch.randn(2, kv_heads, kv_len, d, generator=g).to(dtype)
    v = torch.randn(2, kv_heads, kv_len, d, generator=g).to(dtype)
    return q, k, v


def block_mask(mask_mod, q_len, kv_len, device):
    if mask_mod is None:
        return None
    return create_block_mask(mask_mod, None, None, q_len, kv_len, device=device, BLOCK_SIZE=16)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("score", list(SCORE_MODS))
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("gqa", [False, True], ids=["mha", "gqa"])
def test_eager_flex_attention_matches_the_cpu(native_oracle, dtype, score, mask, gqa):
    q, k, v = operands(dtype, kv_heads=2 if gqa else 4, q_len=37, kv_len=37)

    def run(q, k, v):
        out, aux = flex_attention(q, k, v, score_mod=SCORE_MODS[score],
                                  block_mask=block_mask(MASKS[mask], 37, 37, q.device), enable_gqa=gqa,
                                  return_aux=AuxRequest(lse=True))
        return out, aux.lse

    native_oracle(run, q, k, v, tolerances=lambda dt: tolerance(dtype) if dt == dtype else dict(rtol=1e-4, atol=1e-4))


def dense_reference(q, k, v, score_mod, mask_mod, scale):
    """softmax(score_mod(q k^T scale) masked) v in the leaves' dtype, written out with PyTorch ops."""
    heads, kv_heads = q.shape[1], k.shape[1]
    k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))
    scores = q @ k.transpose(-1, -2) * scale
    b, h, i, j = torch.meshgrid(*(torch.arange(n) for n in scores.shape), indexing="ij")
    if score_mod is not None:
        scores = score_mod(scores, b, h, i, j)
    if mask_mod is not None:
        scores = scores.masked_fill(~mask_mod(b, h, i, j), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("score,mask", [("none", "causal"), ("relative", "sliding"), ("alibi-like", "none")])
def test_eager_backward_matches_the_math_in_float64(dtype, score, mask):
    q, k, v = operands(dtype, kv_heads=2, q_len=33, kv_len=33, seed=1)
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(2)).to(dtype)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    dense_reference(*leaves, SCORE_MODS[score], MASKS[mask], 0.25).backward(grad.double())
    mlu_leaves = [t.to("mlu").requires_grad_() for t in (q, k, v)]
    out = flex_attention(*mlu_leaves, score_mod=SCORE_MODS[score],
                         block_mask=block_mask(MASKS[mask], 33, 33, "mlu"), scale=0.25, enable_gqa=True)
    out.backward(grad.to("mlu"))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=5e-2, atol=5e-2)
    for name, got, want in zip("qkv", mlu_leaves, leaves):
        assert got.grad.device.type == "mlu"
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, **tol, msg=lambda m: f"grad {name}: {m}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("score,mask", [("none", "none"), ("relative", "causal"), ("alibi-like", "sliding")])
def test_compiled_flex_attention_matches_eager(dtype, score, mask, released_graphs):
    q, k, v = (t.to("mlu") for t in operands(dtype, q_len=64, kv_len=64, seed=3))
    bm = block_mask(MASKS[mask], 64, 64, "mlu")
    eager = flex_attention(q, k, v, score_mod=SCORE_MODS[score], block_mask=bm)
    torch_mlu.reset_fallback_report()
    compiled = torch.compile(flex_attention, fullgraph=True)(q, k, v, score_mod=SCORE_MODS[score], block_mask=bm)
    assert torch_mlu.fallback_report() == {}
    assert compiled.device.type == "mlu"
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), **tolerance(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("score,mask,gqa", [("relative", "causal", False), ("alibi-like", "sliding", True),
                                            ("none", "none", True)])
def test_compiled_training_matches_eager(dtype, score, mask, gqa, released_graphs):
    """Note [Compiled flex_attention training on mlu]: where the CPU refuses ("only supports inference"), mlu
    compiles the dense math; its output, log-sum-exp and gradients equal eager flex_attention's."""
    q, k, v = operands(dtype, kv_heads=2 if gqa else 4, q_len=48, kv_len=48, seed=4)
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(5)).to(dtype).to("mlu")
    bm = block_mask(MASKS[mask], 48, 48, "mlu")

    def run(fn):
        leaves = [t.to("mlu").requires_grad_() for t in (q, k, v)]
        out, aux = fn(*leaves, score_mod=SCORE_MODS[score], block_mask=bm, enable_gqa=gqa,
                      return_aux=AuxRequest(lse=True))
        (out * grad).sum().backward()
        return [out, aux.lse] + [t.grad for t in leaves]

    torch_mlu.reset_fallback_report()
    compiled = run(torch.compile(flex_attention, fullgraph=True))
    assert torch_mlu.fallback_report() == {}
    for name, got, want in zip(["out", "lse", "dq", "dk", "dv"], compiled, run(flex_attention)):
        assert got.device.type == "mlu"
        torch.testing.assert_close(got.cpu(), want.cpu(), **tolerance(dtype), msg=lambda m: f"{name}: {m}")


def test_compiled_training_on_the_cpu_is_still_refused(released_graphs):
    """Only mlu's calls change: the CPU's compiled training keeps PyTorch's own refusal."""
    q, k, v = (t.requires_grad_() for t in operands(torch.float32, seed=4))
    with pytest.raises(Exception, match="does not support backward on CPU"):
        torch.compile(flex_attention, fullgraph=True)(q, k, v, block_mask=block_mask(causal, 40, 40, "cpu"))
