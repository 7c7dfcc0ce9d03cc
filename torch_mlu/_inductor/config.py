"""Settings of the mlu Inductor backend, registered as its device_custom_config.

Inductor hashes every backend's custom config into its FX graph cache keys, so
`code_digest` (of the code that writes mlu's wrapper and kernel modules, and
of the kernel library headers those modules include)
keeps a compiled graph cached by one torch_mlu from being reused by another.
"""
import hashlib
import os
import sys

from torch.utils._config_module import install_config_module


def _code_digest() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(folder, name) for folder, _, files in sorted(os.walk(here)) for name in sorted(files)
             if name.endswith((".py", ".h"))]
    # The kernel library's headers that compiled_math.h includes.
    library = os.path.join(os.path.dirname(here), "include", "mlu_kernels")
    paths += [os.path.join(library, name) for name in ("polynomial_tables.h", "table_math_avx512.h")]
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read())
    return digest.hexdigest()[:16]


code_digest: str = _code_digest()

install_config_module(sys.modules[__name__])
