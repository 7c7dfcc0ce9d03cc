"""tools/lint.py, the first stage of `make test`: each rule passes on this checkout and fails on a made-up case.

The layering rule (runtime/ and kernels/ include no torch header) lived here before the lint stage ran it.
"""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("lint", f"{REPO}/tools/lint.py")
lint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lint)


@pytest.mark.parametrize("rule", ["layering", "hygiene", "trap-skips", "device-pointers", "changed-lines",
                                  "docs-links"])
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


ACCESSOR = "device_ptr<T>(tensor) (device_ptr(ptr) for a raw pointer) from csrc/core/MLULaunch.h"


def test_the_checkout_translates_every_device_pointer():
    assert lint.check_device_pointers() == []


def test_a_tensor_pointer_inside_a_closure_fails():
    text = ("void f(const at::Tensor& x, at::Tensor& out) {\n"
            "  float* o = torch_mlu::device_ptr<float>(out);\n"
            "  const float* p = x.data_ptr<float>();  // outside: host code may hold it\n"
            "  launch_kernel(0, \"f(x)\", [=](mlu::TaskContext& ctx) {\n"
            "    // x.data_ptr() in a comment, and in a string:\n"
            "    if (o == nullptr) ctx.fail(\"no data_ptr()\");\n"
            "    o[0] = x.data_ptr<float>()[0];\n"
            "    o[1] = *static_cast<const float*>(\n"
            "        x.const_data_ptr());\n"
            "  });\n"
            "  launch_small_kernel(0, \"g\", [=] { o[2] = x.mutable_data_ptr<float>()[0]; });\n"
            "  o = out.data_ptr<float>();\n"
            "}\n")
    problems = lint.device_pointer_problems("csrc/aten/ops/F.cpp", text)
    assert [p.split(": ")[0] for p in problems] == ["csrc/aten/ops/F.cpp:7", "csrc/aten/ops/F.cpp:9",
                                                    "csrc/aten/ops/F.cpp:11"], problems
    assert "inside a launch_kernel closure" in problems[0] and f"capture {ACCESSOR}" in problems[0]
    assert "inside a launch_small_kernel closure" in problems[2]


def test_a_data_ptr_injected_into_a_real_closure_fails():
    """The rule reads the closures as the op files write them: one injected data_ptr in each file's first
    launch_kernel lambda is found, on its line."""
    checked = 0
    for path in sorted(pathlib.Path(REPO, "csrc", "aten").rglob("*.cpp")):
        text = path.read_text()
        code = lint.code_only(text)
        braces = [code.find("{", launch.end(), end) for launch, end in lint.launch_calls(code)]
        brace = next((b for b in braces if b >= 0), -1)
        if brace < 0:
            continue
        injected = text[:brace + 1] + " (void)self.data_ptr<float>();" + text[brace + 1:]
        name = str(path.relative_to(REPO))
        assert lint.device_pointer_problems(name, text) == []
        problems = lint.device_pointer_problems(name, injected)
        assert problems == [p for p in problems if p.startswith(f"{name}:{text.count(chr(10), 0, brace) + 1}: ")]
        assert len(problems) == 1, problems
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("line, spelling", [
    ("void* p = mlu::mluDevicePointer(t.data_ptr());", "mluDevicePointer"),
    ("auto* p = static_cast<float*>(kernel_data(t));", "kernel_data"),
    ("const float* p = torch_mlu::device_data<const float>(t);", "device_data"),
])
def test_the_other_spellings_fail_outside_the_allowlist(line, spelling):
    problems = lint.device_pointer_problems("csrc/aten/ops/F.cpp", f"#include <x.h>\n{line}\n")
    assert len(problems) == 1 and problems[0].startswith(f"csrc/aten/ops/F.cpp:2: {spelling} ")
    assert f"use {ACCESSOR}" in problems[0]
    assert lint.device_pointer_problems("csrc/aten/ops/F.cpp", f"// {line}\n") == []  # a comment
    assert lint.device_pointer_problems("runtime/src/memcpy.cpp", f"{line}\n") == []
    assert lint.device_pointer_problems("csrc/core/MLULaunch.h", f"{line}\n") == []


def test_including_host_trap_fails_outside_the_allowlist():
    for include in ("#include <mlu_runtime/host_trap.h>", '#include "mlu_runtime/host_trap.h"'):
        problems = lint.device_pointer_problems("csrc/aten/ops/F.cpp", f"{include}\n")
        assert len(problems) == 1 and problems[0].startswith("csrc/aten/ops/F.cpp:1: includes mlu_runtime/host_trap.h")
        assert lint.device_pointer_problems("runtime/src/host_trap.cpp", f"{include}\n") == []


def test_every_allowed_file_has_a_reason_and_exists():
    for path, reason in lint.DEVICE_POINTER_ALLOWED.items():
        assert reason.strip() and pathlib.Path(REPO, path).exists(), path


def test_the_rule_reads_a_tree_outside_git(tmp_path, monkeypatch):
    (tmp_path / "csrc" / "aten").mkdir(parents=True)
    (tmp_path / "csrc" / "aten" / "bad.cpp").write_text("void* p = mlu::mluDevicePointer(q);\n")
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "ok.cpp").write_text("void* p = mlu::mluDevicePointer(q);\n")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    problems = lint.check_device_pointers()
    assert len(problems) == 1 and problems[0].startswith("csrc/aten/bad.cpp:1: mluDevicePointer")


def test_a_moved_file_keeps_its_old_lines_unchecked(tmp_path, monkeypatch):
    """git mv since .clang-format came in: only the lines edited with the move are new."""
    old_cpp = "int   old_style( int x ){return x;}\nint   other( int x ){return x;}\n"
    (tmp_path / "a.cpp").write_text(old_cpp)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "before")
    (tmp_path / ".clang-format").write_text(open(f"{REPO}/.clang-format").read())
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "style")
    (tmp_path / "family").mkdir()
    git(tmp_path, "mv", "a.cpp", "family/a.cpp")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    assert lint.check_changed_lines() == []

    (tmp_path / "family" / "a.cpp").write_text(old_cpp.replace("other( int x )", "other2( int x )"))
    problems = lint.check_changed_lines()
    assert problems and problems[0].startswith("family/a.cpp: line 2 is not formatted"), problems


def test_vendored_code_keeps_its_style(tmp_path, monkeypatch):
    (tmp_path / "a.cpp").write_text("int a;\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "before")
    (tmp_path / ".clang-format").write_text(open(f"{REPO}/.clang-format").read())
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "style")
    vendored = tmp_path / lint.VENDORED[0] / "lib"
    vendored.mkdir(parents=True)
    (vendored / "upstream.h").write_text("int   upstream_style( int x ){return x;}\n")
    (tmp_path / "mine.cpp").write_text("int   mine( int x ){return x;}\n")
    git(tmp_path, "add", ".")
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    problems = lint.check_changed_lines()
    assert [p.split(":")[0] for p in problems] == ["mine.cpp"], problems
