"""torch.compile(mode="reduce-overhead") on mlu: compiled graphs replayed as mlu graphs.

Note [reduce-overhead on mlu]
PyTorch 2.13's cudagraph trees accept only "cuda" (cudagraph_utils.check_multiple_devices_or_any_cpu_nodes
disables graphs for any other device) and are built on torch.cuda's private allocator bindings. Inductor has one
hook for another implementation: config.cudagraph_policy, whose cudagraphify wraps each compiled graph (inference,
forward, backward) when graphs are on. torch_mlu installs a policy that wraps graphs on mlu in MluGraphRunner and
lets the device check pass for a graph on one mlu device; graphs on other devices keep Inductor's behaviour.

MluGraphRunner keeps the contract users know from cudagraph trees, in a simpler form:
- per input signature (shapes, strides, dtypes, non-tensor inputs, addresses of the static inputs), the first call
  runs the compiled code as it is (a warm-up: lazy one-time work stays out of the graph), the second records it into
  an MLUGraph with its own memory pool on a side stream and replays it, later calls replay: every call runs the
  code exactly once;
- static inputs (parameters and buffers, Inductor's static_input_idxs) are read in place; other tensor inputs are
  copied into the graph's input buffers before each replay, on the caller's stream;
- each call returns fresh tensors over the graph's output memory; before a replay overwrites that memory, the
  tensors the previous call returned are made to raise on any access, so a stale output is an error, never a silent
  wrong value (as trees raise "... overwritten by a subsequent run"). A backward graph returns copies instead:
  its outputs are gradients, which autograd keeps as .grad across steps (zero_grad(set_to_none=False) zeroes and
  accumulates into them), so they must not live in memory the next replay overwrites;
- a graph that mutates an input other than a static one always runs without a graph (trees refuse it too).
"""
import collections
import weakref

import torch
from torch._inductor.compile_fx import index_expanded_dims_and_copy_, static_input
from torch._inductor.cudagraph_utils import CUDAGraphPolicy
from torch._inductor.output_code import get_expanded_dims

import torch_mlu._C as _C
from torch_mlu import patches

_OVERWRITTEN = (
    "accessing an output of a compiled function run with torch.compile(mode=\"reduce-overhead\") on mlu that a "
    "later call has overwritten (its mlu graph replays into the same memory). Clone the output (out.clone()) "
    "before calling the compiled function again if you need it afterwards.")


# How many graphs were recorded and replayed in this process (what tests and users check to see graphs in use).
stats = collections.Counter()


def _on_mlu(example_inputs):
    return any(isinstance(t, torch.Tensor) and t.device.type == "mlu" for t in example_inputs)


class MluGraphPolicy(CUDAGraphPolicy):
    """Inductor's cudagraph policy: mlu graphs for graphs on mlu, Inductor's default for the rest."""

    def cudagraphify(self, model, example_inputs, static_input_idxs, *, device_index, is_backward, is_inference,
                     **kwargs):
        if not _on_mlu(example_inputs):
            return super().cudagraphify(model, example_inputs, static_input_idxs, device_index=device_index,
                                        is_backward=is_backward, is_inference=is_inference, **kwargs)
        return MluGraphRunner(model, static_input_idxs, device_index, kwargs.get("mutated_input_idxs", ()),
                              is_backward)


def _signature(inputs, static):
    key = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            key.append((tuple(x.shape), x.stride(), x.dtype, x.storage_offset(), x.data_ptr() if i in static else None))
        else:
            key.append(x)
    return tuple(key)


class MluGraphRunner:
    """One compiled graph's callable under reduce-overhead (Note [reduce-overhead on mlu])."""

    def __init__(self, model, static_input_idxs, device_index, mutated_input_idxs, is_backward):
        self.model = model
        self.copy_outputs = is_backward
        self.static = frozenset(static_input_idxs)
        self.device = torch.device("mlu", device_index)
        self.eager_only = any(i not in self.static for i in mutated_input_idxs)
        self.warmed_up = set()
        self.recordings = {}

    def __call__(self, inputs):
        if self.eager_only:
            return self.model(inputs)
        key = _signature(inputs, self.static)
        recording = self.recordings.get(key)
        if recording is None:
            if key not in self.warmed_up:
                self.warmed_up.add(key)
                return self.model(inputs)
            recording = self.recordings[key] = _Recording(self.model, inputs, self.static, self.device)
            stats["recorded"] += 1
        stats["replayed"] += 1
        return recording.replay(inputs, self.copy_outputs)


