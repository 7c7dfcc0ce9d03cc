"""``torch.mlu.cncl``: the collective library of mlu (cf. ``torch.cuda.nccl``).

The software MLU's collectives are the ``cncl`` process-group backend
(``torch_mlu.distributed``), carried by Gloo.
"""


from ..version import __version__ as _torch_mlu_version

__all__ = ["is_available", "version"]


def is_available(tensors=None):
    """Whether cncl can move ``tensors`` (all dense mlu tensors), or is built at all."""
    if tensors is None:
        return True
    devices = set()
    for tensor in tensors:
        if tensor.is_sparse or not tensor.is_contiguous() or tensor.device.type != "mlu":
            return False
        if tensor.device in devices:
            return False
        devices.add(tensor.device)
    return True


def version():
    """The cncl version as a tuple ``(major, minor, patch)``: torch_mlu's own."""
    return tuple(int(part) for part in _torch_mlu_version.split("+")[0].split(".")[:3])
