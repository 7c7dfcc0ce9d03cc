"""Building C++ extensions that run kernels on mlu: torch.utils.cpp_extension plus torch_mlu.

``MLUExtension`` is ``CppExtension`` with torch_mlu's public headers (``#include <csrc/torch_mlu.h>``),
``libtorch_mlu`` and its run-time path added; ``load`` and ``load_inline`` do the same for JIT builds.
mlu kernels are host C++ launched on an mlu stream (``torch_mlu::launch_kernel``), so there is no device
compiler and no device source type: sources are ``.cpp``. torch's own flags apply, C++20 included.

    from torch_mlu.utils.cpp_extension import BuildExtension, MLUExtension
    setup(name="my_ops", ext_modules=[MLUExtension("my_ops._C", ["my_ops.cpp"])],
          cmdclass={"build_ext": BuildExtension})
"""
import os

import torch.utils.cpp_extension as _torch_extension

import torch_mlu  # noqa: F401  (libtorch_mlu loaded and the device named before an extension loads)

__all__ = ["BuildExtension",  # noqa: F822  (module __getattr__, as torch does)
           "MLUExtension", "include_paths", "library_paths", "load", "load_inline"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INCLUDE = os.path.join(_PACKAGE, "include")
_LIB = os.path.join(_PACKAGE, "lib")
_DEVICE_SOURCES = (".cu", ".cuh", ".mlu", ".sycl")


def include_paths(device_type: str = "mlu") -> list[str]:
    """The include directories an extension needs: torch's, and for ``"mlu"`` torch_mlu's public headers."""
    return _torch_extension.include_paths("cpu") + ([_INCLUDE] if device_type == "mlu" else [])


def library_paths(device_type: str = "mlu") -> list[str]:
    """The library directories an extension links from: torch's, and for ``"mlu"`` libtorch_mlu's."""
    return _torch_extension.library_paths("cpu") + ([_LIB] if device_type == "mlu" else [])


def _check_sources(sources):
    device_sources = [str(s) for s in sources if str(s).endswith(_DEVICE_SOURCES)]
    if device_sources:
        raise ValueError(f"{device_sources}: mlu kernels are host C++ (.cpp files) launched on an mlu stream "
                         "with torch_mlu::launch_kernel (csrc/core/MLULaunch.h); there is no device compiler")


def MLUExtension(name, sources, *args, **kwargs):
    """A ``setuptools.Extension`` for C++ code using torch and torch_mlu: ``CppExtension`` with torch_mlu's
    include directory, ``libtorch_mlu`` and run-time paths to it and to torch. Build it with
    ``BuildExtension``; every keyword of ``CppExtension`` / ``setuptools.Extension`` applies."""
    _check_sources(sources)
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + [_INCLUDE]
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + [_LIB]
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["torch_mlu"]
    kwargs["runtime_library_dirs"] = list(kwargs.get("runtime_library_dirs", [])) + [
        _LIB, _torch_extension.TORCH_LIB_PATH]
    return _torch_extension.CppExtension(name, sources, *args, **kwargs)


def _ldflags(extra_ldflags):
    return list(extra_ldflags or []) + [f"-L{_LIB}", "-ltorch_mlu", f"-Wl,-rpath,{_LIB}",
                                        f"-Wl,-rpath,{_torch_extension.TORCH_LIB_PATH}"]


def load(name, sources, extra_cflags=None, extra_ldflags=None, extra_include_paths=None, build_directory=None,
         verbose=False, is_python_module=True, is_standalone=False, keep_intermediates=True):
    """``torch.utils.cpp_extension.load`` (a JIT build, cached under ``TORCH_EXTENSIONS_DIR``) for sources
    using torch_mlu. Returns the module, or with ``is_python_module=False`` the library's path after
    loading it into the process (its ``TORCH_LIBRARY`` ops appear under ``torch.ops``)."""
    _check_sources(sources)
    return _torch_extension.load(
        name, sources, extra_cflags=extra_cflags, extra_ldflags=_ldflags(extra_ldflags),
        extra_include_paths=list(extra_include_paths or []) + [_INCLUDE], build_directory=build_directory,
        verbose=verbose, with_cuda=False, with_sycl=False, is_python_module=is_python_module,
        is_standalone=is_standalone, keep_intermediates=keep_intermediates)


def load_inline(name, cpp_sources, functions=None, extra_cflags=None, extra_ldflags=None,
                extra_include_paths=None, build_directory=None, verbose=False, with_pytorch_error_handling=True,
                is_python_module=True, keep_intermediates=True, no_implicit_headers=False):
    """``torch.utils.cpp_extension.load_inline`` for sources using torch_mlu: ``functions`` get Python
    bindings; ``is_python_module=False`` loads a library of ``TORCH_LIBRARY`` ops and returns its path."""
    sources = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)  # torch edits the list
    return _torch_extension.load_inline(
        name, sources, functions=functions, extra_cflags=extra_cflags, extra_ldflags=_ldflags(extra_ldflags),
        extra_include_paths=list(extra_include_paths or []) + [_INCLUDE], build_directory=build_directory,
        verbose=verbose, with_cuda=False, with_sycl=False, with_pytorch_error_handling=with_pytorch_error_handling,
        is_python_module=is_python_module, keep_intermediates=keep_intermediates, use_pch=False,
        no_implicit_headers=no_implicit_headers)


def __getattr__(name):
    # torch resolves BuildExtension lazily (it imports setuptools); so does this module.
    if name == "BuildExtension":
        return _torch_extension.BuildExtension
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
