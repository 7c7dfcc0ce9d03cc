"""torch_mlu: the MLU device for stock PyTorch, through the PrivateUse1 mechanism.

``import torch_mlu`` (or just ``import torch``, through PyTorch's backend
autoload) registers the device ``mlu``, the module ``torch.mlu`` and the
generated methods (``Tensor.mlu()``, ``Tensor.is_mlu``, ``Module.mlu()``,
storage methods). The device is a *software MLU*: a simulated accelerator
whose kernels compute on the host CPU (see the README).
"""


def _autoload():
    """Entry point of PyTorch's backend autoload (group ``torch.backends``).

    Importing this package registers everything; set
    ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` to turn autoloading off.
    """


# Defined before `import torch`: when this package is imported first, torch's
# autoload re-enters it half-loaded and looks for `_autoload` (see above).
import torch  # noqa: E402

import atexit  # noqa: E402

from . import _C  # loads libtorch_mlu: kernels, device guard, hooks, allocator
from . import _autograd_exit, mlu

__version__ = "0.1.0"
__all__ = ["fallback_report", "reset_fallback_report"]


def _register_backend():
    """Claims the PrivateUse1 slot for ``mlu``; safe to call more than once."""
    if torch._C._get_privateuse1_backend_name() != "mlu":
        torch.utils.rename_privateuse1_backend("mlu")
    if not hasattr(torch, "mlu"):
        torch._register_device_module("mlu", mlu)
    if not hasattr(torch.Tensor, "is_mlu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    if not hasattr(torch, "is_mlu_available"):
        torch.is_mlu_available = mlu.is_available  # mmengine / mmcv look for it


def fallback_report():
    """Ops that ran on the CPU because ``mlu`` has no kernel for them yet.

    Returns a dict ``{"aten::op.overload": number_of_calls}`` counted since the
    start of the process (or the last :func:`reset_fallback_report`).
    """
    return dict(_C._fallback_report())


def reset_fallback_report():
    """Clears the counts returned by :func:`fallback_report`."""
    _C._reset_fallback_report()


_register_backend()

# See Note [Autograd device threads at exit] in _autograd_exit.py.
atexit.register(_autograd_exit.drain_autograd_device_threads)
