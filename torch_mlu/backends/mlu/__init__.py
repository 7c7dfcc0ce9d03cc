"""``torch.backends.mlu``: switches of the mlu backend, named as ``torch.backends.cuda``'s (Cambricon's names).

- ``cnfft_plan_cache``: the per-device cache of committed FFT plans (``cufft_plan_cache`` for mlu):
  ``torch.backends.mlu.cnfft_plan_cache[device].size`` / ``.max_size`` / ``.clear()``, or the same on the
  current device through ``torch.backends.mlu.cnfft_plan_cache`` itself.
- ``preferred_linalg_library``: accepted as on CUDA. mlu has one LAPACK (the oneMKL PyTorch's CPU build carries),
  so the choice is recorded, and returned, but selects nothing.
"""
import torch

from ... import _C

__all__ = [
    "is_built",
    "cnFFTPlanCacheAttrContextProp",
    "cnFFTPlanCache",
    "cnFFTPlanCacheManager",
    "cnfft_plan_cache",
    "preferred_linalg_library",
]


def is_built():
    """Whether this PyTorch has the mlu backend: always, once torch_mlu is imported."""
    return True


class cnFFTPlanCacheAttrContextProp:
    """A property of a :class:`cnFFTPlanCache` read (and, unless read-only, written) through its ``device_index``."""

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise RuntimeError(self.setter)
        self.setter(obj.device_index, val)


class cnFFTPlanCache:
    """The FFT plan cache of one device: ``size`` (plans held, read-only), ``max_size`` (capacity; 0 disables
    caching) and ``clear()``."""

    def __init__(self, device_index):
        self.device_index = device_index

    size = cnFFTPlanCacheAttrContextProp(
        _C._cnfft_get_plan_cache_size,
        ".size is a read-only property showing the number of plans currently in the "
        "cache. To change the cache capacity, set cnfft_plan_cache.max_size.",
    )

    max_size = cnFFTPlanCacheAttrContextProp(_C._cnfft_get_plan_cache_max_size, _C._cnfft_set_plan_cache_max_size)

    def clear(self):
        return _C._cnfft_clear_plan_cache(self.device_index)


class cnFFTPlanCacheManager:
    """Every device's :class:`cnFFTPlanCache`: indexed by device; used directly, the current device's."""

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        index = torch.mlu._utils._get_device_index(device)
        if index < 0 or index >= torch.mlu.device_count():
            raise RuntimeError(
                f"cnfft_plan_cache: expected 0 <= device index < {torch.mlu.device_count()}, but got "
                f"device with index {index}"
            )
        if len(self.caches) == 0:
            self.caches.extend(cnFFTPlanCache(i) for i in range(torch.mlu.device_count()))
        return self.caches[index]

    def __getattr__(self, name):
        return getattr(self[torch.mlu.current_device()], name)

    def __setattr__(self, name, value):
        if self.__initialized:
            return setattr(self[torch.mlu.current_device()], name, value)
        return super().__setattr__(name, value)


cnfft_plan_cache = cnFFTPlanCacheManager()


_LinalgBackends = {
    "default": torch._C._LinalgBackend.Default,
    "cusolver": torch._C._LinalgBackend.Cusolver,
    "magma": torch._C._LinalgBackend.Magma,
}
_LinalgBackends_str = ", ".join(_LinalgBackends.keys())
_preferred_linalg = torch._C._LinalgBackend.Default


def preferred_linalg_library(backend=None):
    """Records the preferred linear-algebra library, as ``torch.backends.cuda.preferred_linalg_library`` does, and
    returns the current choice (a ``torch._C._LinalgBackend``).

    Accepts ``None`` (only query), ``"default"``, ``"cusolver"``, ``"magma"`` (Cambricon's accepts CUDA's names)
    or a ``torch._C._LinalgBackend``. mlu runs every routine on the one LAPACK it has, whatever the choice, so
    the setting is kept here and not in PyTorch (whose CPU build refuses MAGMA).
    """
    global _preferred_linalg
    if backend is None:
        pass
    elif isinstance(backend, str):
        if backend not in _LinalgBackends:
            raise RuntimeError(f"Unknown input value. Choose from: {_LinalgBackends_str}.")
        _preferred_linalg = _LinalgBackends[backend]
    elif isinstance(backend, torch._C._LinalgBackend):
        _preferred_linalg = backend
    else:
        raise RuntimeError("Unknown input value type.")
    return _preferred_linalg
