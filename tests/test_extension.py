"""Building on torch_mlu: the example extension (examples/extension) built with setup.py and with load_inline,
torch_mlu.utils.cpp_extension, the installed headers and find_package(TorchMLU), and the libtorch C++
program (examples/cpp).

Each build runs in a fresh process (an op namespace can be registered once per process), and the checks run
there too, against the CPU kernel of the same op.
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import torch_mlu
import torch_mlu.utils
from torch_mlu.utils import cpp_extension

from conftest import REPO, run_python

pytestmark = pytest.mark.slow  # builds extensions and programs

EXAMPLE = pathlib.Path(REPO) / "examples" / "extension"

# Run after torch.ops.mlu_ext.muladd is registered.
CHECKS = """
import torch
op = torch.ops.mlu_ext.muladd
torch.manual_seed(0)
for device in ("mlu:0", "mlu:1"):
    a = torch.randn(300, 70, requires_grad=True)
    b = torch.randn(300, 70, requires_grad=True)
    am = a.detach().to(device).requires_grad_()
    bm = b.detach().t().contiguous().to(device).t().requires_grad_()  # not contiguous
    out, ref = op(am, bm, 0.25), op(a, b, 0.25)
    assert out.device == torch.device(device), out.device
    torch.testing.assert_close(out.cpu(), ref, rtol=0, atol=0)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    torch.testing.assert_close(am.grad.cpu(), a.grad)
    torch.testing.assert_close(bm.grad.cpu(), b.grad)

# The kernel runs on the current stream, in order after what is queued there.
side = torch.mlu.Stream()
x, y = torch.randn(1 << 16, device="mlu"), torch.randn(1 << 16, device="mlu")
with torch.mlu.stream(side):
    torch.mlu._sleep(200_000_000)
    out = op(x, y, -1.0)
    assert not side.query()
side.synchronize()
torch.testing.assert_close(out.cpu(), x.cpu() * y.cpu() - 1.0)

compiled = torch.compile(lambda p, q: torch.relu(op(p, q, 2.0)) * 3, fullgraph=True)
torch.testing.assert_close(compiled(x, y).cpu(), torch.relu(x.cpu() * y.cpu() + 2.0) * 3)
# opcheck's autograd-registration test knows only the CPU and CUDA devices: on mlu, the others.
torch.library.opcheck(op.default, (torch.randn(5, 3, device="mlu", requires_grad=True),
                                   torch.randn(5, 3, device="mlu", requires_grad=True), 1.5),
                      test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
torch.library.opcheck(op.default, (torch.randn(5, 3, requires_grad=True), torch.randn(5, 3, requires_grad=True), 1.5))
for bad, message in [((x.double(), y.double()), "expected float32 tensors"),
                     ((x, y[:5]), "must have the same shape"),
                     ((x, y.to("mlu:1")), "must be on the same device")]:
    try:
        op(*bad, 1.0)
    except RuntimeError as e:
        assert message in str(e), e
    else:
        raise AssertionError(f"no error for {message}")
print("checks passed")
"""


def run_checked(code, **kwargs):
    result = run_python(code, timeout=600, **kwargs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checks passed" in result.stdout
    return result


def test_setup_py_build(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                            "--target", str(site), str(source)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout + build.stderr
    library = next((site / "mlu_ext").glob("_C*.so"))
    linked = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    assert "libtorch_mlu.so =>" in linked and "not found" not in linked, linked
    run_checked("import sys; sys.path.insert(0, %r)\nimport mlu_ext\n" % str(site) + CHECKS
                + "\nimport torch\nassert torch.equal(mlu_ext.muladd(torch.ones(2), torch.ones(2), 1), 2 * torch.ones(2))\n")


def test_load_inline(tmp_path):
    code = f"""
from torch_mlu.utils.cpp_extension import load_inline
path = load_inline("mlu_ext_inline", open({str(EXAMPLE / "csrc" / "muladd.cpp")!r}).read(),
                   is_python_module=False, build_directory={str(tmp_path)!r})
assert path.endswith("mlu_ext_inline.so"), path
""" + CHECKS
    run_checked(code)


# A library of ops for load(): light headers (no torch/extension.h), so it builds in seconds.
STREAM_OPS = r"""
#include <torch/library.h>
#include <csrc/core/MLUFunctions.h>
#include <csrc/core/MLUGuard.h>
#include <csrc/core/MLUStream.h>

// The current stream's id on `device` while a pool stream is made current in C++.
int64_t pool_stream_id(int64_t device) {
  torch_mlu::MLUStreamGuard guard(torch_mlu::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device)));
  return torch_mlu::getCurrentMLUStream(static_cast<c10::DeviceIndex>(device)).id();
}
int64_t device_count() { return torch_mlu::device_count(); }