class _Recording:
    """An MLUGraph of the compiled code for one input signature, with its input buffers and outputs."""

    def __init__(self, model, inputs, static, device):
        self.copied = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and i not in static]
        self.expanded = {i: get_expanded_dims(inputs[i]) for i in self.copied}
        self.inputs = list(inputs)
        for i in self.copied:
            self.inputs[i] = static_input(inputs[i])
        self.input_storages = {x.untyped_storage().data_ptr() for x in self.inputs if isinstance(x, torch.Tensor)}
        self.graph = torch.mlu.MLUGraph()
        stream = torch.mlu.Stream(device)
        stream.wait_stream(torch.mlu.current_stream(device))
        with torch.mlu.graph(self.graph, stream=stream):
            outputs = model(list(self.inputs))
        torch.mlu.current_stream(device).wait_stream(stream)
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self.handed_out = []

    def replay(self, inputs, copy_outputs):
        for i in self.copied:
            if inputs[i].data_ptr() != self.inputs[i].data_ptr():
                index_expanded_dims_and_copy_(self.inputs[i], inputs[i], self.expanded[i])
        inputs.clear()
        for ref in self.handed_out:
            t = ref()
            if t is not None:
                _C._mlu_set_storage_access_error_msg(t, _OVERWRITTEN)
        self.graph.replay()
        if copy_outputs:
            return [o.clone() if isinstance(o, torch.Tensor) else o for o in self.outputs]
        storages = {}
        results = [self._fresh(o, storages) for o in self.outputs]
        self.handed_out = [weakref.ref(t) for t in results
                           if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.input_storages]
        return results

    def _fresh(self, out, storages):
        """A new tensor over `out`'s memory (outputs sharing memory keep sharing it); `out` itself when it is an
        input's memory, which no replay overwrites."""
        if not isinstance(out, torch.Tensor):
            return out
        storage = out.untyped_storage()
        address = storage.data_ptr()
        if address in self.input_storages or storage.nbytes() == 0:
            return out
        fresh = storages.get(address)
        if fresh is None:
            fresh = storages[address] = torch._C._construct_storage_from_data_pointer(address, out.device,
                                                                                      storage.nbytes())
        return torch.empty((0,), dtype=out.dtype, device=out.device).set_(fresh, out.storage_offset(), out.size(),
                                                                          out.stride())


def install():
    """Puts the policy in Inductor's config and lets graphs on one mlu device pass the device check."""
    from torch._inductor import config, cudagraph_utils

    if not isinstance(config.cudagraph_policy, MluGraphPolicy):
        patches.set_attr(config, "cudagraph_policy", MluGraphPolicy(), "reduce-overhead on mlu records MLU graphs")
    check = cudagraph_utils.check_multiple_devices_or_any_cpu_nodes
    if getattr(check, "_mlu", False):
        return

    def check_multiple_devices_or_any_cpu_nodes(device_node_mapping):
        devices = [d for d in device_node_mapping if d.type != "meta"]
        if len(devices) == 1 and devices[0].type == "mlu":
            return None
        return check(device_node_mapping)

    check_multiple_devices_or_any_cpu_nodes._mlu = True
    patches.set_attr(cudagraph_utils, "check_multiple_devices_or_any_cpu_nodes",
                     check_multiple_devices_or_any_cpu_nodes, "a graph on one mlu device may be recorded")

    # Inductor asks CUDA's caching allocator whenever torch.cuda.is_available(), which under gpu_migration is
    # torch.mlu's answer in a torch built without CUDA: its bindings are absent, and mlu graphs need no such check.
    check_allocator = cudagraph_utils.check_caching_allocator_for_cudagraphs

    def check_caching_allocator_for_cudagraphs():
        if not hasattr(torch._C, "_cuda_cudaCachingAllocator_is_enabled"):
            return None
        return check_allocator()

    patches.set_attr(cudagraph_utils, "check_caching_allocator_for_cudagraphs", check_caching_allocator_for_cudagraphs,
                     "no CUDA allocator to ask in a CUDA-less torch (under gpu_migration)")
