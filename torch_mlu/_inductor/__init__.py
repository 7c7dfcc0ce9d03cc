"""torch.compile on mlu: Inductor's backend for the device (see codegen.py, codecache.py).

Imported lazily, the first time Inductor compiles (it looks up
``torch.mlu.Scheduling`` and friends; torch_mlu/mlu/__init__.py forwards them
here), and registered here explicitly as well, so the order of first uses
does not matter.
"""
from torch._inductor import config
from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

from .codegen import MluCppScheduling, MluCppWrapperCodegen, MluDeviceOpOverrides, MluPythonWrapperCodegen

# The names Inductor's init_backend_registration() asks the device module for.
Scheduling = MluCppScheduling
PythonWrapperCodegen = MluPythonWrapperCodegen
CppWrapperCodegen = MluCppWrapperCodegen
# WrapperFxCodegen (config.fx_wrapper) is Inductor's own.

register_device_op_overrides("mlu", MluDeviceOpOverrides())
register_backend_for_device("mlu", MluCppScheduling, MluPythonWrapperCodegen, MluCppWrapperCodegen, WrapperFxCodegen)

# Note [Inductor's view of mlu]
# Inductor 2.13 knows its devices by name: "cpu" generates C++, every other
# device the backend in config.cuda_backend (Triton). It asks which one
# (torch._inductor.utils.get_current_backend) when it propagates dtypes through
# a kernel's ops, upcasts half types and picks fusion passes, so on mlu it must
# hear "cpp", the language of MluCppScheduling. cuda_backend is read only for
# devices that are not cpu, xpu, mps or tpu, so in this CUDA-less torch it
# names mlu's backend alone.
config.cuda_backend = "cpp"

# Note [SIMD-only fusion passes]
# Inductor's scheduler runs three loop-rewriting passes while fusing on every
# device that is not "cpu", assuming such a device generates Triton (SIMD)
# kernels; on C++ kernels they fail (they read SIMD node groups). mlu nodes use
# the C++ scheduling, so the passes are turned off; CPU graphs never ran them,
# and this process has no Triton device, so nothing else changes.
config.loop_ordering_after_fusion = False
config.loop_reindexing_after_fusion = False
config.loop_index_inversion_in_fusion = False
