"""The `mlu-smi` and `cnmon` console scripts: torch_mlu's device monitor.

The monitor is a small executable shipped in torch_mlu/bin (runtime/tools/mlu_smi.cpp). This
launcher is a top-level module so that starting it does not import torch_mlu, and with it torch:
it only locates the package.
"""
import importlib.util
import os
import sys


def main() -> None:
    spec = importlib.util.find_spec("torch_mlu")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("mlu-smi: the torch_mlu package is not installed in this environment")
    binary = os.path.join(list(spec.submodule_search_locations)[0], "bin", "mlu-smi")
    if not os.access(binary, os.X_OK):
        sys.exit(f"mlu-smi: {binary} is missing: torch_mlu was not built completely; rebuild or reinstall it")
    os.execv(binary, [os.path.basename(sys.argv[0])] + sys.argv[1:])


if __name__ == "__main__":
    main()
