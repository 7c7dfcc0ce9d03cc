"""torch.nn.attention.varlen (varlen_attn, varlen_attn_out) and aten's _flash_attention_forward / _backward run natively
on mlu (csrc/aten/ops/FlashAttentionOps.cpp, Note [FlashAttention's contract]) and agree with PyTorch's math reference:
scaled_dot_product_attention on the CPU, one sequence at a time, with the mask flash attention defines (bottom-right
aligned causal and sliding windows). Generated over dtype x window x grouped heads x packed / paged cache x sequence
lengths (empty sequences, more queries than keys, lengths across the kernel's tiles); the backward through autograd;
varlen_attn_out; the padded (4-D) form of the aten op; a non-current device, a compiled call and a captured decode step;
bad offsets are a device-side error naming them, bad arguments a clear error, and the device keeps working."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.varlen import AuxRequest, varlen_attn, varlen_attn_out

import torch_mlu

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# (left, right) as varlen_attn takes them; (-1, 0) is its causal.
WINDOWS = [(-1, -1), (-1, 0), (5, 0), (3, 2), (0, -1)]


def tolerance(dtype):
    return {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
            torch.float16: dict(rtol=4e-3, atol=4e-3)}[dtype]


def visible(q_len, kv_len, left, right):
    """The bool mask [q_len, kv_len] of a window, bottom-right aligned: query i sees key j iff
    i + kv_len - q_len - left <= j <= i + kv_len - q_len + right (a negative window: no bound)."""
    i = torch.arange(q_len).unsqueeze(1) + (kv_len - q_len)
    j = torch.arange(kv_len).unsqueeze(0)
    keep = torch.ones(q_len, kv_len, dtype=torch.bool)
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def reference(q, k, v, window, causal=None, scale=None, max_k=None):
    """(out, lse [heads, q_len]) of one sequence by the CPU's math SDPA in float64: q [q_len, heads, d], k and v
    [kv_len, kv_heads, d]; windows of at least max_k (default: kv_len) are no window, causal makes the right one 0
    (flash's normalisation). Rows that see no key: out 0, lse +inf (flash's)."""
    causal = tuple(window) == (-1, 0) if causal is None else causal
    q_len, heads, d = q.shape
    kv_len, kv_heads = k.shape[:2]
    limit = kv_len if max_k is None else max_k
    left, right = (w if w < limit else -1 for w in window)
    mask = visible(q_len, kv_len, left, 0 if causal else right)
    qd, kd, vd = (t.double().transpose(0, 1) for t in (q, k, v))
    kd, vd = (t.repeat_interleave(heads // kv_heads, dim=0) for t in (kd, vd))
    scale = 1 / math.sqrt(d) if scale is None else scale
    out = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=mask, scale=scale)
    scores = (qd @ kd.transpose(-1, -2) * scale).masked_fill(~mask, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    lse = torch.where(torch.isneginf(lse), math.inf, lse)
    return out.transpose(0, 1).to(q.dtype), lse.float()


def packed_case(lengths, heads=4, kv_heads=2, d=16, dtype=torch.float32, seed=0):
    """q, k, v packed over sequences of (q_len, kv_len) lengths, with cu_seq_q, cu_seq_k and the maxima."""
    g = torch.Generator().manual_seed(seed)
    total_q, total_k = sum(lq for lq, _ in lengths), sum(lk for _, lk in lengths)
    q = torch.randn(total_q, heads, d, generator=g).to(dtype)
    k = torch.randn(total_k, kv_heads, d, generator=g).to(dtype)
    v = torch.randn(total_k, kv_heads, d, generator=g).to(dtype)
    cu_q = torch.tensor([0] + [sum(lq for lq, _ in lengths[:i + 1]) for i in range(len(lengths))], dtype=torch.int32)
    cu_k = torch.tensor([0] + [sum(lk for _, lk in lengths[:i + 1]) for i in range(len(lengths))], dtype=torch.int32)
    return q, k, v, cu_q, cu_k, max(lq for lq, _ in lengths), max(lk for _, lk in lengths)


def packed_reference(q, k, v, cu_q, cu_k, max_k, window, scale=None, used=None):
    outs, lses = [], []
    for s in range(len(cu_q) - 1):
        k_end = cu_k[s] + used[s] if used is not None else cu_k[s + 1]
        o, lse = reference(q[cu_q[s]:cu_q[s + 1]], k[cu_k[s]:k_end], v[cu_k[s]:k_end], window, scale=scale,
                           max_k=max_k)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses, dim=1)


LENGTHS = {
    "decode": [(1, 7), (1, 1), (1, 40)],
    "prefill": [(13, 13), (70, 70), (1, 1)],
    "chunked": [(5, 20), (64, 300), (3, 3)],
    "more queries than keys": [(9, 4), (2, 2)],
    "empty sequence": [(4, 4), (0, 0), (0, 3), (6, 6)],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("lengths", list(LENGTHS), ids=str)
@pytest.mark.parametrize("group", [1, 2], ids=["mha", "gqa"])
def test_varlen_attn_matches_math_reference(dtype, window, lengths, group):
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case(LENGTHS[lengths], heads=4, kv_heads=4 // group, dtype=dtype)
    want, want_lse = packed_reference(q, k, v, cu_q, cu_k, max_k, window)
    torch_mlu.reset_fallback_report()
    got, lse = varlen_attn(q.to("mlu"), k.to("mlu"), v.to("mlu"), cu_q.to("mlu"), cu_k.to("mlu"), max_q, max_k,
                           window_size=window, enable_gqa=group > 1, return_aux=AuxRequest(lse=True))
    assert torch_mlu.fallback_report() == {}
    assert got.device.type == "mlu" and got.dtype == dtype and got.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == (4, q.shape[0])
    torch.testing.assert_close(got.cpu(), want, **tolerance(dtype))
    torch.testing.assert_close(lse.cpu(), want_lse, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("window", [(-1, -1), (-1, 0), (4, 0)], ids=str)
@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_paged_cache_matches_math_reference(dtype, window, page_size):
    """A paged cache in shuffled page order, partly filled last pages (seqused_k), decode and chunked prefill."""
    g = torch.Generator().manual_seed(page_size)
    lengths = [(1, 9), (3, 17), (1, 1), (6, 33)]
    heads, kv_heads, d = 4, 2, 16
    pages_per_seq = max(math.ceil(lk / page_size) for _, lk in lengths) + 1
    pages = len(lengths) * pages_per_seq + 3
    k_cache = torch.randn(pages, page_size, kv_heads, d, generator=g).to(dtype)
    v_cache = torch.randn(pages, page_size, kv_heads, d, generator=g).to(dtype)
    table = torch.randperm(pages, generator=g)[:len(lengths) * pages_per_seq].view(len(lengths), -1).int()
    used = torch.tensor([lk for _, lk in lengths], dtype=torch.int32)
    q = torch.randn(sum(lq for lq, _ in lengths), heads, d, generator=g).to(dtype)
    cu_q = torch.tensor([0] + list(torch.tensor([lq for lq, _ in lengths]).cumsum(0)), dtype=torch.int32)
    max_k = max(lk for _, lk in lengths)
    outs = []
    for s, (lq, lk) in enumerate(lengths):
        rows = torch.cat([k_cache[p] for p in table[s]]), torch.cat([v_cache[p] for p in table[s]])
        outs.append(reference(q[cu_q[s]:cu_q[s + 1]], rows[0][:lk], rows[1][:lk], window, max_k=max_k)[0])
    got = varlen_attn(q.to("mlu"), k_cache.to("mlu"), v_cache.to("mlu"), cu_q.to("mlu"), None,
                      max(lq for lq, _ in lengths), max_k, window_size=window, enable_gqa=True,
                      seqused_k=used.to("mlu"), block_table=table.to("mlu"))
    torch.testing.assert_close(got.cpu(), torch.cat(outs), **tolerance(dtype))


def test_seqused_k_without_pages_uses_a_prefix_of_each_slot():
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case([(1, 10), (2, 12)], heads=2, kv_heads=2)
    used = torch.tensor([4, 12], dtype=torch.int32)
    want, _ = packed_reference(q, k, v, cu_q, cu_k, max_k, (-1, 0), used=used)
    got = varlen_attn(*(t.to("mlu") for t in (q, k, v, cu_q, cu_k)), max_q, max_k, window_size=(-1, 0),
                      seqused_k=used.to("mlu"))
    torch.testing.assert_close(got.cpu(), want, **tolerance(torch.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("window", [(-1, -1), (-1, 0), (6, 0), (2, 3)], ids=str)
def test_varlen_attn_backward_matches_math_reference(dtype, window):
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case([(5, 5), (70, 90), (0, 2), (33, 33)], dtype=dtype, seed=3)
    grad = torch.randn(q.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = packed_reference(*leaves, cu_q, cu_k, max_k, window)[0]
    ref.backward(grad.double())
    mlu_leaves = [t.to("mlu").requires_grad_() for t in (q, k, v)]
    out = varlen_attn(*mlu_leaves, cu_q.to("mlu"), cu_k.to("mlu"), max_q, max_k, window_size=window,
                      enable_gqa=True)
    out.backward(grad.to("mlu"))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=5e-2, atol=5e-2)
    for name, got, want in zip("qkv", mlu_leaves, leaves):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, **tol, msg=lambda m: f"grad {name}: {m}")


def test_varlen_attn_out_writes_into_out():
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case(LENGTHS["chunked"], seed=5)
    want, want_lse = packed_reference(q, k, v, cu_q, cu_k, max_k, (-1, 0))
    out = torch.full(q.shape, float("nan"), device="mlu")
    got, lse = varlen_attn_out(out, *(t.to("mlu") for t in (q, k, v, cu_q, cu_k)), max_q, max_k, window_size=(-1, 0),
                               enable_gqa=True, return_aux=AuxRequest(lse=True))
    assert got is out
    torch.testing.assert_close(out.cpu(), want, **tolerance(torch.float32))
    torch.testing.assert_close(lse.cpu(), want_lse, rtol=1e-4, atol=1e-4)


def test_rows_past_the_last_sequence_are_zero():
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case([(3, 3), (4, 4)])
    cu_q_short = torch.tensor([0, 3, 5], dtype=torch.int32)  # rows 5 and 6 belong to no sequence
    cu_k_short = torch.tensor([0, 3, 5], dtype=torch.int32)
    out, lse = varlen_attn(*(t.to("mlu") for t in (q, k, v, cu_q_short, cu_k_short)), 3, 3, enable_gqa=True,
                           return_aux=AuxRequest(lse=True))
    assert (out[5:] == 0).all().item() and torch.isinf(lse[:, 5:]).all().item()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 37, 50), (1, 64, 64), (3, 70, 5)], ids=str)
@pytest.mark.parametrize("is_causal,window", [(False, (None, None)), (True, (None, None)), (False, (7, 0)),
                                              (False, (3, 3))], ids=str)
def test_padded_flash_attention_forward_and_backward(dtype, shape, is_causal, window):
    """The aten op's 4-D form [batch, len, heads, d]; autograd through derivatives.yaml's _flash_attention_backward."""
    batch, q_len, kv_len = shape
    g = torch.Generator().manual_seed(q_len)
    q = torch.randn(batch, q_len, 4, 16, generator=g).to(dtype)
    k, v = (torch.randn(batch, kv_len, 2, 16, generator=g).to(dtype) for _ in range(2))
    grad = torch.randn(q.shape, generator=g).to(dtype)
    win = tuple(-1 if w is None else w for w in window)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    refs = [reference(leaves[0][b], leaves[1][b], leaves[2][b], win, causal=is_causal) for b in range(batch)]
    want = torch.stack([o for o, _ in refs])
    want.backward(grad.double())
    mlu_leaves = [t.to("mlu").requires_grad_() for t in (q, k, v)]
    out, lse, rng_state, unused, debug = torch.ops.aten._flash_attention_forward(
        *mlu_leaves, None, None, q_len, kv_len, 0.0, is_causal, False, window_size_left=window[0],
        window_size_right=window[1])
    assert lse.shape == (batch, 4, q_len) and rng_state.dtype == torch.uint64 and debug.numel() == 0
    torch.testing.assert_close(out.detach().cpu(), want.detach().to(dtype), **tolerance(dtype))
    torch.testing.assert_close(lse.cpu(), torch.stack([lse for _, lse in refs]), rtol=1e-4, atol=1e-4)
    out.backward(grad.to("mlu"))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=5e-2, atol=5e-2)
    for name, got, ref in zip("qkv", mlu_leaves, leaves):
        torch.testing.assert_close(got.grad.cpu().double(), ref.grad, **tol, msg=lambda m: f"grad {name}: {m}")


def test_on_a_non_current_device_with_a_busy_stream_elsewhere():
    if torch.mlu.device_count() < 2:
        pytest.skip("needs two mlu devices")
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case(LENGTHS["prefill"], seed=7)
    want, _ = packed_reference(q, k, v, cu_q, cu_k, max_k, (-1, 0))
    torch.mlu.set_device(0)
    busy = torch.randn(512, 512, device="mlu:0")
    for _ in range(20):
        busy = busy @ busy / 512  # queued on device 0 while device 1 computes
    got = varlen_attn(*(t.to("mlu:1") for t in (q, k, v, cu_q, cu_k)), max_q, max_k, window_size=(-1, 0),
                      enable_gqa=True)
    assert got.device == torch.device("mlu:1")
    torch.testing.assert_close(got.cpu(), want, **tolerance(torch.float32))
    torch.mlu.synchronize(0)


def test_compiled_varlen_attn_matches_eager(released_graphs):
    q, k, v, cu_q, cu_k, max_q, max_k = (t.to("mlu") if isinstance(t, torch.Tensor) else t
                                         for t in packed_case(LENGTHS["chunked"], seed=8))

    def layer(q, k, v):
        return varlen_attn(q * 2, k, v, cu_q, cu_k, max_q, max_k, window_size=(-1, 0), enable_gqa=True).relu()

    eager = layer(q, k, v)
    compiled = torch.compile(layer, fullgraph=True)(q, k, v)
    torch.testing.assert_close(compiled.cpu(), eager.cpu())


def test_a_captured_decode_step_replays_with_new_lengths():
    """Offsets and lengths live on the device, so one captured step serves every decode position."""
    heads, kv_heads, d, page_size, pages = 4, 2, 16, 8, 12
    g = torch.Generator().manual_seed(9)
    k_cache = torch.randn(pages, page_size, kv_heads, d, generator=g).to("mlu")
    v_cache = torch.randn(pages, page_size, kv_heads, d, generator=g).to("mlu")
    table = torch.arange(pages, dtype=torch.int32).flip(0).view(2, 6).to("mlu")
    q = torch.randn(2, heads, d, generator=g).to("mlu")
    cu_q = torch.tensor([0, 1, 2], dtype=torch.int32, device="mlu")
    used = torch.tensor([5, 9], dtype=torch.int32, device="mlu")
    out = torch.empty(2, heads, d, device="mlu")
    step = lambda: varlen_attn_out(out, q, k_cache, v_cache, cu_q, None, 1, 48, window_size=(-1, 0),  # noqa: E731
                                   enable_gqa=True, seqused_k=used, block_table=table)
    step()
    graph = torch.mlu.MLUGraph()
    with torch.mlu.graph(graph):
        step()
    for lengths in ([5, 9], [17, 40], [1, 48]):
        used.copy_(torch.tensor(lengths, dtype=torch.int32))
        graph.replay()
        want = []
        for s, lk in enumerate(lengths):
            rows_k = torch.cat([k_cache[p] for p in table[s].cpu()]).cpu()[:lk]
            rows_v = torch.cat([v_cache[p] for p in table[s].cpu()]).cpu()[:lk]
            want.append(reference(q[s:s + 1].cpu(), rows_k, rows_v, (-1, 0), max_k=48)[0])
        torch.testing.assert_close(out.cpu(), torch.cat(want), **tolerance(torch.float32))


BAD_OFFSETS = {
    "decreasing cu_seq_q": (dict(cu_q=[0, 4, 2]), r"cu_seq_q\[2\] = 2 is below 4"),
    "cu_seq_q past the rows": (dict(cu_q=[0, 4, 9]), r"cu_seq_q\[2\] = 9 is past 7"),
    "cu_seq_k past the rows": (dict(cu_k=[0, 3, 8]), r"cu_seq_k\[2\] = 8 is past 7"),
    "seqused_k too long": (dict(used=[3, 5]), r"seqused_k\[1\] = 5 is outside 0 .. 4"),
}


@pytest.mark.parametrize("case", list(BAD_OFFSETS))
def test_bad_offsets_are_a_device_error_and_the_device_keeps_working(case):
    change, message = BAD_OFFSETS[case]
    q, k, v, cu_q, cu_k, max_q, max_k = packed_case([(3, 3), (4, 4)])
    cu_q = torch.tensor(change.get("cu_q", cu_q.tolist()), dtype=torch.int32)
    cu_k = torch.tensor(change.get("cu_k", cu_k.tolist()), dtype=torch.int32)
    used = torch.tensor(change["used"], dtype=torch.int32, device="mlu") if "used" in change else None
    with pytest.raises(torch.AcceleratorError, match=message):
        varlen_attn(*(t.to("mlu") for t in (q, k, v, cu_q, cu_k)), max_q, max_k, enable_gqa=True, seqused_k=used)
        torch.mlu.synchronize()
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8


def test_a_page_outside_the_cache_is_a_device_error():
    k_cache = torch.randn(3, 4, 2, 16, device="mlu")
    table = torch.tensor([[0, 5]], dtype=torch.int32, device="mlu")
    with pytest.raises(torch.AcceleratorError, match=r"block_table\[0, 1\] = 5 is not a page of the cache"):
        varlen_attn(torch.randn(1, 2, 16, device="mlu"), k_cache, k_cache, torch.tensor([0, 1], dtype=torch.int32,
                    device="mlu"), None, 1, 8, seqused_k=torch.tensor([6], dtype=torch.int32, device="mlu"),
                    block_table=table)
        torch.mlu.synchronize()
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8


def bad_calls():
    q, k, v, cu_q, cu_k, max_q, max_k = (t.to("mlu") if isinstance(t, torch.Tensor) else t
                                         for t in packed_case([(3, 3), (4, 4)], heads=2, kv_heads=2))
    f = torch.ops.aten._flash_attention_forward
    return {
        "int64 offsets": (lambda: f(q, k, v, cu_q.long(), cu_k, max_q, max_k, 0.0, False, False),
                          "cum_seq_q must be int32"),
        "offsets on the CPU": (lambda: f(q, k, v, cu_q.cpu(), cu_k, max_q, max_k, 0.0, False, False),
                               "Expected all tensors to be on the same device"),
        "offsets of different lengths": (lambda: f(q, k, v, cu_q, cu_k[:2], max_q, max_k, 0.0, False, False),
                                         r"cum_seq_k must have shape \[3\]"),
        "dropout": (lambda: f(q, k, v, cu_q, cu_k, max_q, max_k, 0.1, False, False), "without dropout"),
        "float64": (lambda: f(q.double(), k.double(), v.double(), cu_q, cu_k, max_q, max_k, 0.0, False, False),
                    "supports float32, float16 and bfloat16"),
        "mixed dtypes": (lambda: f(q, k.half(), v, cu_q, cu_k, max_q, max_k, 0.0, False, False), "one dtype"),
        "strided last dim": (lambda: f(q, k.transpose(1, 2).contiguous().transpose(1, 2), v, cu_q, cu_k, max_q, max_k,
                                       0.0, False, False), "contiguous last dimension"),
        "heads not a multiple": (lambda: f(q, k[:, :1].repeat(1, 3, 1), v[:, :1].repeat(1, 3, 1), cu_q, cu_k, max_q,
                                           max_k, 0.0, False, False), "2 query heads are not a multiple of 3"),
        "no cum_seq_k": (lambda: f(q, k, v, cu_q, None, max_q, max_k, 0.0, False, False), "need cum_seq_k"),
        "alibi": (lambda: f(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, False, False, alibi_slopes=q), "alibi_slopes"),
    }


@pytest.mark.parametrize("case", list(bad_calls()))
def test_bad_arguments_are_clear_errors(case):
    call, message = bad_calls()[case]
    with pytest.raises(RuntimeError, match=message):
        call()
    assert (torch.ones(4, device="mlu") * 2).sum().item() == 8
