"""Graph capture on mlu: ``torch.mlu.MLUGraph``, ``graph``, ``graph_pool_handle``,
``is_current_stream_capturing``, ``make_graphed_callables`` (torch.cuda.graphs' API, names as Cambricon's).

A capture records the current stream's work into a graph instead of running it; ``replay()`` submits the
whole graph as one task, in order with other work on the current stream. How the runtime records, what a
capture refuses (host synchronisation, the CPU fallback, work on another device, ...), the private memory
pools and the per-replay random numbers: docs/graphs.md.
"""
from __future__ import annotations

import gc
import typing
import warnings
from collections.abc import Callable
from typing import Optional, Union

import torch

import torch_mlu._C as _C
from torch_mlu import patches

__all__ = ["MLUGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"]


def is_current_stream_capturing() -> bool:
    """True if a graph capture is underway on the current mlu stream."""
    if not torch.mlu.is_initialized():
        return False
    return _C._is_current_stream_capturing()


def graph_pool_handle() -> tuple[int, int]:
    """An opaque token naming a graph memory pool that several graphs may share."""
    torch.mlu._lazy_init()
    return _C._graph_pool_handle()


class MLUGraph(_C._MLUGraph):
    """Wrapper around an mlu graph (torch.cuda.CUDAGraph's interface).

    ``keep_graph`` is accepted for torch.cuda compatibility: an mlu graph is executable as soon as its capture
    ends, so ``instantiate()`` has nothing to do.
    """

    def __new__(cls, keep_graph: bool = False):
        torch.mlu._lazy_init()
        return super().__new__(cls, keep_graph)

    def capture_begin(self, pool: Optional[tuple[int, int]] = None, capture_error_mode: str = "global") -> None:
        """Begins capturing the current stream's work (use :class:`graph` or :func:`make_graphed_callables`).

        ``capture_error_mode``: "global" (the default, as CUDA's) refuses calls that may synchronize the device
        from any thread while the capture is underway, "thread_local" only from this thread, "relaxed" never
        (Cambricon's torch_mlu defaults to "relaxed").
        """
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)

    def capture_end(self) -> None:
        """Ends the capture; raises (and leaves no graph) if the capture failed."""
        super().capture_end()

    def instantiate(self) -> None:
        super().instantiate()

    def replay(self) -> None:
        """Submits the captured work to the current stream as one task."""
        super().replay()

    def reset(self) -> None:
        """Deletes the graph; its memory pool is released once no graph uses it."""
        super().reset()

    def pool(self) -> tuple[int, int]:
        """The id of this graph's memory pool, to share it with another capture."""
        return super().pool()

    def enable_debug_mode(self) -> None:
        super().enable_debug_mode()

    def debug_dump(self, debug_path: str) -> None:
        """Writes the graph (its tasks in replay order) as a Graphviz file; needs enable_debug_mode()."""
        super().debug_dump(debug_path)


class graph:
    """Context manager that captures mlu work into an :class:`MLUGraph` (torch.cuda.graph's interface).

    Arguments:
        mlu_graph (MLUGraph): the graph to capture into.
        pool (optional): a :func:`graph_pool_handle` or another graph's ``pool()`` to share memory with.
        stream (torch.mlu.Stream, optional): the stream to capture on; by default one side stream shared by all
            ``graph`` contexts.
        capture_error_mode (str, optional): "global" (default), "thread_local" or "relaxed"; see
            :meth:`MLUGraph.capture_begin`.

    An exception inside the block ends the capture and drops what it recorded, leaving ``mlu_graph`` empty
    (ready for another capture) and the stream and allocator usable; the exception propagates.
    """

    # One side stream per device, made on first use (CUDA keeps one for the process, on the device current
    # then, so a later capture on another device would capture nothing of its work).
    default_capture_streams: dict[int, torch.mlu.Stream] = {}

    def __init__(self, mlu_graph: MLUGraph, pool: Optional[tuple[int, int]] = None,
                 stream: Optional[torch.mlu.Stream] = None, capture_error_mode: str = "global"):
        if stream is None:
            device = torch.mlu.current_device()
            if device not in self.default_capture_streams:
                self.default_capture_streams[device] = torch.mlu.Stream(device)
            stream = self.default_capture_streams[device]
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream
        self.stream_ctx = torch.mlu.stream(self.capture_stream)
        self.mlu_graph = mlu_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        torch.mlu.synchronize()
        if torch.compiler.config.force_cudagraph_gc:
            gc.collect()
        torch.mlu.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.mlu_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb) -> Optional[bool]:
        try:
            if exc_type is None:
                self.mlu_graph.capture_end()
            else:
                with warnings.catch_warnings():  # an "empty graph" warning would only add noise
                    warnings.simplefilter("ignore")
                    try:
                        self.mlu_graph.capture_end()
                    except Exception:  # the block's exception says what went wrong
                        pass
                self.mlu_graph.reset()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        return None


