"""DTensor sharding strategies for mlu's attention op.

Note [Sharding mlu's attention]
``F.scaled_dot_product_attention`` on mlu runs ``aten._scaled_dot_product_fused_attention_overrideable`` (Note [SDPA
on PrivateUse1], csrc/aten/ops/AttentionOps.cpp), with its ``..._backward`` under autograd. DTensor (torch 2.13) has
strategies for CUDA's flash, efficient and cuDNN attention ops only, so tensor parallelism of any model with SDPA
failed on mlu ("does not have a sharding strategy registered"). Once ``torch.distributed.tensor`` is imported, these
are registered with its sharding propagator (torch_mlu/distributed/ _dtensor.py, each registration recorded in
:mod:`torch_mlu.patches`). Per mesh dimension, with q, k, v of shape (B, H, L, E) or (H, L, E):

- everything replicated;
- the heads sharded (tensor parallelism): q, k, v, the output, the log-sum-exp and their gradients ``Shard`` on
  the head dim. With grouped-query attention (fewer key/value heads) only where both head counts divide evenly
  by the shards, so each rank's query heads meet their own key/value heads;
- the batch sharded (4-D only);
- the queries' sequence sharded, keys and values replicated, for non-causal attention only (causal masks are
  aligned to the first query, which a shard of queries does not start at); the gradients of the keys and values
  are then partial sums.

The attention bias follows q where it has that dim, and is replicated where it broadcasts (size 1, or a bias of
fewer dims); the gradient of a replicated bias (and of replicated keys and values) is ``Partial("sum")``: each
rank's share of the heads, batch or queries adds to it. The Philox seed and offset are 0-dim tensors (CPU
scalars, or device scalars inside a graph capture) that DTensor passes through unwrapped (placement None), as
for CUDA's efficient attention; the cumulative sequence tensors are undefined. The debug attention mask
(``return_debug_mask`` with dropout) is refused: the op's meta function, from which DTensor takes output shapes,
declares none. Strategies are the same shape as PyTorch's for flash attention (``_ops/_matrix_ops.py``),
expanded over the mesh by ``expand_to_full_mesh_op_strategy``.
"""


def _bias_placement(bias_shape, target_dim, shard, replicate):
    """Where the bias goes when q is sharded along `target_dim` of the (B, H, L, S) scores (the log-sum-exp's
    dim, which is the same for a 3-D q): that dim of the bias, or replicated where the bias broadcasts along
    it."""
    dim = len(bias_shape) - 4 + target_dim
    if dim < 0 or bias_shape[dim] == 1:
        return replicate
    return shard(dim)


def _head_counts_divide(q_dim_heads):
    """A callback for expand_to_full_mesh_op_strategy: grouped-query attention sharded on heads only where the
    query and key/value head counts both divide by the number of shards."""
    from torch.distributed.tensor import Shard

    def valid(input_specs, output_specs):
        q, k = input_specs[0], input_specs[1]
        heads, kv_heads = q.tensor_meta.shape[q_dim_heads], k.tensor_meta.shape[q_dim_heads]
        if heads == kv_heads:
            return True
        shards = 1
        for mesh_dim, placement in enumerate(q.placements):
            if placement == Shard(q_dim_heads):
                shards *= q.mesh.size(mesh_dim)
        return heads % shards == 0 and kv_heads % shards == 0

    return valid


def _dims(query_ndim):
    """(batch, heads, queries) dims of q; batch is None for a 3-D q."""
    return (0, 1, 2) if query_ndim == 4 else (None, 0, 1)


