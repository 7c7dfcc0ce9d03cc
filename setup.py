"""Builds torch_mlu's C++ parts with CMake (see CMakeLists.txt).

Install with `pip install --no-build-isolation -e .`: build isolation would
pull a different torch than the one the extension must be compiled against.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("TORCH_MLU_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call([
                "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                f"-DPYTHON_EXECUTABLE={sys.executable}",
            ])
        jobs = os.environ.get("MAX_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs])
        built = os.path.join(ROOT, "torch_mlu")
        target = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        if os.path.abspath(target) != built:  # non-editable install: copy the outputs
            os.makedirs(os.path.join(target, "lib"), exist_ok=True)
            shutil.copy2(os.path.join(built, os.path.basename(self.get_ext_fullpath(ext.name))), target)
            # Written by the build, after setuptools collected the package's modules.
            shutil.copy2(os.path.join(built, "version.py"), target)
            for name in os.listdir(os.path.join(built, "lib")):
                shutil.copy2(os.path.join(built, "lib", name), os.path.join(target, "lib"))
            # The device monitor (copy2 keeps it executable), the public headers and find_package(TorchMLU).
            for folder in ("bin", "include", "share"):
                shutil.copytree(os.path.join(built, folder), os.path.join(target, folder), dirs_exist_ok=True)


# setuptools' scratch files go to build/wheel, beside (not among) CMake's.
setup(ext_modules=[Extension("torch_mlu._C", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build", "wheel")}})
