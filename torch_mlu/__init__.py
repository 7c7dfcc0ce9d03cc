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
import importlib.abc  # noqa: E402
import importlib.util  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

try:
    from . import version  # written by the build: what the extension was compiled against
except ImportError as err:
    raise ImportError(
        "torch_mlu is not built: torch_mlu/version.py, written by the build, is missing. Build it with "
        "`make build` in the source tree, or install it with `pip install --no-build-isolation .`"
    ) from err


def _check_torch_version():
    """Refuses a torch other than the one the extension was compiled against.

    The C++ extension uses torch's C++ API, which changes between releases: a
    mismatch would otherwise surface as an undefined symbol while loading it.
    """
    built = version.torch_version.split("+")[0]
    running = str(torch.__version__).split("+")[0]
    if built != running:
        raise ImportError(
            f"torch_mlu {version.__version__} was built against torch {version.torch_version}, but torch "
            f"{torch.__version__} is installed. Install torch=={built} (`pip install torch=={built}`), or rebuild "
            f"torch_mlu against the installed torch (`pip install --no-build-isolation .` in its source tree)."
        )


_check_torch_version()

from . import _C  # noqa: E402  loads libtorch_mlu: kernels, device guard, hooks, allocator
from . import _autograd_exit, _cpu_defaults, _dlpack, mlu, patches  # noqa: E402

__version__ = version.__version__
__all__ = ["fallback_report", "get_git_version", "patches", "reset_fallback_report"]


class _SubmoduleAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import torch.mlu.<name>`` gives ``torch_mlu.mlu.<name>`` itself.

    ``torch.mlu`` is ``torch_mlu.mlu`` registered under torch's name; without this, importing a submodule
    through that name would load its file a second time as a different module (a second sanitizer, a
    second set of autocast state).
    """

    PREFIX = "torch.mlu."

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith(self.PREFIX):
            return None
        if importlib.util.find_spec("torch_mlu.mlu." + fullname[len(self.PREFIX):]) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # The import system returns what sys.modules holds under the name once this returns.
        alias = importlib.import_module("torch_mlu.mlu." + module.__name__[len(self.PREFIX):])
        sys.modules[module.__name__] = alias  # not a patch: a loader's result, as every loader's


def _register_backend():
    """Claims the PrivateUse1 slot for ``mlu``; safe to call more than once."""
    # libtorch_mlu registered the name in C++ as it loaded; this names it on torch's Python side too.
    if torch.utils.backend_registration._privateuse1_backend_name != "mlu":
        torch.utils.rename_privateuse1_backend("mlu")
    if not hasattr(torch, "mlu"):
        torch._register_device_module("mlu", mlu)
    if not any(isinstance(finder, _SubmoduleAlias) for finder in sys.meta_path):
        patches.add_member(sys.meta_path, _SubmoduleAlias(), "import torch.mlu.<name> gives torch_mlu.mlu.<name>",
                           label="sys.meta_path")
    if not hasattr(torch.Tensor, "is_mlu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    patches.set_attr(torch.version, "mlu", version.__version__,
                     "the software MLU's version, as torch.version.cuda is CUDA's")
    if not hasattr(torch, "is_mlu_available"):
        patches.set_attr(torch, "is_mlu_available", mlu.is_available, "mmengine / mmcv look for it")
    _cpu_defaults.adopt_cpu_defaults()
    _dlpack.install()
    mlu.reductions.install()
    if not hasattr(torch.backends, "mlu"):
        from .backends import mlu as backends_mlu

        patches.set_attr(torch.backends, "mlu", backends_mlu, "torch.backends.mlu, as torch.backends.cuda")
        patches.set_item(sys.modules, "torch.backends.mlu", backends_mlu, "import torch.backends.mlu works",
                         label="sys.modules")


def fallback_report():
    """Ops that ran on the CPU because ``mlu`` has no kernel for them yet.

    Returns a dict ``{"aten::op.overload": number_of_calls}`` counted since the
    start of the process (or the last :func:`reset_fallback_report`).
    """
    return dict(_C._fallback_report())


def get_git_version():
    """The git revision this build of torch_mlu was made from (Cambricon's name)."""
    return version.git_version


def reset_fallback_report():
    """Clears the counts returned by :func:`fallback_report`."""
    _C._reset_fallback_report()


_register_backend()

from . import distributed  # noqa: E402
distributed._register()

from . import _dynamo  # noqa: E402
_dynamo.register_when_dynamo_loads()

from . import _torchao  # noqa: E402
_torchao.install_when_torchao_loads()

from . import _flex_attention  # noqa: E402
_flex_attention.install_when_flex_attention_loads()

from . import _rng_state_hops  # noqa: E402
_rng_state_hops.install()

from . import lightning  # noqa: E402
lightning.register_when_lightning_loads()

from . import ops  # noqa: E402,F401  torchvision.ops' box operators: autograd, fake and autocast kernels

# Exit handlers run last registered, first run: the autograd drain (Note [Autograd device threads at exit] in
# _autograd_exit.py) queues work, then every queue runs what it holds before static destructors can race with
# device threads (Note [Device threads at exit] in mlu_runtime/queue.h). A queue stuck for 3 s is abandoned.
atexit.register(_C._mlu_drainAtExit, 3000)
atexit.register(_autograd_exit.drain_autograd_device_threads)

# The stream sanitizer (torch_mlu/mlu/_sanitizer.py), as TORCH_CUDA_SANITIZER turns CSAN on for CUDA.
if os.environ.get("TORCH_MLU_SANITIZER", "0") not in ("", "0"):
    from .mlu import _sanitizer

    _sanitizer.enable_mlu_sanitizer()

# The op-by-op accuracy check for the whole program (torch_mlu/accuracy, docs/accuracy.md).
if os.environ.get("TORCH_MLU_ACCURACY_CHECK", "0") not in ("", "0"):
    from . import accuracy as _accuracy

    _accuracy.enable_from_environment()

# The overflow check for the whole program (Note [Overflow flag] in csrc/aten/OverflowCheck.h).
if os.environ.get("TORCH_MLU_OVERFLOW_CHECK", "0") not in ("", "0"):
    _C._mlu_setOverflowCheck(True)
