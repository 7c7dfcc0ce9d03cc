"""The RNG-state higher-order ops of compiled code, on mlu.

Note [Compiled RNG state on mlu]
When a compiled graph recomputes a random op in the backward (activation checkpointing under torch.compile, or
the partitioner choosing to recompute), AOTAutograd wraps the op's forward run in
``run_and_save_rng_state(op, *args)`` (returns the device generator's state and the op's outputs) and its rerun
in ``run_with_rng_state(state, op, *args)`` (runs it with the generator set to that state and restored after),
so the rerun draws the same numbers. ``torch/_prims/rng_prims.py`` (2.13) implements both for a fixed list of
devices (cuda, cpu, hpu, xpu) in their BackendSelect kernels, which also serve fake-tensor and proxy tracing, and
raises "Backend not supported for mlu" otherwise (pytorch/pytorch#193112): a compiled FSDP2 step with activation
checkpointing failed on mlu as soon as its blocks held attention, whose op is tagged nondeterministic_seeded.

Here both ops get mlu implementations beside the originals: the state is the mlu generator's of the device the
op's tensors are on (``torch.mlu.get_rng_state(index)``, where CUDA takes the current device's), restored after
the rerun as CUDA's is. Every other device keeps torch's own kernels. The BackendSelect kernels, the fake-tensor
kernel and the proxy-mode kernel of ``run_and_save_rng_state`` (the latter two close over torch's BackendSelect
function) are replaced by ones that take mlu first; each replacement is recorded in :mod:`torch_mlu.patches`.
"""
import torch
import torch.utils._pytree as pytree
from torch._C import DispatchKey

from . import patches

_REASON = "compiled random ops rerun on mlu (Note [Compiled RNG state on mlu])"


def _mlu_index(args, kwargs):
    """The mlu device index of the op's tensors (or its device argument), or None when they are not on mlu."""
    for value in pytree.tree_leaves((args, kwargs)):
        device = value.device if isinstance(value, torch.Tensor) else value
        if isinstance(device, (str, torch.device)) and torch.device(device).type == "mlu":
            index = torch.device(device).index
            return torch.mlu.current_device() if index is None else index
        if isinstance(value, torch.Tensor):
            return None  # the first tensor decides, as rng_prims.get_device does
    return None


def _replace(hop, table, key, fn, label):
    patches.set_item(table, key, fn, _REASON, label=label)
    hop._dispatch_cache.clear()


def install() -> None:
    from torch._higher_order_ops.utils import registered_hop_fake_fns
    from torch._prims import rng_prims
    from torch.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, track_tensor_tree

    save, rerun = rng_prims.run_and_save_rng_state, rng_prims.run_with_rng_state
    save_select, save_proxy = save.py_kernels[DispatchKey.BackendSelect], save.python_key_table[ProxyTorchDispatchMode]
    rerun_select = rerun.py_kernels[DispatchKey.BackendSelect]

    def run_and_save_rng_state(op, *args, **kwargs):
        index = _mlu_index(args, kwargs)
        if index is None:
            return save_select(op, *args, **kwargs)
        return torch.mlu.get_rng_state(index), op(*args, **kwargs)

    def run_and_save_rng_state_traced(mode, op, *args, **kwargs):
        if _mlu_index(args, kwargs) is None:
            return save_proxy(mode, op, *args, **kwargs)
        out = run_and_save_rng_state(op, *args, **kwargs)
        proxy_args = pytree.tree_map(mode.tracer.unwrap_proxy, (op, *args))
        proxy_kwargs = pytree.tree_map(mode.tracer.unwrap_proxy, kwargs)
        out_proxy = mode.tracer.create_proxy("call_function", save, proxy_args, proxy_kwargs)
        return track_tensor_tree(out, out_proxy, constant=None, tracer=mode.tracer)

    def run_with_rng_state(rng_state, op, *args, **kwargs):
        index = _mlu_index(args, kwargs)
        if index is None:
            return rerun_select(rng_state, op, *args, **kwargs)
        current = torch.mlu.get_rng_state(index)
        torch.mlu.set_rng_state(rng_state.cpu(), index)
        try:
            return op(*args, **kwargs)
        finally:
            torch.mlu.set_rng_state(current, index)

    _replace(save, save.py_kernels, DispatchKey.BackendSelect, run_and_save_rng_state,
             "torch._prims.rng_prims.run_and_save_rng_state.py_kernels")
    _replace(save, save.python_key_table, ProxyTorchDispatchMode, run_and_save_rng_state_traced,
             "torch._prims.rng_prims.run_and_save_rng_state.python_key_table")
    _replace(save, registered_hop_fake_fns, save, run_and_save_rng_state,
             "torch._higher_order_ops.utils.registered_hop_fake_fns")
    _replace(rerun, rerun.py_kernels, DispatchKey.BackendSelect, run_with_rng_state,
             "torch._prims.rng_prims.run_with_rng_state.py_kernels")
