"""Utilities around torch_mlu.

- ``python -m torch_mlu.utils.collect_env``: what a bug report needs.
- ``cmake_prefix_path``: where CMake's ``find_package(TorchMLU)`` finds torch_mlu (as
  ``torch.utils.cmake_prefix_path`` is for ``find_package(Torch)``).
- ``torch_mlu.utils.cpp_extension``: building C++ extensions with mlu kernels.
"""
import os

cmake_prefix_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "share", "cmake")