_ModuleOrCallable = Union[torch.nn.Module, Callable[..., object]]


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool: Optional[tuple[int, int]] = None):
    """Graphed versions of callables (functions or modules): torch.cuda.make_graphed_callables on mlu.

    Each graphed callable's forward runs its source's forward work as one graph replay inside a single
    autograd node, whose backward replays the captured backward. Same contract as on CUDA: ``sample_args``
    hold only tensors, with the ``requires_grad`` of the real inputs; modules have no hooks and only
    parameters train; call graphed callables with arguments in the order and format of ``sample_args``;
    autocast needs ``cache_enabled=False``; no double backward. Several callables share one memory pool and
    must run in the order given.
    """
    if torch.is_autocast_enabled("mlu") and torch.is_autocast_cache_enabled():
        raise RuntimeError(
            "make_graphed_callables does not support the autocast caching. Please set `cache_enabled=False`.")

    just_one_callable = not isinstance(callables, tuple)
    if just_one_callable:
        callables = (callables,)
        sample_args = (typing.cast(tuple, sample_args),)

    flatten_sample_args = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, torch.nn.Module):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. However, registering "
                    "hooks on modules after passing them through make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, only parameters "
                    "may be trainable. All buffers must have ``requires_grad=False``.")
        flatten_arg = torch.utils._pytree.arg_tree_leaves(*args)
        flatten_sample_args.append(tuple(flatten_arg))
        if not all(isinstance(arg, torch.Tensor) for arg in flatten_arg):
            raise AssertionError(
                "In the beta API, sample_args for each callable must contain only Tensors. Other types are not "
                "allowed.")

    # A module's graph reads its user args and its parameters.
    per_callable_len_user_args = [len(args) for args in flatten_sample_args]
    per_callable_module_params = [tuple(c.parameters()) if isinstance(c, torch.nn.Module) else ()
                                  for c in callables]
    per_callable_static_input_surfaces = [flatten_sample_args[i] + per_callable_module_params[i]
                                          for i in range(len(callables))]

    fwd_graphs = [MLUGraph() for _ in callables]
    bwd_graphs = [MLUGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    # Warm-up on a side stream, so lazy one-time work stays out of the captures.
    torch.mlu.synchronize()
    with torch.mlu.stream(torch.mlu.Stream()):
        for func, args, static_input_surface in zip(callables, sample_args, per_callable_static_input_surfaces):
            grad_inputs, outputs, outputs_grad = None, None, None
            for _ in range(num_warmup_iters):
                outputs = torch.utils._pytree.tree_leaves(func(*args))
                outputs_grad = tuple(o for o in outputs if o.requires_grad)
                if outputs_grad:
                    grad_inputs = torch.autograd.grad(
                        outputs=outputs_grad,
                        inputs=tuple(i for i in static_input_surface if i.requires_grad),
                        grad_outputs=tuple(torch.empty_like(o) for o in outputs if o.requires_grad),
                        only_inputs=True, allow_unused=allow_unused_input)
            del outputs, outputs_grad, grad_inputs
    torch.mlu.synchronize()

    # All captures share one pool, so they are captured in the order they will replay:
    # forward 1 .. N, then backward N .. 1.
    per_callable_static_outputs = []
    per_callable_output_unflatten_spec = []
    for func, args, fwd_graph in zip(callables, sample_args, fwd_graphs):
        with graph(fwd_graph, pool=mempool):
            func_outputs = func(*args)
        flatten_outputs, spec = torch.utils._pytree.tree_flatten(func_outputs)
        per_callable_static_outputs.append(tuple(flatten_outputs))
        per_callable_output_unflatten_spec.append(spec)

    per_callable_static_grad_outputs = []
    per_callable_static_grad_inputs = []
    for static_input_surface, static_outputs, bwd_graph in zip(reversed(per_callable_static_input_surfaces),
                                                               reversed(per_callable_static_outputs),
                                                               reversed(bwd_graphs)):
        static_grad_outputs = tuple(torch.empty_like(o) if o.requires_grad else None for o in static_outputs)
        outputs_grad = tuple(o for o in static_outputs if o.requires_grad)
        grad_inputs = None
        if outputs_grad:
            with graph(bwd_graph, pool=mempool):
                grad_inputs = torch.autograd.grad(
                    outputs=outputs_grad,
                    inputs=tuple(i for i in static_input_surface if i.requires_grad),
                    grad_outputs=tuple(o for o in static_grad_outputs if o is not None),
                    only_inputs=True, allow_unused=allow_unused_input)
        # Gradients in the slots of the input surface: None where an input does not require grad.
        static_grad_inputs = []
        grad_idx = 0
        for arg in static_input_surface:
            if arg.requires_grad and grad_inputs is not None:
                static_grad_inputs.append(grad_inputs[grad_idx])
                grad_idx += 1
            else:
                static_grad_inputs.append(None)
        per_callable_static_grad_outputs.append(static_grad_outputs)
        per_callable_static_grad_inputs.append(tuple(static_grad_inputs))
    per_callable_static_grad_outputs.reverse()
    per_callable_static_grad_inputs.reverse()

    def make_graphed_autograd_function(fwd_graph, bwd_graph, module_params, len_user_args, output_unflatten_spec,
                                       static_input_surface, static_outputs, static_grad_outputs,
                                       static_grad_inputs):
        class Graphed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):
                # Only the user args may be new tensors; the parameters are the captured ones.
                for i in range(len_user_args):
                    if static_input_surface[i].data_ptr() != inputs[i].data_ptr():
                        static_input_surface[i].copy_(inputs[i])
                fwd_graph.replay()
                return tuple(o.detach() for o in static_outputs)

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, *grads):
                assert len(grads) == len(static_grad_outputs)
                for g, grad in zip(static_grad_outputs, grads):
                    if g is not None and g.data_ptr() != grad.data_ptr():
                        g.copy_(grad)
                bwd_graph.replay()
                return tuple(b.detach() if b is not None else b for b in static_grad_inputs)

        def functionalized(*user_args):
            flatten_user_args = torch.utils._pytree.arg_tree_leaves(*user_args)
            out = Graphed.apply(*(tuple(flatten_user_args) + module_params))
            return torch.utils._pytree.tree_unflatten(out, output_unflatten_spec)

        return functionalized

    ret = []
    for i, func in enumerate(callables):
        graphed = make_graphed_autograd_function(
            fwd_graphs[i], bwd_graphs[i], per_callable_module_params[i], per_callable_len_user_args[i],
            per_callable_output_unflatten_spec[i], per_callable_static_input_surfaces[i],
            per_callable_static_outputs[i], per_callable_static_grad_outputs[i],
            per_callable_static_grad_inputs[i])
        if isinstance(func, torch.nn.Module):
            def make_graphed_forward(func, graph_training_state, graphed, orig_fwd):
                def new_fwd(*user_args, **user_kwargs):
                    # The graph runs only in the training-or-eval state it was captured in.
                    if func.training == graph_training_state:
                        return graphed(*user_args, **user_kwargs)
                    return orig_fwd(*user_args, **user_kwargs)

                return new_fwd

            func.forward = make_graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one_callable else tuple(ret)


