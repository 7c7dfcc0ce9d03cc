"""torch.compile on mlu: Inductor's backend for the device (see codegen.py, codecache.py).

Imported lazily, the first time Inductor compiles (it looks up
``torch.mlu.Scheduling``; torch_mlu/mlu/__init__.py forwards it here), and
registered here, with the config Inductor hashes into its cache keys.
"""
from torch._inductor import config as inductor_config
from torch._inductor import ir as inductor_ir
from torch._inductor import lowering as inductor_lowering
from torch._inductor import scheduler as inductor_scheduler
from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen
from torch._inductor.scheduler import BaseSchedulerNode

from .. import patches
from . import config as mlu_config
from . import flex_attention, flex_attention_training, graphs
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
patches.set_attr(inductor_config, "cuda_backend", "cpp", "mlu generates C++ (Note [Inductor's view of mlu])")

# Note [SIMD-only fusion passes]
# Inductor's scheduler runs three loop-rewriting passes while fusing on every
# device that is not "cpu", assuming such a device generates Triton (SIMD)
# kernels; on C++ kernels they fail (they read SIMD node groups). mlu nodes use
# the C++ scheduling, so the passes are turned off; CPU graphs never ran them,
# and this process has no Triton device, so nothing else changes.
for _name in ("loop_ordering_after_fusion", "loop_reindexing_after_fusion", "loop_index_inversion_in_fusion"):
    patches.set_attr(inductor_config, _name, False, "a SIMD-only pass (Note [SIMD-only fusion passes])")

# Note [mlu takes Inductor's CPU heuristics]
# Some of Inductor's lowering heuristics are tuned per device kind and ask
# torch._inductor.ir.is_cpu: on "cpu" it realizes a reused result of a heavy
# op (exp, log, ...) instead of recomputing it in each consumer, and it inlines
# fewer ops and reads into a kernel (realize_cpu_*_threshold), because a CPU
# core recomputing is expensive where a GPU's threads are not. mlu's kernels
# are C++ loops on CPU cores, so those answers are right for mlu too (softmax
# computes exp once into a row buffer instead of twice). The scheduler's
# BaseSchedulerNode.is_cpu guards only the SIMD-only passes of Note
# [SIMD-only fusion passes], where mlu belongs with cpu as well.
_CPU_LIKE = ("cpu", "mlu")


def _is_cpu_like(x):
    return inductor_ir.get_device_type(x) in _CPU_LIKE


def _node_is_cpu_like(self):
    device = self.get_device()
    return device is not None and device.type in _CPU_LIKE


patches.set_attr(inductor_ir, "is_cpu", _is_cpu_like, "Note [mlu takes Inductor's CPU heuristics]")
patches.set_attr(BaseSchedulerNode, "is_cpu", _node_is_cpu_like, "Note [mlu takes Inductor's CPU heuristics]")

# Note [Compiled code runs on its tensors' device]
# A graph compiled for tensors on mlu:1 must run there whichever device is
# current, as eager ops do: its buffers on mlu:1, its kernels and extern ops
# on mlu:1's current stream, after whatever that stream has queued. CUDA's
# wrapper gets this from the scheduler, which enters a device guard
# (`with torch.cuda._DeviceGuard(1): torch.cuda.set_device(1)`) around each
# run of nodes on one device, but only for the devices utils.is_gpu names
# (cuda, xpu, mtia: a fixed list). mlu joins that decision here, and
# MluPythonWrapperCodegen.make_allocation names the index in every buffer
# (`device='mlu:1'`), so a buffer lands right even outside a guard.
_device_need_guard = inductor_scheduler.device_need_guard


def _mlu_device_need_guard(device: str) -> bool:
    return device == "mlu" or _device_need_guard(device)


patches.set_attr(inductor_scheduler, "device_need_guard", _mlu_device_need_guard,
                 "Note [Compiled code runs on its tensors' device]")

# Note [Pointwise results live on mlu]
# A pointwise op mixing a 0-dim CPU tensor with device tensors (`s * x`,
# `torch.where(s, x, y)` with s on the CPU) runs on the device, as eager ops
# do: Inductor's make_pointwise picks the first input whose device utils.is_gpu
# names, else the first input's device, so on mlu a CPU scalar in front made
# the kernel a CPU one, reading device memory from the host and returning a
# CPU tensor. mlu counts as such a device in that choice (the only use of
# is_gpu in torch._inductor.lowering).
_lowering_is_gpu = inductor_lowering.is_gpu


def _mlu_is_gpu(device) -> bool:
    return device == "mlu" or _lowering_is_gpu(device)


patches.set_attr(inductor_lowering, "is_gpu", _mlu_is_gpu, "Note [Pointwise results live on mlu]")

graphs.install()  # Note [reduce-overhead on mlu]
flex_attention.install()  # Note [Compiled flex_attention on mlu]
flex_attention_training.install()  # Note [Compiled flex_attention training on mlu]