TORCH_LIBRARY(mlu_load_test, m) {
  m.def("pool_stream_id(int device) -> int", &pool_stream_id);
  m.def("device_count() -> int", &device_count);
}
"""


def test_load(tmp_path):
    source = tmp_path / "stream_ops.cpp"
    source.write_text(STREAM_OPS)
    code = f"""
import torch
from torch_mlu.utils.cpp_extension import load
path = load("mlu_load_test", [{str(source)!r}], is_python_module=False, build_directory={str(tmp_path)!r})
assert torch.ops.mlu_load_test.device_count() == torch.mlu.device_count() == 2
ids = {{torch.ops.mlu_load_test.pool_stream_id(1) for _ in range(3)}}
assert len(ids) == 3 and 0 not in ids, ids  # round-robin over the pool, never the default stream
assert torch.mlu.current_stream(1).stream_id == 0  # the guard restored it
print("checks passed")
"""
    run_checked(code)


def test_paths_and_cmake_files():
    include = pathlib.Path(torch_mlu.__file__).parent / "include"
    assert str(include) in cpp_extension.include_paths()
    assert str(include) not in cpp_extension.include_paths("cpu")
    for header in ["csrc/torch_mlu.h", "csrc/core/MLUStream.h", "csrc/core/MLUGuard.h", "csrc/core/MLULaunch.h",
                   "mlu_runtime/queue.h", "mlu_kernels/parallel.h"]:
        assert (include / header).is_file(), header
    lib = pathlib.Path(torch_mlu.__file__).parent / "lib"
    assert str(lib) in cpp_extension.library_paths() and (lib / "libtorch_mlu.so").is_file()
    config = pathlib.Path(torch_mlu.utils.cmake_prefix_path) / "TorchMLU" / "TorchMLUConfig.cmake"
    assert "torch_mlu::torch_mlu" in config.read_text()
    assert (config.parent / "TorchMLUConfigVersion.cmake").is_file()
    with pytest.raises(ValueError, match="host C[+][+]"):
        cpp_extension.MLUExtension("x._C", ["kernel.cu"])
    extension = cpp_extension.MLUExtension("x._C", ["x.cpp"], libraries=["m"])
    assert extension.libraries[:2] == ["m", "torch_mlu"] and str(include) in extension.include_dirs
    assert str(lib) in extension.runtime_library_dirs
    assert cpp_extension.BuildExtension is __import__("torch.utils.cpp_extension").utils.cpp_extension.BuildExtension


def test_cpp_program(tmp_path):
    """examples/cpp: a libtorch program found through find_package(TorchMLU) trains on mlu without Python."""
    import torch

    prefix = f"{torch_mlu.utils.cmake_prefix_path};{torch.utils.cmake_prefix_path}"
    build = tmp_path / "build"
    for command in (["cmake", "-S", str(pathlib.Path(REPO) / "examples" / "cpp"), "-B", str(build), "-G", "Ninja",
                     f"-DCMAKE_PREFIX_PATH={prefix}"],
                    ["cmake", "--build", str(build)]):
        step = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert step.returncode == 0, step.stdout + step.stderr
    # No Python in the program: nothing of torch_mlu's Python side may be needed.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    run = subprocess.run([str(build / "train_mlu")], capture_output=True, text=True, timeout=600, env=environment)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "mlu devices: 2" in run.stdout
    assert "learned: yes, agrees with the CPU: yes" in run.stdout
    linked = subprocess.run(["ldd", str(build / "train_mlu")], capture_output=True, text=True).stdout
    assert "libtorch_mlu.so" in linked and "libpython" not in linked and "torch_python" not in linked
