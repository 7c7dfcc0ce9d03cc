"""torch.mlu.FloatTensor and the other legacy tensor types, as torch.cuda has them.

Each is a class whose instances are never made: calling it builds an ordinary tensor on the current
mlu device (``torch.mlu.FloatTensor(2, 3)`` uninitialised, ``torch.mlu.FloatTensor([1, 2])`` from data,
as ``torch.FloatTensor`` does on the CPU), and ``isinstance(t, torch.mlu.FloatTensor)`` is true for
strided float32 tensors on mlu.

Note [Legacy type names]: ``Tensor.type(cls)`` in C++ converts a class through its ``tp_name``, which for
a Python class is its ``__name__``; so the ``__name__`` is the qualified ``"torch.mlu.FloatTensor"`` (what
``Tensor.type()`` returns for such a tensor), and ``x.type(torch.mlu.FloatTensor)`` works without
patching ``Tensor.type``. ``__module__`` / ``__qualname__`` keep the repr ``<class 'torch.mlu.FloatTensor'>``.
"""
import torch

_DTYPES = {
    "FloatTensor": torch.float32,
    "DoubleTensor": torch.float64,
    "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16,
    "ByteTensor": torch.uint8,
    "CharTensor": torch.int8,
    "ShortTensor": torch.int16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
    "BoolTensor": torch.bool,
}


class _LegacyTensorType(type):
    def __instancecheck__(cls, obj):
        return (isinstance(obj, torch.Tensor) and obj.device.type == "mlu" and obj.dtype == cls.dtype
                and obj.layout == torch.strided)

    def __call__(cls, *args, device=None):
        device = torch.device("mlu", torch.mlu.current_device()) if device is None else torch.device(device)
        if device.type != "mlu":
            raise RuntimeError(f"{cls.__name__} is an mlu tensor type; it cannot be constructed on {device}")
        if not args:  # torch.FloatTensor() is an empty vector, not a scalar
            return torch.empty(0, dtype=cls.dtype, device=device)
        if all(isinstance(a, int) for a in args):
            return torch.empty(args, dtype=cls.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], torch.Size):
            return torch.empty(args[0], dtype=cls.dtype, device=device)
        if len(args) == 1:
            return torch.as_tensor(args[0], dtype=cls.dtype, device=device)
        raise TypeError(f"{cls.__name__}() takes sizes (ints or a torch.Size) or one sequence of data, got {args!r}")


def _make(name, dtype):
    cls = _LegacyTensorType(f"torch.mlu.{name}", (), {"dtype": dtype, "is_sparse": False, "is_mlu": True,
                                                      "__doc__": f"Legacy mlu tensor type of {dtype}."})
    cls.__module__ = "torch.mlu"
    cls.__qualname__ = name
    return cls


for _name, _dtype in _DTYPES.items():
    globals()[_name] = _make(_name, _dtype)

__all__ = list(_DTYPES)
