"""DTensor sharding strategies for the optimizer ops DTensor (torch 2.13) leaves out.

Note [Sharding the optimizers' list ops]
DTensor shards ``_fused_adam_`` / ``_fused_adamw_`` and most ``_foreach_*`` ops as pointwise list ops, but has no
strategy for ``_fused_sgd_`` and ``_fused_adagrad_`` (``SGD(fused=True)``, ``Adagrad(fused=True)``; mlu runs both
natively) nor for ``_foreach_copy_`` (Rprop's foreach step, EMA-style weight copies), so those optimizers failed on
DTensor parameters (FSDP2, tensor parallelism) on every device. Each is elementwise over its lists: element i of
every list is one parameter's tensors, updated in place where they lie, so the strategy is DTensor's own pointwise
one for list ops (``_common_pointwise_single_dim_strategy``), registered the way it registers ``_fused_adam_``.
Tensor keyword arguments (``lr`` as a tensor, ``grad_scale``, ``found_inf``) are replicated. The step counts of
``_fused_adagrad_`` (its 4th list) may live on another mesh than the parameters, as Adam's may (DTensor's note on
multi-mesh args, in ``expand_to_full_mesh_op_strategy``). Registered once ``torch.distributed.tensor`` is imported
(torch_mlu/distributed/_dtensor.py), each entry recorded in :mod:`torch_mlu.patches`.
"""


def _list_ops():
    """(op, index of its step counts among one element's tensors, or None)."""
    import torch
    aten = torch.ops.aten
    return [(aten._fused_sgd_.default, None), (aten._fused_sgd_.tensor_lr, None),
            (aten._fused_adagrad_.default, 3), (aten._fused_adagrad_.tensor_lr, 3),
            (aten._foreach_copy_.default, None)]


def register() -> None:
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo, TensorMeta
    from torch.distributed.tensor._ops._pointwise_ops import _common_pointwise_single_dim_strategy
    from torch.distributed.tensor._ops.single_dim_strategy import register_single_dim_strategy

    pointwise = _common_pointwise_single_dim_strategy()

    def strategy(op, args, kwargs):
        tensor_kwargs = sum(isinstance(v, TensorMeta) for v in kwargs.values())
        return [s + [Replicate()] * tensor_kwargs for s in pointwise(op, args, kwargs)]

    for op, steps in _list_ops():
        register_single_dim_strategy(op, schema_info=RuntimeSchemaInfo(needs_pytree=True), allow_uneven_sharding=True,
                                     allow_unbacked_sharding=True,
                                     different_mesh_args=None if steps is None else [steps])(strategy)
