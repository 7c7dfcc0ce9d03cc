"""Building and loading the C++ kernel modules Inductor generates for mlu.

A kernel module is Inductor's own C++ kernel (built with the CPU's compiler
options: the software MLU's cores are the host's) plus the torch_mlu header
``compiled_kernel_module.h``, which makes the module's Python entry point
enqueue the kernel on the current mlu stream instead of running it, and binds
the kernel's OpenMP regions to the device's compute threads (see the header
and Note [Compiled kernels are stream tasks] in
csrc/inductor/CompiledKernelLaunch.h). Modules are cached on disk like CPU
kernels (TORCHINDUCTOR_CACHE_DIR), keyed by their source, which carries a
digest of torch_mlu's Inductor code and headers (config.code_digest).
"""
import os

from torch._inductor.async_compile import AsyncCompile, get_compile_threads
from torch._inductor.codecache import CppPythonBindingsCodeCache, LambdaFuture
from torch._inductor.utils import clear_on_fresh_cache

from . import config

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
# The package's public C++ headers: mlu_kernels/table_math_avx512.h (Note [Compiled tanh is mlu's tanh]).
PACKAGE_INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
MODULE_HEADER = "torch_mlu/compiled_kernel_module.h"


def module_epilogue(kernel_name: str, host_scalar_positions=()) -> str:
    """The lines a kernel's source ends with to become an mlu kernel module (they also mark it as one).

    ``host_scalar_positions`` are the kernel parameters that point at 0-dim CPU tensors: the module copies
    their values into the launch (Note [Host scalars are read at launch] in compiled_kernel_module.h).
    """
    host_scalars = "".join(f", {i}" for i in host_scalar_positions)
    return (
        f"// torch_mlu kernel module, code {config.code_digest}\n"
        f'#define TORCH_MLU_KERNEL_NAME "{kernel_name}"\n'
        f"#define TORCH_MLU_HOST_SCALAR_PARAMS{host_scalars}\n"
        f'#include "{MODULE_HEADER}"\n'
    )


def is_mlu_kernel_module(source_code: str) -> bool:
    return f'#include "{MODULE_HEADER}"' in source_code


def _suffix_template() -> str:
    # Inductor's Python bindings, plus the torch_mlu API lookup when the module is imported.
    template = CppPythonBindingsCodeCache.suffix_template
    anchor = "PyObject* module = PyModule_Create(&py_module);"
    if anchor not in template:
        raise RuntimeError(
            "torch_mlu's Inductor backend does not recognise this torch's CppPythonBindingsCodeCache; "
            "torch_mlu supports the torch it was built for (see torch_mlu.version)"
        )
    lookup = "if (!torch_mlu_kernel_module::load_api()) {{ return nullptr; }}\n            "
    return template.replace(anchor, lookup + anchor)


@clear_on_fresh_cache
class MluKernelCodeCache(CppPythonBindingsCodeCache):
    """CppPythonBindingsCodeCache whose modules launch their kernel on the current mlu stream."""

    cache = {}
    call_entry_function = "torch_mlu_kernel_module::launch(TORCH_MLU_KERNEL_NAME, kernel, {}); Py_RETURN_NONE;"
    suffix_template = _suffix_template()

    @staticmethod
    def cache_clear() -> None:
        MluKernelCodeCache.cache.clear()

    @classmethod
    def load_pybinding_async(cls, argtypes, main_code, *args, extra_flags=(), **kwargs):
        flags = (*extra_flags, f"-I{INCLUDE_DIR}", f"-I{PACKAGE_INCLUDE_DIR}")
        return super().load_pybinding_async(argtypes, main_code, *args, extra_flags=flags, **kwargs)


class MluAsyncCompile(AsyncCompile):
    """The generated wrapper's ``async_compile``: mlu kernel modules go to MluKernelCodeCache."""

    def cpp_pybinding(self, argtypes, source_code):
        if not is_mlu_kernel_module(source_code):
            return super().cpp_pybinding(argtypes, source_code)
        if get_compile_threads() <= 1:
            return MluKernelCodeCache.load_pybinding(argtypes, source_code)
        get_result = MluKernelCodeCache.load_pybinding_async(argtypes, source_code, submit_fn=self.submit)
        return LambdaFuture(get_result)
