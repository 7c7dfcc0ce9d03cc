"""CPU references for ops the CPU has no kernel for: mlu's fused attention, forward and backward.

Invariant: a reference returns the op's results in the op's structure, with None where a result is not
compared (the attention's bookkeeping outputs: logsumexp, sequence lengths, RNG state, debug mask); it computes
in float32 (float64 for float64 inputs) and rounds to the inputs' dtype once, as fused kernels do.
"""
import math

import torch

aten = torch.ops.aten


def _attention_parts(q, k, v, bias, is_causal, scale):
    """(probabilities, k, v repeated to q's heads, scale, compute dtype)."""
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    q, k, v = q.to(compute), k.to(compute), v.to(compute)
    if k.shape[-3] != q.shape[-3]:  # grouped-query attention: each key/value head serves several query heads
        repeat = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(repeat, dim=-3), v.repeat_interleave(repeat, dim=-3)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if bias is not None and bias.numel():
        scores = scores.masked_fill(~bias, float("-inf")) if bias.dtype == torch.bool else scores + bias.to(compute)
    return torch.softmax(scores, dim=-1), q, k, v, scale


def bind(func, args, kwargs):
    """{argument name: value} of a call, defaults filled in."""
    values = {}
    for i, argument in enumerate(func._schema.arguments):
        if i < len(args) and not argument.kwarg_only:
            values[argument.name] = args[i]
        else:
            values[argument.name] = kwargs.get(argument.name, argument.default_value)
    return values


def _attention_forward(a):
    q, k, v = a["query"], a["key"], a["value"]
    if a["dropout_p"]:
        return None  # random: not compared
    p, _, _, vv, _ = _attention_parts(q, k, v, a["attn_bias"], a["is_causal"], a["scale"])
    return ((p @ vv).to(q.dtype),) + (None,) * 8


def _attention_backward(a):
    q, k, v, bias, mask = a["query"], a["key"], a["value"], a["attn_bias"], a["grad_input_mask"]
    if a["dropout_p"]:
        return None
    p, qq, kk, vv, scale = _attention_parts(q, k, v, bias, a["is_causal"], a["scale"])
    d_out = a["grad_out"].to(qq.dtype)
    d_v = p.transpose(-2, -1) @ d_out
    d_p = d_out @ vv.transpose(-2, -1)
    d_scores = p * (d_p - (d_p * p).sum(-1, keepdim=True))
    d_q = (d_scores @ kk) * scale
    d_k = (d_scores.transpose(-2, -1) @ qq) * scale
    if k.shape[-3] != q.shape[-3]:  # back to the key/value heads
        groups = q.shape[-3] // k.shape[-3]
        d_k = d_k.unflatten(-3, (k.shape[-3], groups)).sum(-3)
        d_v = d_v.unflatten(-3, (k.shape[-3], groups)).sum(-3)
    grads = [d_q.to(q.dtype), d_k.to(k.dtype), d_v.to(v.dtype), None]
    if bias is not None and bias.numel() and bias.dtype != torch.bool and mask[3]:
        grads[3] = d_scores.sum_to_size(bias.shape).to(bias.dtype)
    return tuple(g if want else None for g, want in zip(grads, mask))


REFERENCES = {
    aten._scaled_dot_product_fused_attention_overrideable.default: _attention_forward,
    aten._scaled_dot_product_fused_attention_overrideable_backward.default: _attention_backward,
}
