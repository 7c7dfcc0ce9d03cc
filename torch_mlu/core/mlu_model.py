"""The torch_mlu 1.x API (``import torch_mlu.core.mlu_model as ct``), on top of torch.mlu.

Each call works as it did and warns once that it is deprecated, naming its replacement. The 1.x
switches of the CNML graph compiler and the fixed-core MLU270 (``set_cnml_enabled``, ``set_core_number``,
``set_core_version``, ``set_input_format``) have no meaning in eager mode: they are accepted and change nothing.
"""
import functools
import warnings

import torch

import torch_mlu  # noqa: F401

__all__ = ["mlu_device", "set_device", "current_device", "device_count", "synchronize", "get_device",
           "get_device_name", "is_available", "manual_seed", "manual_seed_all", "empty_cache", "set_cnml_enabled",
           "set_core_number", "set_core_version", "set_input_format", "get_running_mode"]

_warned = set()


def _deprecated(replacement):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if fn.__name__ not in _warned:
                _warned.add(fn.__name__)
                warnings.warn(f"torch_mlu.core.mlu_model.{fn.__name__} is the torch_mlu 1.x API and is "
                              f"deprecated: {replacement}", FutureWarning, stacklevel=2)
            return fn(*args, **kwargs)
        return wrapper
    return decorate


@_deprecated('use torch.device("mlu", n) or the string "mlu:n"')
def mlu_device(n=None):
    """The mlu device `n` (default: the current one), as 1.x returned it: a torch.device."""
    return torch.device("mlu", torch.mlu.current_device() if n is None else n)


@_deprecated("use torch.mlu.set_device(n)")
def set_device(n):
    torch.mlu.set_device(n)


@_deprecated("use torch.mlu.current_device()")
def current_device():
    return torch.mlu.current_device()


@_deprecated("use torch.mlu.device_count()")
def device_count():
    return torch.mlu.device_count()


@_deprecated("use torch.mlu.synchronize()")
def synchronize(device=None):
    torch.mlu.synchronize(device)


@_deprecated("use tensor.device.index")
def get_device(tensor=None):
    return torch.mlu.current_device() if tensor is None else tensor.get_device()


@_deprecated("use torch.mlu.get_device_name()")
def get_device_name(device=None):
    return torch.mlu.get_device_name(device)


@_deprecated("use torch.mlu.is_available()")
def is_available():
    return torch.mlu.is_available()


@_deprecated("use torch.mlu.manual_seed(seed)")
def manual_seed(seed):
    torch.mlu.manual_seed(seed)


@_deprecated("use torch.mlu.manual_seed_all(seed)")
def manual_seed_all(seed):
    torch.mlu.manual_seed_all(seed)


@_deprecated("use torch.mlu.empty_cache()")
def empty_cache():
    torch.mlu.empty_cache()


@_deprecated("it does nothing in 2.x: torch_mlu 2.x runs every op eagerly (there is no CNML mode); delete the call")
def set_cnml_enabled(enabled):
    pass


@_deprecated("it does nothing in 2.x: the core count is the device's (TORCH_MLU_DEVICE_CORES); delete the call")
def set_core_number(number):
    pass


@_deprecated("it does nothing in 2.x: the device reports its version (torch.mlu.get_device_properties); delete the call")
def set_core_version(version):
    pass


@_deprecated("it does nothing in 2.x: tensors keep their own memory format; delete the call")
def set_input_format(input_format):
    pass


@_deprecated("it does nothing in 2.x: the only mode is eager; delete the call")
def get_running_mode():
    return "eager"
