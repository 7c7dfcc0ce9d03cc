"""torchao's weight-only quantization on mlu, on the native quantized products.

torchao (0.18) routes a quantized ``nn.Linear`` through its tensor subclasses' op tables. Two of its weight-only
paths keep mlu off the fast kernels, and torch_mlu registers around them in those tables once the subclass's
module is imported (:mod:`torch_mlu._after_import`; each entry recorded in :mod:`torch_mlu.patches`):

- ``Int8WeightOnlyConfig`` (``Int8Tensor``): its linear is ``mm(x, qdata.t().to(x.dtype)) * scale``, a full
  dequantised copy of the weight per call on every device, and Inductor's rewrite to ``_weight_int8pack_mm``
  accepts only cpu / cuda / xpu inputs. For mlu activations with per-row (or per-tensor) weight-only scales,
  the linear calls ``torch._weight_int8pack_mm`` instead; anything else (dynamic activations, groups, other
  devices) takes torchao's own code; the gradient of the activation is the one torchao's mm gives.
- ``PrototypeInt4WeightOnlyConfig`` (``Int4OpaqueTensor``, the CPU's int4 packing, what torchao's CPU int4
  path is) asserts ``device.type == "cpu"`` when it quantizes and in its linear. mlu packs int4 exactly as the
  host CPU does (Note [int4 packing follows the host CPU]), so a weight on mlu is quantized on the CPU and moved
  back, and the linear on mlu activations is the same ``_weight_int4pack_mm_for_cpu`` call, run natively.

``Int4WeightOnlyConfig(int4_packing_format="tile_packed_to_4d")`` (CUDA's tinygemm layout) needs nothing here:
its only gate is ``torch.cuda.get_device_capability()``, which ``torch_mlu.utils.gpu_migration`` answers, and
its ops (``_convert_weight_to_int4pack``, ``_weight_int4pack_mm``) are native on mlu.
"""
import torch

from . import patches
from ._after_import import after_import

_INT8 = "torchao.quantization.quantize_.workflows.int8.int8_tensor"
_INT4_OPAQUE = "torchao.prototype.quantization.int4.int4_opaque_tensor"


def _override_linear(cls, linear, reason):
    """Puts `linear(original, func, types, args, kwargs)` in front of cls's aten and torch-function linear."""
    tables = [(cls._ATEN_OP_TABLE[cls], torch.ops.aten.linear.default, "_ATEN_OP_TABLE"),
              (cls._TORCH_FN_TABLE[cls], torch.nn.functional.linear, "_TORCH_FN_TABLE")]
    for table, key, label in tables:
        original = table[key]

        def wrapper(func, types, args, kwargs, _original=original):
            return linear(_original, func, types, args, kwargs)

        patches.set_item(table, key, wrapper, reason, label=f"{cls.__qualname__}.{label}")


class _Int8WeightOnlyProduct(torch.autograd.Function):
    """x @ (qdata * scales)^T by _weight_int8pack_mm, which has no derivative of its own: the gradient of x (adapters
    trained over a frozen quantized base need it) is grad_y * scales @ qdata, as torchao's mm would give."""

    @staticmethod
    def forward(ctx, x, qdata, scales):
        ctx.save_for_backward(qdata, scales)
        return torch._weight_int8pack_mm(x, qdata, scales)

    @staticmethod
    def backward(ctx, grad):
        qdata, scales = ctx.saved_tensors
        return (grad * scales) @ qdata.to(grad.dtype), None, None


def _int8_weight_only_linear(original, func, types, args, kwargs):
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    per_row = w.block_size[-1] >= w.qdata.shape[-1] and w.scale.numel() in (1, w.qdata.shape[0])
    if x.device.type != "mlu" or w.act_quant_kwargs is not None or not per_row or w.qdata.dim() != 2:
        return original(func, types, args, kwargs)
    if w.act_pre_scale is not None:
        x = x * w.act_pre_scale
    n, k = w.qdata.shape
    scales = w.scale.reshape(-1).to(x.dtype).expand(n)
    y = _Int8WeightOnlyProduct.apply(x.reshape(-1, k), w.qdata, scales.contiguous()).reshape(*x.shape[:-1], n)
    if bias is not None:
        y = y + bias
    return y.to(args[0].dtype)


def _install_int8():
    from torchao.quantization.quantize_.workflows.int8.int8_tensor import Int8Tensor

    _override_linear(Int8Tensor, _int8_weight_only_linear,
                     "int8 weight-only linear on mlu through the native _weight_int8pack_mm")


def _int4_opaque_linear(original, func, types, args, kwargs):
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    if x.device.type != "mlu" or w.act_mapping_type is not None:
        return original(func, types, args, kwargs)  # the CPU's path, or its own error for mlu + int8 activations
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"Shapes of input and weight do not match, input:{x.shape}, weight: {w.shape}")
    if w.act_pre_scale is not None:
        x = x * w.act_pre_scale
    out_features = w.shape[-2]
    y = torch.ops.aten._weight_int4pack_mm_for_cpu(x.reshape(-1, x.shape[-1]).contiguous(), w.qdata,
                                                   w.block_size[1], w.scale_and_zero)
    y = y[:, :out_features].reshape(*x.shape[:-1], out_features)
    if bias is not None:
        y = y + bias
    return y.to(args[0].dtype)


def _install_int4_opaque():
    from torchao.prototype.quantization.int4.int4_opaque_tensor import Int4OpaqueTensor

    _override_linear(Int4OpaqueTensor, _int4_opaque_linear,
                     "int4 weight-only linear on mlu through the native _weight_int4pack_mm_for_cpu")
    from_hp = Int4OpaqueTensor.__dict__["from_hp"].__func__

    def from_hp_anywhere(cls, w, *args, **kwargs):
        if w.device.type != "mlu":
            return from_hp(cls, w, *args, **kwargs)
        return from_hp(cls, w.cpu(), *args, **kwargs).to(w.device)

    patches.set_attr(Int4OpaqueTensor, "from_hp", classmethod(from_hp_anywhere),
                     "quantizes an mlu weight on the CPU (mlu's int4 packing is the host CPU's) and moves it back")


def install_when_torchao_loads() -> None:
    after_import(_INT8, _install_int8, "registers mlu's int8 weight-only linear once torchao's Int8Tensor loads")
    after_import(_INT4_OPAQUE, _install_int4_opaque,
                 "registers mlu's int4 weight-only linear once torchao's Int4OpaqueTensor loads")
