"""PyTorch's per-device defaults that the software MLU takes from the CPU.

A few of PyTorch's Python layers choose an algorithm by device type from tables measured on real hardware, and a
device they do not know gets a fallback meant for GPUs. The software MLU computes on the host CPU, so the CPU's
choices are the fitting ones, and they give the CPU's results: ``mlu`` resolves as ``cpu`` does wherever PyTorch
has no entry for it.

- ``F.linear_cross_entropy(options=LinearCrossEntropyOptions())``: ``acc_policy="auto"`` and
  ``chunking_method="auto"`` resolve per (device type, dtype) from ``_AUTO_DEFAULTS``, and an ``acc_dtype`` left to
  "auto" from ``_resolve_auto_acc_dtype``. For 16-bit inputs the CPU accumulates in float32 ("accurate"); an
  unknown device keeps the logits in the input's type ("compact").
"""
import torch

from . import patches


def adopt_cpu_defaults():
    try:
        from torch.nn.modules import linear_cross_entropy_options
    except ImportError:  # a PyTorch without the chunked linear_cross_entropy
        return
    table = linear_cross_entropy_options._AUTO_DEFAULTS
    for (device, dtype), choice in list(table.items()):
        if device == "cpu" and ("mlu", dtype) not in table:
            patches.set_item(table, ("mlu", dtype), choice, "mlu's auto policy for linear_cross_entropy is the CPU's",
                             label="torch.nn.modules.linear_cross_entropy_options._AUTO_DEFAULTS")
    options = linear_cross_entropy_options.LinearCrossEntropyOptions
    resolve = options._resolve_auto_acc_dtype
    if getattr(resolve, "_mlu_as_cpu", False):
        return

    def resolve_mlu_as_cpu(dtype, device):
        if device is not None and torch.device(device).type == "mlu":
            device = torch.device("cpu")
        return resolve(dtype, device)

    resolve_mlu_as_cpu._mlu_as_cpu = True
    patches.set_attr(options, "_resolve_auto_acc_dtype", staticmethod(resolve_mlu_as_cpu),
                     "linear_cross_entropy's auto acc_dtype on mlu is the CPU's")
