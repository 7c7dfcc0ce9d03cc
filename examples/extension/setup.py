"""An out-of-tree extension with an mlu kernel: the custom op mlu_ext::muladd (csrc/muladd.cpp).

    pip install --no-build-isolation .      # build isolation would bring another torch
    python -c "import torch, mlu_ext; print(mlu_ext.muladd(torch.ones(3, device='mlu'), torch.ones(3, device='mlu'), 1))"
"""
from setuptools import setup

from torch_mlu.utils.cpp_extension import BuildExtension, MLUExtension

setup(
    name="mlu_ext",
    version="0.1.0",
    packages=["mlu_ext"],
    ext_modules=[MLUExtension("mlu_ext._C", ["csrc/muladd.cpp"])],
    cmdclass={"build_ext": BuildExtension},
)
