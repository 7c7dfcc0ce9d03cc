"""What to paste into a bug report: ``python -m torch_mlu.utils.collect_env``.

Prints the versions (torch_mlu, the torch it was built against and the one
running, Python, the OS), how the build was made, what the kernel library
runs with on this CPU (instruction set, AMX, threads), the devices and their
memory, and the environment variables that change torch_mlu's behaviour.
Like ``python -m torch.utils.collect_env``, and meant to be run beside it.
"""
import importlib.metadata
import os
import platform
import sys

# Variables that change what torch_mlu does (names, not values, are the contract).
_ENV_PREFIXES = ("MLU_", "TORCH_MLU_", "PYTORCH_MLU_")
_ENV_NAMES = ("TORCH_DEVICE_BACKEND_AUTOLOAD", "OMP_NUM_THREADS")
# Clients whose versions matter for reports (installed or not).
_CLIENTS = ("accelerate", "transformers", "peft", "diffusers", "deepspeed", "sentence-transformers", "numpy")


def _package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def get_env_info():
    """The report as a dict of sections, each a dict of name -> value."""
    import torch

    import torch_mlu
    from torch_mlu import _C, version

    info = {
        "versions": {
            "torch_mlu": torch_mlu.__version__,
            "git revision": version.git_version,
            "torch (running)": str(torch.__version__),
            "torch (built against)": version.torch_version,
            "python": sys.version.split()[0],
            "os": platform.platform(),
        },
        "build": {
            "build type": version.build_type,
            "compiler": version.cxx_compiler,
            "sanitizers": version.sanitizers or "none",
            "location": os.path.dirname(torch_mlu.__file__),
        },
        "kernels": dict(_C._kernel_config()),
    }
    devices = {"count": torch.mlu.device_count()}
    for d in range(devices["count"]):
        props = torch.mlu.get_device_properties(d)
        free, total = torch.mlu.mem_get_info(d)
        devices[f"mlu:{d}"] = (f"{props.name}, {props.multi_processor_count} cores, "
                               f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)")
    info["devices"] = devices
    info["environment"] = {k: v for k, v in sorted(os.environ.items())
                           if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}
    info["packages"] = {name: _package_version(name) or "not installed" for name in _CLIENTS}
    return info


def pretty_str(info):
    lines = []
    for section, values in info.items():
        lines.append(f"{section}:")
        if not values:
            lines.append("  (none)")
        for name, value in values.items():
            lines.append(f"  {name}: {value}")
    return "\n".join(lines)


def main():
    print(pretty_str(get_env_info()))


if __name__ == "__main__":
    main()
