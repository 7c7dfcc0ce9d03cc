"""Device-argument parsing shared by torch.mlu (cf. torch.cuda._utils)."""
import torch


def _get_device_index(device, optional=False, allow_cpu=False) -> int:
    """Index of ``device``: an int, ``"mlu"``/``"mlu:N"`` or a ``torch.device``.

    ``None`` (and a device without an index) means the current device when
    ``optional`` is set.
    """
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if allow_cpu and device.type == "cpu":
            return -1
        if device.type != "mlu":
            raise ValueError(f"Expected an mlu device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError("Expected an mlu device with a specified index or an integer, but got: None")
        return torch.mlu.current_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected an mlu device index (int), a device string or a torch.device, got {device!r}")
    return device
