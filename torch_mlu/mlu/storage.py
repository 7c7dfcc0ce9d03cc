"""torch.mlu.FloatStorage and the other legacy typed storage classes, as torch.cuda has them.

Each is a ``TypedStorage`` subclass that PyTorch's storage code places on mlu from the class's module name
(``torch.storage._get_device_from_module`` accepts the PrivateUse1 backend's name): ``torch.mlu.FloatStorage(4)``
is an uninitialised float32 storage on the current mlu device, ``torch.mlu.FloatStorage([1, 2])`` one from data,
and a typed mlu storage reports ``storage.type() == "torch.mlu.FloatStorage"``. They join
``torch._storage_classes``, so ``torch.is_storage`` and serialization know them.
"""
import torch
from torch._utils import classproperty
from torch.storage import _LegacyStorage, _warn_typed_storage_removal

from .. import patches

_DTYPES = {
    "ByteStorage": torch.uint8,
    "CharStorage": torch.int8,
    "ShortStorage": torch.int16,
    "IntStorage": torch.int32,
    "LongStorage": torch.int64,
    "HalfStorage": torch.float16,
    "FloatStorage": torch.float32,
    "DoubleStorage": torch.float64,
    "BFloat16Storage": torch.bfloat16,
    "BoolStorage": torch.bool,
    "ComplexFloatStorage": torch.complex64,
    "ComplexDoubleStorage": torch.complex128,
}


class _MLULegacyStorage(_LegacyStorage):
    @classmethod
    def from_buffer(cls, *args, **kwargs):
        _warn_typed_storage_removal()
        raise RuntimeError("from_buffer: Not available for MLU storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for MLU storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for MLU storage")


def _make(name, dtype):
    def public_dtype(cls):
        _warn_typed_storage_removal()
        return cls._dtype

    cls = type(name, (_MLULegacyStorage,), {
        "dtype": classproperty(public_dtype),
        "_dtype": classproperty(lambda cls: dtype),
        "__module__": "torch.mlu",
        "__doc__": f"Legacy typed storage of {dtype} on mlu.",
    })
    patches.add_member(torch._storage_classes, cls, "torch.is_storage and serialization know torch.mlu's storages",
                       label="torch._storage_classes")
    return cls


for _name, _dtype in _DTYPES.items():
    globals()[_name] = _make(_name, _dtype)

__all__ = list(_DTYPES)
