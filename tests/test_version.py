"""Build information and version checks: torch_mlu.__version__, torch.version.mlu,
get_git_version, the refusal of a torch other than the one the extension was
built against, and ``python -m torch_mlu.utils.collect_env``."""
import os
import re
import shutil

import torch

import torch_mlu
from torch_mlu import version
from torch_mlu.utils import collect_env

from conftest import REPO, TESTING_INSTALLED


def test_version_is_the_projects():
    assert torch_mlu.__version__ == version.__version__
    assert torch.version.mlu == torch_mlu.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", torch_mlu.__version__)
    if not TESTING_INSTALLED:
        with open(os.path.join(REPO, "pyproject.toml")) as f:
            assert f'version = "{torch_mlu.__version__}"' in f.read()


def test_build_information():
    assert version.torch_version.split("+")[0] == str(torch.__version__).split("+")[0]
    assert re.fullmatch(r"[0-9a-f]{40}|Unknown", torch_mlu.get_git_version())
    assert version.build_type and version.cxx_compiler
    assert isinstance(version.debug, bool)


def _package_with_torch_version(tmp_path, torch_version):
    """A copy of the package's Python files whose version.py names another torch."""
    package = tmp_path / "torch_mlu"
    shutil.copytree(os.path.dirname(torch_mlu.__file__), package,
                    ignore=shutil.ignore_patterns("*.so", "lib", "__pycache__"))
    text = (package / "version.py").read_text()
    (package / "version.py").write_text(
        re.sub(r'^torch_version = ".*"$', f'torch_version = "{torch_version}"', text, flags=re.M))
    return str(tmp_path)


def test_mismatched_torch_is_named_at_import(tmp_path, python):
    path = _package_with_torch_version(tmp_path, "2.12.1+cpu")
    result = python("import torch_mlu", env={"PYTHONPATH": path, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
                    cwd=path)
    assert result.returncode != 0
    assert "ImportError: torch_mlu" in result.stderr
    assert "was built against torch 2.12.1+cpu" in result.stderr
    assert f"but torch {torch.__version__} is installed" in result.stderr
    assert "pip install torch==2.12.1" in result.stderr


def test_mismatched_torch_through_autoload(tmp_path, python):
    path = _package_with_torch_version(tmp_path, "2.12.1+cpu")
    result = python("import torch", env={"PYTHONPATH": path}, cwd=path)
    assert result.returncode != 0
    assert "Failed to load the backend extension: torch_mlu" in result.stderr
    assert "was built against torch 2.12.1+cpu" in result.stderr


def test_unbuilt_package_says_so(tmp_path, python):
    path = _package_with_torch_version(tmp_path, "2.13.0")
    os.remove(os.path.join(path, "torch_mlu", "version.py"))
    # Without the editable install's finder, which would find version.py in the tree.
    code = """
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        import torch_mlu
    """
    result = python(code, env={"PYTHONPATH": path, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, cwd=path)
    assert result.returncode != 0
    assert "torch_mlu is not built" in result.stderr, result.stderr


def test_collect_env_report():
    info = collect_env.get_env_info()
    assert info["versions"]["torch_mlu"] == torch_mlu.__version__
    assert info["versions"]["torch (built against)"] == version.torch_version
    assert info["kernels"]["active_isa"] in ("baseline", "avx2", "avx512", "avx512bf16")
    assert info["kernels"]["threads"] >= 1
    assert info["devices"]["count"] == torch.mlu.device_count()
    free, total = torch.mlu.mem_get_info(0)
    assert f"{total / 2**30:.1f} GiB" in info["devices"]["mlu:0"]
    text = collect_env.pretty_str(info)
    assert "kernels:" in text and f"torch_mlu: {torch_mlu.__version__}" in text


def test_collect_env_command_reports_the_isa_cap(python):
    result = python("from torch_mlu.utils import collect_env; collect_env.main()",
                    env={"MLU_KERNELS_ISA": "baseline"})
    assert result.returncode == 0, result.stderr
    assert "active_isa: baseline" in result.stdout
    assert "MLU_KERNELS_ISA: baseline" in result.stdout  # the environment section
