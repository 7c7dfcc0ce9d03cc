"""torch.compile on mlu: Inductor's backend for the device (see codegen.py, codecache.py).

Imported lazily, the first time Inductor compiles (it looks up
``torch.mlu.Scheduling``; torch_mlu/mlu/__init__.py forwards it here), and
registered here, with the config Inductor hashes into its cache keys.
"""
from torch._inductor import config as inductor_config
from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

from . import config as mlu_config
from .codegen import MluCppScheduling, MluCppWrapperCodegen, MluDeviceOpOverrides, MluPythonWrapperCodegen

# Names torch.mlu forwards (see torch_mlu/mlu/__init__.py for why not CppWrapperCodegen).
Scheduling = MluCppScheduling
PythonWrapperCodegen = MluPythonWrapperCodegen
# WrapperFxCodegen (config.fx_wrapper) is Inductor's own.

register_device_op_overrides("mlu", MluDeviceOpOverrides())
register_backend_for_device("mlu", MluCppScheduling, MluPythonWrapperCodegen, MluCppWrapperCodegen, WrapperFxCodegen,
                            device_custom_config=mlu_config)

# Note [Inductor's view of mlu]
# Inductor 2.13 knows its devices by name: "cpu" generates C++, every other
# device the backend in config.cuda_backend (Triton). It asks which one
# (torch._inductor.utils.get_current_backend) when it propagates dtypes through
# a kernel's ops, upcasts half types and picks fusion passes, so on mlu it must
# hear "cpp", the language of MluCppScheduling. cuda_backend is read only for
# devices that are not cpu, xpu, mps or tpu, so in this CUDA-less torch it
# names mlu's backend alone.
inductor_config.cuda_backend = "cpp"

# Note [SIMD-only fusion passes]
# Inductor's scheduler runs three loop-rewriting passes while fusing on every
# device that is not "cpu", assuming such a device generates Triton (SIMD)
# kernels; on C++ kernels they fail (they read SIMD node groups). mlu nodes use
# the C++ scheduling, so the passes are turned off; CPU graphs never ran them,
# and this process has no Triton device, so nothing else changes.
inductor_config.loop_ordering_after_fusion = False
inductor_config.loop_reindexing_after_fusion = False
inductor_config.loop_index_inversion_in_fusion = False
