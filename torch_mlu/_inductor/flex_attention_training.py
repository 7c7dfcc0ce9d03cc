"""flex_attention trained under torch.compile on mlu: the dense math, differentiated by AOTAutograd.

Note [Compiled flex_attention training on mlu]
Inductor's templates for the flex_attention higher-order op are per device (Note [Compiled flex_attention on
mlu]): mlu takes the CPU's C++ one, which computes the forward only, so on the CPU a compiled call that needs the
log-sum-exp (inputs that require grad, return_lse) fails with "torch.compile on CPU only supports inference".
Models that always compile their attention, torchtitan's Llama among them, then cannot train. On mlu, while a
compiled graph is traced (fake inputs), such a call does not become the op: its Autograd kernel runs PyTorch's
own math reference (``math_attention``, what the op computes eagerly: scores, score_mod and mask_mod through
vmap, the safe softmax, the product with V, the log-sum-exp in base 2), whose ops AOTAutograd differentiates and
Inductor compiles like the rest of the graph. The score matrix is materialized, as eager flex_attention does on
every device; the block mask's sparsity is not used (mask_mod is applied densely, the same result). Calls with
real tensors (eager), on other devices, and compiled inference keep PyTorch's path unchanged.
"""
import importlib

import torch
from torch._C import DispatchKey
from torch._subclasses.fake_tensor import is_fake

from .. import patches

# The module, not the op torch._higher_order_ops re-exports under the same name.
flex_hop = importlib.import_module("torch._higher_order_ops.flex_attention")
_HOP = flex_hop.flex_attention


def _needs_the_backward_or_lse(query, key, value, kernel_options, score_mod_other_buffers):
    wants_grad = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (query, key, value, *score_mod_other_buffers))
    return wants_grad or bool(kernel_options.get("OUTPUT_LOGSUMEXP", False))


def install() -> None:
    autograd_kernel = _HOP.py_kernels[DispatchKey.Autograd]

    def flex_attention_autograd(query, key, value, score_mod, block_mask, scale, kernel_options,
                                score_mod_other_buffers=(), mask_mod_other_buffers=()):
        if (query.device.type == "mlu" and is_fake(query)
                and _needs_the_backward_or_lse(query, key, value, kernel_options, score_mod_other_buffers)):
            out, lse, max_scores = flex_hop.math_attention(query, key, value, score_mod, block_mask, scale,
                                                           kernel_options, score_mod_other_buffers,
                                                           mask_mod_other_buffers)
            return flex_hop._permute_strides(out, query.stride()), lse, max_scores
        return autograd_kernel(query, key, value, score_mod, block_mask, scale, kernel_options,
                               score_mod_other_buffers, mask_mod_other_buffers)

    patches.set_item(_HOP.py_kernels, DispatchKey.Autograd, flex_attention_autograd,
                     "compiled mlu calls that train run the dense math (Note [Compiled flex_attention training "
                     "on mlu])", label="torch.ops.higher_order.flex_attention.py_kernels")
    _HOP._dispatch_cache.clear()