def _install_optimizer_capture_check() -> None:
    """Optimizers check capture on mlu as they do on CUDA and XPU.

    torch.optim's health check (Optimizer._accelerator_graph_capture_health_check, run by step()) knows only
    "cuda" and "xpu". Without it a step with capturable=False inside a capture would bake the step count and
    bias corrections into the graph, and every replay would repeat the first step's numbers: refuse it, and
    warn (once per optimizer) when capturable=True runs uncaptured, with CUDA's messages.
    """
    from torch.optim.optimizer import Optimizer

    check = Optimizer._accelerator_graph_capture_health_check
    if getattr(check, "_mlu_checks", False):
        return

    def _accelerator_graph_capture_health_check(self) -> None:
        check(self)
        if torch.compiler.is_compiling() or not torch.mlu.is_initialized():
            return
        if not any(p.device.type == "mlu" for group in self.param_groups for p in group["params"]):
            return
        capturing = is_current_stream_capturing()
        capturable = all(group.get("capturable", False) for group in self.param_groups)  # Adafactor has none
        if capturing and not capturable:
            raise RuntimeError(
                "Attempting MLU graph capture of step() for an instance of " + self.__class__.__name__
                + " but param_groups' capturable is False.")
        if capturable and not capturing and not getattr(self, "_warned_capturable_if_run_uncaptured", False):
            warnings.warn(
                "This instance was constructed with capturable=True or some of all the param_groups came with "
                "capturable=True, but step() is running without MLU graph capture. If you never intend to "
                "graph-capture this instance, capturable=True can impair performance, and you should set "
                "capturable=False.", stacklevel=2)
            self._warned_capturable_if_run_uncaptured = True

    _accelerator_graph_capture_health_check._mlu_checks = True
    patches.set_attr(Optimizer, "_accelerator_graph_capture_health_check", _accelerator_graph_capture_health_check,
                     "optimizers check MLU graph capture as they check CUDA's")


_install_optimizer_capture_check()
