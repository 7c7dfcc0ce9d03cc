"""Turning CUDA device references into mlu ones.

Only values that are certainly devices change: the strings ``"cuda"`` / ``"cuda:N"`` (exactly), CUDA
``torch.device`` objects, and those inside a ``map_location`` dict or a ``device_ids`` list. Integer
ordinals need nothing: torch 2.13 reads them as the current accelerator's (``torch.device(0)`` is ``mlu:0``).
"""
import functools
import re

import torch

_CUDA_DEVICE = re.compile(r"cuda(:\d+)?")
# Keyword arguments that name a device in torch's and common libraries' signatures.
DEVICE_KEYWORDS = ("device", "device_type", "map_location", "output_device", "device_id", "pin_memory_device")
DEVICE_LIST_KEYWORDS = ("device_ids",)


def to_mlu(value):
    """`value` with a CUDA device reference replaced by the mlu one; anything else unchanged."""
    if isinstance(value, str):
        match = _CUDA_DEVICE.fullmatch(value)
        return "mlu" + (match.group(1) or "") if match else value
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("mlu", value.index)
    if isinstance(value, dict):  # map_location={"cuda:1": "cuda:0"}: the targets are devices
        return {k: to_mlu(v) for k, v in value.items()}
    return value


def convert_arguments(args, kwargs):
    args = tuple(to_mlu(a) if not isinstance(a, dict) else a for a in args)
    for key in DEVICE_KEYWORDS:
        if key in kwargs:
            kwargs[key] = to_mlu(kwargs[key])
    for key in DEVICE_LIST_KEYWORDS:
        if isinstance(kwargs.get(key), (list, tuple)):
            kwargs[key] = type(kwargs[key])(to_mlu(d) for d in kwargs[key])
    return args, kwargs


def with_mlu_devices(fn):
    """`fn` with its device arguments (positional or keyword) converted from CUDA to mlu."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args, kwargs = convert_arguments(args, kwargs)
        return fn(*args, **kwargs)

    wrapper.__migrated_from__ = fn
    return wrapper