def forward_strategy(op_schema):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy

    args = op_schema.args_schema
    query, bias = args[0], args[3] if len(args) > 3 else None
    dropout_p = args[4] if len(args) > 4 else 0.0
    is_causal = args[5] if len(args) > 5 else False
    return_debug_mask = args[6] if len(args) > 6 else False
    if return_debug_mask and dropout_p > 0:
        raise NotImplementedError(
            "scaled_dot_product_attention on DTensor: return_debug_mask is not supported on mlu (the op's meta "
            "function declares no debug mask, so DTensor cannot place one)")
    batch_dim, head_dim, query_dim = _dims(len(query.shape))
    has_bias = bias is not None
    R = Replicate()

    def strategy(q_dim, lse_dim, k_placement):
        """[out, lse, cum_q, cum_k, max_q, max_k, seed, offset, debug_mask, q, k, v, (bias)]."""
        if q_dim is None:
            row = [R, R] + [None] * 7 + [R, R, R]
            return row + [R] if has_bias else row
        row = [Shard(q_dim), Shard(lse_dim)] + [None] * 7 + [Shard(q_dim), k_placement, k_placement]
        if has_bias:
            row.append(_bias_placement(bias.shape, lse_dim, Shard, R))
        return row

    strategies = [strategy(None, None, None), strategy(head_dim, 1, Shard(head_dim))]
    if batch_dim is not None:
        strategies.append(strategy(batch_dim, 0, Shard(batch_dim)))
    if not is_causal:
        strategies.append(strategy(query_dim, 2, R))
    return expand_to_full_mesh_op_strategy(op_schema.get_mesh_from_args(), op_schema, strategies, input_index=9,
                                           is_valid_strategy_cb=_head_counts_divide(head_dim))


def backward_strategy(op_schema):
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy
    from torch.distributed.tensor._op_schema import OpStrategy

    args = op_schema.args_schema
    query, bias, is_causal = args[1], args[4], args[13]
    has_bias = bias is not None
    # Tensor inputs: grad_out, q, k, v, (bias), out, lse, then the 0-dim Philox seed and offset (and the
    # cumulative sequence tensors, were they defined): those are replicated.
    tensor_inputs = sum(isinstance(a, OpStrategy) for a in args)
    trailing = tensor_inputs - (6 + has_bias)
    batch_dim, head_dim, query_dim = _dims(len(query.shape))
    R, P = Replicate(), Partial()

    def strategy(q_dim, lse_dim, kv_sharded):
        """[grad_q, grad_k, grad_v, grad_bias, grad_out, q, k, v, (bias), out, lse, *trailing]."""
        if q_dim is None:
            return [R, R, R, R if has_bias else None] + [R] * tensor_inputs
        kv = Shard(q_dim) if kv_sharded else R
        grad_kv = Shard(q_dim) if kv_sharded else P
        row = [Shard(q_dim), grad_kv, grad_kv, None, Shard(q_dim), Shard(q_dim), kv, kv]
        if has_bias:
            placement = _bias_placement(bias.shape, lse_dim, Shard, R)
            row[3] = P if placement == R else placement
            row.append(placement)
        return row + [Shard(q_dim), Shard(lse_dim)] + [R] * trailing

    strategies = [strategy(None, None, False), strategy(head_dim, 1, True)]
    if batch_dim is not None:
        strategies.append(strategy(batch_dim, 0, True))
    if not is_causal:
        strategies.append(strategy(query_dim, 2, False))
    return expand_to_full_mesh_op_strategy(op_schema.get_mesh_from_args(validate=False), op_schema, strategies,
                                           input_index=4, is_valid_strategy_cb=_head_counts_divide_backward(head_dim))


def _head_counts_divide_backward(q_dim_heads):
    forward_check = _head_counts_divide(q_dim_heads)

    def valid(input_specs, output_specs):
        return forward_check(input_specs[1:], output_specs)

    return valid


def register(propagator) -> None:
    import torch
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo

    aten = torch.ops.aten
    # The forward's strategy reads dropout_p, is_causal and return_debug_mask (args 4-6); the backward's,
    # is_causal (arg 13).
    propagator.register_op_strategy(aten._scaled_dot_product_fused_attention_overrideable.default,
                                    forward_strategy, RuntimeSchemaInfo(4))
    propagator.register_op_strategy(aten._scaled_dot_product_fused_attention_overrideable_backward.default,
                                    backward_strategy, RuntimeSchemaInfo(12))
