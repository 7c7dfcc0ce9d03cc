"""The torch-free layers stay torch-free (DESIGN.md §2)."""
import os
import re

from conftest import REPO

TORCH_INCLUDE = re.compile(r'#\s*include\s*[<"](ATen|c10|torch)/')


def test_runtime_and_kernels_include_no_torch_header():
    offenders = []
    for layer in ("runtime", "kernels"):
        for root, _, files in os.walk(os.path.join(REPO, layer)):
            for name in files:
                path = os.path.join(root, name)
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        if TORCH_INCLUDE.search(line):
                            offenders.append(f"{os.path.relpath(path, REPO)}:{number}: {line.strip()}")
    assert offenders == [], "torch headers in torch-free layers:\n" + "\n".join(offenders)


def test_layer_check_detects_a_torch_include():
    assert TORCH_INCLUDE.search('#include <ATen/ATen.h>')
    assert TORCH_INCLUDE.search('#include "c10/core/Device.h"')
    assert not TORCH_INCLUDE.search('#include <mlu_runtime/queue.h>')
