"""Inductor's code generators for mlu: C++ kernels as stream tasks, a Python wrapper.

- :class:`MluCppScheduling` is Inductor's C++ (CPU) scheduling, whose fused
  loops, vectorisation and OpenMP regions suit the software MLU's cores. It
  sizes the regions for the device's compute cores and ends each kernel's
  source with the torch_mlu module epilogue (codecache.py), which turns the
  kernel into a stream task.
- :class:`MluPythonWrapperCodegen` is Inductor's Python wrapper: buffers come
  from ``empty_strided(..., device='mlu')`` (the caching allocator), fallback
  and extern ops (``extern_kernels.mm(..., out=buf)``) call mlu's eager
  kernels, and a C++ kernel is called like a CPU one: its module's entry point
  enqueues it on the current stream (Note [Compiled kernels are stream tasks]
  in csrc/inductor/CompiledKernelLaunch.h). So the wrapper neither drains the
  device nor orders anything itself: the stream does.
"""

import torch
from torch._inductor import config, ir
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.utils import Placeholder
from torch._inductor.virtualized import V

from .codecache import module_epilogue
from .compiled_math import MluCppKernelProxy, with_mlu_math


def _device_cores() -> int:
    # Every device has the same cores (TORCH_MLU_DEVICE_CORES), served by one pool.
    return torch.mlu.get_device_properties(torch.mlu.current_device()).multi_processor_count


class MluCppScheduling(CppScheduling):
    kernel_proxy_cls = MluCppKernelProxy  # Note [Compiled tanh is mlu's tanh]

    # Generated regions ask for as many threads as the device has compute cores
    # (OpenMP's num_threads; per-thread reduction arrays are sized by it).
    def _patched_threads(self):
        return config.patch({"cpp.threads": _device_cores()})

    def codegen_node(self, node):
        with self._patched_threads():
            return super().codegen_node(node)

    def codegen_template(self, *args, **kwargs):
        with self._patched_threads():
            return super().codegen_template(*args, **kwargs)

    def flush(self):
        # Note [Compiled code runs on its tensors' device]: the scheduler flushes the last group of C++ kernels
        # after it has left the group's device guard, so the flush enters one itself when none is open.
        nodes = self.kernel_group.scheduled_nodes
        device = nodes[0].get_device() if nodes else None
        wrapper = V.graph.wrapper_code
        guard = device is not None and device.type == "mlu" and _open_guard(wrapper) != device.index
        if guard:
            wrapper.codegen_device_guard_enter(device.index)
        try:
            with self._patched_threads():
                return super().flush()
        finally:
            if guard:
                wrapper.codegen_device_guard_exit()

    def define_kernel(self, src_code, nodes, kernel_args=None):
        # Inductor replaces DESCRIPTIVE_NAME with the kernel's name in the source.
        args = self.kernel_group.args if kernel_args is None else kernel_args
        epilogue = module_epilogue(str(Placeholder.DESCRIPTIVE_NAME), _host_scalar_positions(args))
        return super().define_kernel(with_mlu_math(src_code) + "\n" + epilogue, nodes, kernel_args)


def _is_host_scalar(name: str) -> bool:
    buffer = V.graph.try_get_buffer(name)
    if buffer is None or isinstance(buffer, ir.TorchBindObject):
        return False
    device = buffer.get_device()
    return device is not None and device.type == "cpu" and len(buffer.get_size()) == 0


def _host_scalar_positions(kernel_args) -> list[int]:
    """The kernel parameters that point at a 0-dim CPU tensor (Note [Host scalars are read at launch])."""
    _, call_args, _ = kernel_args.cpp_argdefs()
    return [i for i, name in enumerate(call_args) if _is_host_scalar(name)]


def _open_guard(wrapper):
    """The device index of the innermost device guard open in the code `wrapper` is writing, or None."""
    stack = wrapper.__dict__.get("_mlu_open_guards")
    return stack[-1] if stack else None


class _MluWrapperMixin:
    # The open device guards, innermost last (what MluCppScheduling.flush asks).
    def codegen_device_guard_enter(self, device_idx, *args, **kwargs):
        super().codegen_device_guard_enter(device_idx, *args, **kwargs)
        self.__dict__.setdefault("_mlu_open_guards", []).append(device_idx)

    def codegen_device_guard_exit(self):
        super().codegen_device_guard_exit()
        self.__dict__["_mlu_open_guards"].pop()

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if device.type == "mlu" and not triton:
            # The kernel module's entry point enqueues the kernel on the current stream.
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))
            return
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)


class MluPythonWrapperCodegen(_MluWrapperMixin, PythonWrapperCodegen):
    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
        # Buffers name their device's index (Note [Compiled code runs on its tensors' device]).
        if device.type != "mlu" or device.index is None or config.test_configs.track_memory_lifecycle:
            return super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
        shape_tuple = self.codegen_python_shape_tuple(shape)
        allocation_shape_tuple = self.codegen_python_shape_tuple(allocation_shape or shape)
        stride_tuple = self.codegen_python_shape_tuple(stride)
        out = f"{name} = empty_strided({allocation_shape_tuple}, {stride_tuple}, device='{device}', dtype={dtype})"
        if shape_tuple != allocation_shape_tuple:
            out += f".as_strided({shape_tuple}, {stride_tuple})"
        return out

    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return MluSubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return MluPythonWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline("from torch_mlu._inductor.codecache import MluAsyncCompile")
        self.header.writeline("async_compile = MluAsyncCompile()")


class MluSubgraphPythonWrapperCodegen(_MluWrapperMixin, SubgraphPythonWrapperCodegen):
    pass


class MluCppWrapperCodegen(CppWrapperCpu):
    """cpp_wrapper mode: not available on mlu (its C shims are cuda/xpu/cpu specific in PyTorch 2.13)."""

    @staticmethod
    def create(*args, **kwargs):
        raise RuntimeError(
            "torch.compile with cpp_wrapper=True (and AOTInductor) is not supported on mlu: PyTorch 2.13's C++ "
            "wrapper has no device shims for PrivateUse1 backends. Leave torch._inductor.config.cpp_wrapper off "
            "(the default); the Python wrapper runs the same kernels."
        )


class MluDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_mlu._dynamo import _get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.mlu.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.mlu.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.mlu._DeviceGuard({device_idx})"

    def cpp_kernel_type(self) -> str:
        return "void*"
