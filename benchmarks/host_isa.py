"""The instruction sets a benchmark ran under, and forcing a narrower one on both sides.

A host's widest vector ISA picks the code paths of both sides of every comparison: our kernels
(`MLU_KERNELS_ISA`; `MLU_KERNELS_AMX` for the AMX products), ATen's CPU kernels (`ATEN_CPU_CAPABILITY`), oneMKL's
(`MKL_ENABLE_INSTRUCTIONS`, which the CPU's transcendental functions and products go through) and oneDNN's
(`ONEDNN_MAX_CPU_ISA`, behind both sides' convolutions and our bfloat16 products). `--isa avx2` on an AVX-512 host
caps all of them, so the run measures what an AVX2-only host runs; capping only ours and ATen's would leave the
CPU side's MKL on AVX-512 and flatter it.
The caps are read at start-up, so `force_isa` re-executes the benchmark with them set before torch loads.

Caps per name (each library's own spelling; `native` sets none):
"""

import os
import sys

CAPS = {
    # An AVX2-only host (AMD EPYC without AVX-512): every side capped to AVX2.
    "avx2": {"MLU_KERNELS_ISA": "avx2", "MLU_KERNELS_AMX": "0", "ATEN_CPU_CAPABILITY": "avx2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    # An AVX-512 host without AMX (AMD with AVX-512): AVX-512 and its BF16 instructions kept, AMX off on both
    # sides (ours and oneDNN's; ATen's own kernels and MKL's float paths do not use AMX).
    "avx512": {"MLU_KERNELS_AMX": "0", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
    "native": {},
}
__doc__ += "".join(f"\n- {name}: {caps or 'none'}" for name, caps in CAPS.items()) + "\n"


def force_isa(name):
    """Re-executes this process with the caps of `name` in its environment, unless they are set already."""
    if name not in CAPS:
        raise SystemExit(f"--isa {name}: not one of {', '.join(sorted(CAPS))}")
    caps = CAPS[name]
    if all(os.environ.get(k) == v for k, v in caps.items()):
        return
    if "torch" in sys.modules:
        raise RuntimeError("force_isa must run before torch is imported: the caps are read when it loads")
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **caps})


def force_isa_from_argv(argv=None):
    """force_isa for a command line's `--isa NAME` (or `--isa=NAME`), if it has one: call before importing torch."""
    argv = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(argv):
        if arg == "--isa" and i + 1 < len(argv):
            return force_isa(argv[i + 1])
        if arg.startswith("--isa="):
            return force_isa(arg.split("=", 1)[1])


def add_isa_argument(parser):
    parser.add_argument("--isa", choices=sorted(CAPS), default="native",
                        help="cap every side's instruction set (benchmarks/host_isa.py): avx2 measures what an "
                             "AVX2-only host runs")


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_kind():
    """The host's kind by its widest vector ISA: 'avx512+amx', 'avx512', 'avx2' or 'older'."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return "avx512+amx" if "amx_tile" in flags else "avx512"
    return "avx2" if "avx2" in flags else "older"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def isa_report():
    """What ran: the host, the caps in force and the paths each side picked (torch and torch_mlu loaded)."""
    import torch
    from torch_mlu import _C

    kernels = dict(_C._kernel_config())
    return {
        "host_kind": host_kind(),
        "cpu_model": cpu_model(),
        "caps": {k: os.environ[k] for k in CAPS["avx2"] if k in os.environ and os.environ[k]},
        "mlu_kernels_isa": kernels["active_isa"],
        "mlu_amx": bool(kernels["amx_usable"]) and kernels["active_isa"].startswith("avx512"),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def isa_label(report):
    """A short name of the variant measured: 'avx2 (forced on avx512+amx)', 'avx512+amx', ..."""
    active = report["mlu_kernels_isa"]
    if report["caps"]:
        kind = "avx512" if active.startswith("avx512") else active
        return f"{kind} (forced on {report['host_kind']})"
    return report["host_kind"]
