"""The math functions mlu's C++ kernels take from mlu's kernel library (Note [Compiled tanh is mlu's tanh] in
include/torch_mlu/compiled_math.h).

Inductor's C++ code generator writes each vector op as the string its
``CppVecOverrides`` returns (``x.tanh()``); :class:`MluCppKernelProxy` gives
mlu's kernels overrides that write ``torch_mlu_compiled_math::tanh(x)`` for a
float vector instead, and everything else as Inductor does.
"""
import torch
from torch._inductor.codegen.cpp import (
    CppKernelProxy,
    CppTile2DKernel,
    CppTile2DOverrides,
    CppVecKernel,
    CppVecOverrides,
)
from torch._inductor.codegen.cpp_utils import CppCSEVariable

INCLUDE_LINE = '#include "torch_mlu/compiled_math.h"'
_PREFIX_LINE = "#include <torch/csrc/inductor/cpp_prefix.h>"


def with_mlu_math(src_code: str) -> str:
    """A kernel's source with mlu's math header included right after Inductor's prefix (which it builds on)."""
    if _PREFIX_LINE not in src_code:
        raise RuntimeError(
            "torch_mlu's Inductor backend does not recognise this torch's C++ kernel source (no cpp_prefix.h "
            "include); torch_mlu supports the torch it was built for (see torch_mlu.version)"
        )
    return src_code.replace(_PREFIX_LINE, f"{_PREFIX_LINE}\n{INCLUDE_LINE}", 1)


def _use_mlu_math(overrides):
    # CppVecOverrides.__new__ sets each op on the instance, wrapped to fall back to scalar code for scalar inputs,
    # so mlu's op replaces the instance's and hands everything that is not a float vector to Inductor's.
    inductor_tanh = overrides.tanh

    def tanh(x):
        if isinstance(x, CppCSEVariable) and x.is_vec and x.dtype == torch.float32:
            return f"torch_mlu_compiled_math::tanh({x})"
        return inductor_tanh(x)

    overrides.tanh = tanh
    return overrides


class MluCppVecOverrides(CppVecOverrides):
    def __new__(cls, *args, **kwargs):
        return _use_mlu_math(super().__new__(cls, *args, **kwargs))


class MluCppTile2DOverrides(CppTile2DOverrides):
    def __new__(cls, *args, **kwargs):
        return _use_mlu_math(super().__new__(cls, *args, **kwargs))


class MluCppVecKernel(CppVecKernel):
    overrides = MluCppVecOverrides


class MluCppTile2DKernel(CppTile2DKernel):
    overrides = MluCppTile2DOverrides


class MluCppKernelProxy(CppKernelProxy):
    vec_kernel_cls = MluCppVecKernel
    tile2d_kernel_cls = MluCppTile2DKernel
