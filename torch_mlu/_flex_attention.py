"""flex_attention on mlu: its device check and its kernel options.

Note [flex_attention on mlu]
``torch.nn.attention.flex_attention.flex_attention`` (2.13) checks its inputs' device against a fixed set
(``_validate_device``: cuda, cpu, xpu, hpu, mps) and raises ``ValueError`` for any other, though everything after
that check is device-generic: eager, the higher-order op runs its dense math reference (``sdpa_dense``: the score
matrix, ``score_mod`` and ``mask_mod`` applied as PyTorch ops, the softmax, the product with V) on the inputs'
device, and its autograd is the same ops' (mlu runs every one natively). Once the module is imported
(:mod:`torch_mlu._after_import`), its ``_validate_device`` admits mlu, training included, and keeps its own
behaviour for every other device.

Compiled, Inductor lowers the op per device: mlu takes the CPU's C++ template (Note [Compiled flex_attention on
mlu]), which computes no log-sum-exp. ``_apply_kernel_options`` asks for one (OUTPUT_LOGSUMEXP, read only by the
compiled lowerings) whenever grad mode is on, except on the CPU and MPS; for mlu inputs it asks only when the
caller wants it (return_aux / return_lse) or q, k or v require grad. A compiled inference call under grad mode
then takes the template, and a compiled training call the dense math (Note [Compiled flex_attention training on
mlu]).
Both replacements run inside Dynamo's trace of flex_attention, so they are marked for tracing (Dynamo skips
torch_mlu's files otherwise).
"""
import torch

from . import patches
from ._after_import import after_import

_MODULE = "torch.nn.attention.flex_attention"


def _install():
    from torch.nn.attention import flex_attention as flex

    validate = flex._validate_device

    @torch._dynamo.dont_skip_tracing
    def validate_device(query, key, value):
        if query.device.type != "mlu":
            validate(query, key, value)

    patches.set_attr(flex, "_validate_device", validate_device, "admits mlu (Note [flex_attention on mlu])")

    apply_options = flex._apply_kernel_options

    @torch._dynamo.dont_skip_tracing
    def apply_kernel_options(query, key, value, return_lse, kernel_options, return_aux=None):
        options = apply_options(query, key, value, return_lse, kernel_options, return_aux)
        if query.device.type == "mlu":
            wanted = return_aux.lse if return_aux is not None else return_lse
            options["OUTPUT_LOGSUMEXP"] = bool(wanted) or (
                torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)))
        return options

    patches.set_attr(flex, "_apply_kernel_options", apply_kernel_options,
                     "asks mlu's compiled forward for the log-sum-exp only when it is used "
                     "(Note [flex_attention on mlu])")


def install_when_flex_attention_loads() -> None:
    after_import(_MODULE, _install, "admits mlu in flex_attention once its module loads")
