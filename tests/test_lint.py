"""tools/lint.py, the first stage of `make test`: each rule passes on this checkout and fails on a made-up case.

The layering rule (runtime/ and kernels/ include no torch header) lived here before the lint stage ran it.
"""
import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("lint", f"{REPO}/tools/lint.py")
lint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lint)


@pytest.mark.parametrize("rule", ["layering", "hygiene", "trap-skips", "changed-lines", "docs-links"])
def test_the_checkout_passes(rule):
    result = subprocess.run([sys.executable, f"{REPO}/tools/lint.py", "--only", rule], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"lint {rule}: ok" in result.stdout


def test_torch_includes_are_recognised():
    assert lint.TORCH_INCLUDE.search('#include <ATen/ATen.h>')
    assert lint.TORCH_INCLUDE.search('#include "c10/core/Device.h"')
    assert lint.TORCH_INCLUDE.search('#  include <torch/extension.h>')
    assert not lint.TORCH_INCLUDE.search('#include <mlu_runtime/queue.h>')


def test_a_torch_include_in_the_runtime_fails(tmp_path, monkeypatch):
    (tmp_path / "runtime" / "src").mkdir(parents=True)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "runtime" / "src" / "bad.cpp").write_text("#include <c10/util/Exception.h>\n")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    assert lint.check_layering() == [
        "runtime/src/bad.cpp:1: torch header in a torch-free layer: #include <c10/util/Exception.h>"]


@pytest.mark.parametrize("path", [
    "examples/extension/build/temp.linux-x86_64-cpython-311/csrc/muladd.o",
    "examples/extension/build/lib/mlu_ext/__init__.py",
    "kernels/build-tsan/CMakeCache.txt",
    "a/b/.ninja_log", "a/.ninja_deps", "x/build.ninja", "CMakeFiles/foo.dir/x.cpp.o",
    "torch_mlu/_C.cpython-311-x86_64-linux-gnu.so", "tests/__pycache__/conftest.cpython-311.pyc", "dist/t.whl",
])
def test_build_output_is_recognised(path):
    assert lint.BUILD_OUTPUT.search(path)


@pytest.mark.parametrize("path", ["tools/build_wheel.sh", "docs/building.md", "csrc/core/MLUStream.cpp",
                                  "kernels/src/gemm/gemm.h", "examples/extension/setup.py"])
def test_sources_are_not_build_output(path):
    assert not lint.BUILD_OUTPUT.search(path)


def test_a_test_reading_the_trap_variable_fails(tmp_path, monkeypatch):
    (tmp_path / "tests").mkdir()
    variable = lint.TRAP_VARIABLE
    (tmp_path / "tests" / "test_x.py").write_text(
        f'import os, pytest\npytestmark = pytest.mark.skipif(os.environ.get("{variable}") == "1", reason="x")\n')
    (tmp_path / "tests" / "conftest.py").write_text(f'TRAPPED = "{variable}"\n')
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    problems = lint.check_trap_skips()
    assert len(problems) == 1 and problems[0].startswith(f"tests/test_x.py:2: reads {variable}")


def test_a_broken_relative_link_in_a_tracked_page_fails(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    (tmp_path / "docs" / "b.md").write_text(
        "[ok](a.md#a) [up](../README.md) [web](https://example.com) [top](#a) `[code](x.md)`\n"
        "```\n[fenced](y.md)\n```\n"
        "[gone](old.md#section) and\n[ref]: ../missing/\n")
    (tmp_path / "README.md").write_text("[docs](docs/b.md)\n")
    (tmp_path / "untracked.md").write_text("[not checked](nowhere.md)\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "docs", "README.md")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    assert lint.check_doc_links() == ["docs/b.md:5: the link to old.md#section names no file",
                                      "docs/b.md:6: the link to ../missing/ names no file"]


def git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True, timeout=60)


def test_changed_lines_are_held_to_the_style_and_older_lines_are_not(tmp_path, monkeypatch):
    """Lines from before .clang-format came in are left alone; lines changed since are checked."""
    old_cpp = "int   old_style( int x ){return x;}\n"
    (tmp_path / "a.cpp").write_text(old_cpp)
    (tmp_path / "a.py").write_text("x = 1  # " + "o" * 130 + "\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "before")
    (tmp_path / ".clang-format").write_text(open(f"{REPO}/.clang-format").read())
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "style")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    assert lint.check_changed_lines() == []  # old lines only

    (tmp_path / "a.cpp").write_text(old_cpp + "int new_good(int x) { return x; }\n")
    (tmp_path / "a.py").write_text((tmp_path / "a.py").read_text() + "y = 2\n")
    assert lint.check_changed_lines() == []  # new lines in style

    (tmp_path / "a.cpp").write_text(old_cpp + "int   new_bad( int x ){return x;}\n")
    (tmp_path / "a.py").write_text((tmp_path / "a.py").read_text() + "z = 3  # " + "n" * 130 + "\n")
    problems = lint.check_changed_lines()
    assert any(p.startswith("a.py:3: 139 columns") for p in problems), problems
    assert any(p.startswith("a.cpp: line 2 is not formatted") for p in problems), problems
