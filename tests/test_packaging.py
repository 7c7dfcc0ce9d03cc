"""The wheel carries everything an installed torch_mlu needs.

`pip wheel` of the tree must contain every Python package under torch_mlu/ (a hand-written package list once
left torch_mlu.mlu.amp out, and `import torch` then failed to autoload the backend), both libraries, and the
torch.backends entry point that autoloads torch_mlu, and the torch_mlu_convert console script.
"""
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.slow  # builds the wheel

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_wheel_has_every_package_library_and_the_autoload_entry_point(tmp_path):
    # setuptools' scratch copies and file list (stale ones would hide a missing package)
    shutil.rmtree(REPO / "build" / "wheel", ignore_errors=True)
    shutil.rmtree(REPO / "torch_mlu.egg-info", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w",
                    str(tmp_path), str(REPO)], check=True, timeout=900, capture_output=True)
    wheel = next(tmp_path.glob("torch_mlu-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {p.relative_to(REPO).as_posix() for p in (REPO / "torch_mlu").rglob("__init__.py")}
    assert packages and not packages - names, f"packages missing from the wheel: {sorted(packages - names)}"
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "torch_mlu").rglob("*.py")}
    assert not modules - names, f"modules missing from the wheel: {sorted(modules - names)}"
    assert "torch_mlu/lib/libtorch_mlu.so" in names
    assert any(n.startswith("torch_mlu/_C.") and n.endswith(".so") for n in names), sorted(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[torch.backends]" in text and "torch_mlu = torch_mlu:_autoload" in text, text
    assert "[console_scripts]" in text and "torch_mlu_convert = torch_mlu.utils.gpu2mlu:main" in text, text
