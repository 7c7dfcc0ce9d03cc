"""Settings of the mlu Inductor backend, registered as its device_custom_config.

Inductor hashes every backend's custom config into its FX graph cache keys, so
`code_digest` (of the code that writes mlu's wrapper and kernel modules, and
of the kernel library headers those modules include)
keeps a compiled graph cached by one torch_mlu from being reused by another,
and `vec_isa` keeps one compiled for another vector ISA from being reused.

Note [Cached graphs name their vector ISA]
A cached graph holds its kernels' C++ source, and that source is written for
one vector ISA (Inductor's pick_vec_isa: the host's best, or the one
ATEN_CPU_CAPABILITY names): its loops step by that ISA's lane count, and
at::vec types change width with the compiler flags. Inductor 2.13 keys its FX
graph cache on neither, and on a hit it compiles the stored source with the
current host's flags: AVX-512 source built for AVX2 steps 16 lanes and writes
8 (a saved arange came back half unwritten, read as INT64_MAX in deterministic
mode). A cache directory shared by hosts of different kinds, or a run with
ATEN_CPU_CAPABILITY forced, then reuses code that computes wrong values. The
ISA and its flags are hashed here, so each ISA gets entries of its own.
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


def _vec_isa() -> str:
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    isa = pick_vec_isa()
    if not isa:  # no vector ISA (ATEN_CPU_CAPABILITY=default, or none usable): scalar code
        return "none"
    return f"{isa} x{isa.nelements()} {isa.build_arch_flags()}"


code_digest: str = _code_digest()
vec_isa: str = _vec_isa()

install_config_module(sys.modules[__name__])
