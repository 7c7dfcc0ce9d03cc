"""``torch.mlu.amp``: mixed precision on mlu, as ``torch.cuda.amp`` is for CUDA.

The cast policies live in C++ (csrc/aten/ops/AutocastMode.cpp, the AutocastPrivateUse1 key). These wrappers
are the device-bound spellings older scripts use (``torch.mlu.amp.autocast()``,
``torch.mlu.amp.GradScaler()``, ``custom_fwd`` / ``custom_bwd``); new code can call ``torch.autocast("mlu")``
and ``torch.amp.GradScaler("mlu")`` directly.
"""
import functools
from typing import Optional

import torch

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]


class autocast(torch.amp.autocast_mode.autocast):
    """``torch.autocast("mlu", ...)``: ``torch.mlu.amp.autocast(args...)`` is ``torch.autocast("mlu", args...)``."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("mlu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs: Optional[torch.dtype] = None):
    """``torch.amp.custom_fwd(device_type="mlu")`` for a custom autograd Function's forward."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type="mlu", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``torch.amp.custom_bwd(device_type="mlu")`` for a custom autograd Function's backward."""
    return torch.amp.custom_bwd(bwd, device_type="mlu")


class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("mlu", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        super().__init__("mlu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
