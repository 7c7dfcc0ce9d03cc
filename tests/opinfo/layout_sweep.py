"""The layout sweep: every op_db op on re-laid inputs, mlu against the CPU on values, strides, aliasing.

For each op, the first samples of one dtype (float32 where the op takes it) run on the CPU and on mlu with
their tensor inputs re-laid out, each layout made by the same ops on both devices:

  channels_last   4-D tensors as channels-last, 5-D as channels-last-3d (others unchanged)
  permuted        every tensor of >= 2 dims with its strides in reverse order (same sizes, same values)
  sliced          every tensor of >= 1 dim as a view with a storage offset and a step of 2 in its last dim
  as_given        the sample as op_db makes it (reported only where strides or aliasing differ)
  expanded        every tensor with a last dim longer than 1 as its first column expanded (stride 0; other
                  values than the sample's, the same on both devices)

each applied to every tensor input ("all") and to the sample's first input only ("input"). Four variants
run: the function, its in-place variant (op_db's inplace_variant) on the re-laid `self`, its out= variant
into tensors of no elements (which the op resizes), and the backward (the gradients of the floating
inputs, for grad_outputs laid out like the inputs). A case prints one JSON line:

  {"op", "sample", "layout", "target", "variant", "options", "outcome", "detail"}

(options: the sample's non-tensor keyword arguments, as repr.)

Values are compared where the sample as given (un-relaid) gives the CPU's values on mlu: random ops draw
other numbers on mlu, so only their layouts and aliasing are compared (see also agree_on_values). A sample that fails on either device
as given is skipped (tests/test_opinfo.py covers it).

outcome is one of
  ok          the CPU's values, the CPU's significant strides (those of dims longer than 1) on every output,
              and the same aliasing (which output shares which input's storage; in-place returns self)
  values      other values (beyond the tolerance of tests/test_opinfo.py's compare)
  strides     other strides on some output
  alias       an output aliases an input on one device and not on the other
  mlu_error   the CPU ran it, mlu raised (detail: the message)
  cpu_error   mlu ran it, the CPU raised
  both_error  neither ran it (not a difference; not printed)

A crash ends the process: the last "start" line printed names the case. tests/test_layouts.py runs this
script and judges the lines.

  .venv/bin/python tests/opinfo/layout_sweep.py [--ops add,group_norm] [--samples 3] [--samples-of linalg.lstsq=8]
"""
import sys

import torch

import torch_mlu  # noqa: F401
from op_sweep import emit, main, pick_dtype

from torch.testing import make_tensor
from torch.testing._internal.opinfo.core import SampleInput
from torch.utils._pytree import tree_flatten, tree_unflatten

# Ops whose outputs are uninitialised memory: layouts only.
UNINITIALIZED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted", "resize_",
                 "resize_as_"}
LAYOUTS = ("channels_last", "permuted", "sliced", "expanded")
TARGETS = ("all", "input")


def signature(sample):
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else repr(x) for x in leaves)


def pick_samples(samples, limit):
    """Up to `limit` distinct samples (by shapes and arguments), first one of each input rank."""
    distinct = list({signature(s): s for s in reversed(samples)}.values())[::-1]
    def rank(s):
        return s.input.dim() if isinstance(s.input, torch.Tensor) else -1
    firsts = list({rank(s): s for s in reversed(distinct)}.values())[::-1]
    rest = [s for s in distinct if all(s is not f for f in firsts)]
    return (firsts + rest)[:limit]


def _group_norm_sample(shape, groups):
    def make(dtype):
        c = shape[1]
        return SampleInput(make_tensor(shape, dtype=dtype, device="cpu"), args=(groups,),
                           kwargs=dict(weight=make_tensor((c,), dtype=dtype, device="cpu"),
                                       bias=make_tensor((c,), dtype=dtype, device="cpu")))
    return make


# 4-D and 5-D samples of ops whose op_db samples have fewer dims (channels-last needs 4 or 5).
EXTRA_SAMPLES = {
    "nn.functional.group_norm": (_group_norm_sample((4, 6, 3, 5), 2), _group_norm_sample((2, 4, 2, 3, 3), 4)),
}


def relayout(t, layout):
    """t's values with another memory layout, made on t's device; None where the layout does not apply."""
    if layout == "channels_last":
        if t.dim() == 4:
            return t.contiguous(memory_format=torch.channels_last)
        if t.dim() == 5:
            return t.contiguous(memory_format=torch.channels_last_3d)
        return None
    if layout == "permuted":
        if t.dim() < 2:
            return None
        reverse = list(range(t.dim() - 1, -1, -1))
        return t.permute(reverse).contiguous().permute(reverse)
    if layout == "sliced":
        if t.dim() == 0:
            return None
        wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1] + 1, dtype=t.dtype, device=t.device)
        view = wide[..., 1::2]
        view.copy_(t)
        return view
    if layout == "expanded":  # other values (the first column repeated), the same on both devices
        if t.dim() == 0 or t.shape[-1] < 2:
            return None
        return t.narrow(-1, 0, 1).clone().expand(t.shape)  # a storage of its own, as the other layouts
    raise ValueError(layout)


def relaid_leaves(leaves, slots, layout, target, grad):
    """The leaves with the chosen tensors re-laid (None when no tensor changed); with `grad`, every floating
    tensor is a leaf that requires grad (detach keeps the strides)."""
    out, changed = list(leaves), False
    chosen = slots if target == "all" else slots[:1]
    for i in chosen:
        t = relayout(leaves[i], layout)
        if t is not None:
            out[i], changed = t, True
    if not changed:
        return None
    if grad:
        out = [x.detach().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
               for x in out]
    return out


def significant_strides(t):
    if t.numel() == 0:
        return []
    return [(d, s) for d, (n, s) in enumerate(zip(t.shape, t.stride())) if n > 1]


def storage_ptr(t):
    try:
        return t.untyped_storage().data_ptr() if t.untyped_storage().nbytes() > 0 else None
    except RuntimeError:  # a tensor without storage (e.g. a functional wrapper's)
        return None


def alias_map(outputs, inputs):
    """For each tensor output: the index of the input leaf whose storage it shares (-1: none)."""
    storages = [(i, storage_ptr(x)) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    result = []
    for out in outputs:
        if isinstance(out, torch.Tensor):
            ptr = storage_ptr(out)
            result.append(next((i for i, p in storages if ptr is not None and p == ptr), -1))
    return result


def call(fn, leaves, spec):
    sample_input, args, kwargs = tree_unflatten(leaves, spec)
    return fn(sample_input, *args, **kwargs)


def forward(fn):
    return lambda leaves, spec, layout: call(fn, leaves, spec)


def into_out(fn):
    """The out= variant with out tensors of no elements (the op resizes them; the CPU picks their strides)."""
    def run(leaves, spec, layout):
        expected = call(fn, leaves, spec)
        device = next(x.device for x in leaves if isinstance(x, torch.Tensor))
        flat, out_spec = tree_flatten(expected)
        if not flat or not all(isinstance(x, torch.Tensor) for x in flat):
            raise RuntimeError("no tensor outputs")
        outs = [torch.empty(0, dtype=x.dtype, device=device) for x in flat]
        sample_input, args, kwargs = tree_unflatten(leaves, spec)
        result = fn(sample_input, *args, **kwargs, out=outs[0] if len(outs) == 1 else tuple(outs))
        returned = tree_flatten(result)[0]
        if any(r is not o for r, o in zip(returned, outs)):
            raise RuntimeError("out= returned other tensors than its out arguments")
        return tree_unflatten(outs, out_spec)
    return run


def backward(fn):
    """The gradients of the inputs that require grad, for grad_outputs laid out like the inputs."""
    def run(leaves, spec, layout):
        inputs = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad]
        outputs = [o for o in tree_flatten(call(fn, leaves, spec))[0]
                   if isinstance(o, torch.Tensor) and o.requires_grad]
        if not inputs or not outputs:
            raise RuntimeError("nothing to differentiate")
        grads = []
        for o in outputs:
            g = torch.linspace(-1, 1, o.numel(), dtype=o.dtype).reshape(o.shape).to(o.device)
            relaid = relayout(g, layout) if layout in ("channels_last", "permuted", "sliced") else None
            grads.append(g if relaid is None else relaid)
        return torch.autograd.grad(outputs, inputs, grads, allow_unused=True)
    return run


def compare(cpu_out, mlu_out, cpu_leaves, mlu_leaves, check_values):
    cpu_flat, _ = tree_flatten(cpu_out)
    mlu_flat, _ = tree_flatten(mlu_out)
    if len(cpu_flat) != len(mlu_flat):
        return "values", f"{len(cpu_flat)} outputs on the CPU, {len(mlu_flat)} on mlu"
    for k, (c, m) in enumerate(zip(cpu_flat, mlu_flat)):
        if isinstance(c, torch.Tensor) != isinstance(m, torch.Tensor):
            return "values", f"output {k}: tensor on one device only"
        if not isinstance(c, torch.Tensor):
            continue
        if c.shape != m.shape or c.dtype != m.dtype:
            return "values", f"output {k}: {tuple(c.shape)} {c.dtype} on the CPU, {tuple(m.shape)} {m.dtype} on mlu"
        if significant_strides(c) != significant_strides(m):
            return "strides", f"output {k}: strides {c.stride()} on the CPU, {m.stride()} on mlu, sizes {tuple(c.shape)}"
        if check_values:
            try:
                torch.testing.assert_close(m.detach().cpu(), c.detach(), equal_nan=True, rtol=1e-4, atol=1e-4)
            except AssertionError as e:
                return "values", f"output {k}: " + str(e).strip().split("\n")[-1][:200]
    cpu_alias, mlu_alias = alias_map(cpu_flat, cpu_leaves), alias_map(mlu_flat, mlu_leaves)
    if cpu_alias != mlu_alias:
        return "alias", f"outputs alias inputs {cpu_alias} on the CPU, {mlu_alias} on mlu"
    return "ok", ""


def run_case(fn, cpu_leaves, mlu_leaves, spec, layout, check_values):
    cpu_error = mlu_error = None
    try:
        torch.manual_seed(0)
        cpu_out = fn(cpu_leaves, spec, layout)
    except Exception as e:  # noqa: BLE001 - judged below
        cpu_error = str(e).split("\n")[0][:200]
    try:
        torch.manual_seed(0)
        mlu_out = fn(mlu_leaves, spec, layout)
        torch.mlu.synchronize()
    except Exception as e:  # noqa: BLE001
        mlu_error = str(e).split("\n")[0][:200]
    if cpu_error and mlu_error:
        return "both_error", cpu_error
    if mlu_error:
        return "mlu_error", mlu_error
    if cpu_error:
        return "cpu_error", cpu_error
    return compare(cpu_out, mlu_out, cpu_leaves, mlu_leaves, check_values)


def agree_on_values(fn, cpu_leaves, spec, layout, variant):
    """Whether the values are a layout question: an in-place op on a self whose elements share memory writes
    in an unspecified order; expanded inputs have other values than the sample's (ties, singular matrices),
    so they are compared only where mlu gives the CPU's values on contiguous copies of them."""
    if layout != "expanded":
        return True
    if variant == "inplace":
        return False
    contiguous = [x.detach().contiguous().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
                  for x in cpu_leaves]
    on_mlu = [x.detach().to("mlu").requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
              for x in contiguous]
    outcome, _ = run_case(fn, contiguous, on_mlu, spec, "contiguous", True)
    return outcome != "values"


def sweep_op(op, samples_per_op):
    dtype = pick_dtype(op)
    if dtype is None:
        return
    name = op.full_name if hasattr(op, "full_name") else op.name
    try:
        samples = pick_samples(list(op.sample_inputs("cpu", dtype, requires_grad=False)), samples_per_op)
    except Exception:
        return
    samples += [extra(dtype) for extra in EXTRA_SAMPLES.get(name, ())]
    variants = [("function", forward(op.op), False)]
    if op.inplace_variant is not None:
        variants.append(("inplace", forward(op.inplace_variant), False))
    if op.supports_out:
        variants.append(("out", into_out(op.op), False))
    if op.supports_autograd and dtype.is_floating_point:
        variants.append(("backward", backward(op.op), True))
    for k, sample in enumerate(samples):
        leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
        options = {key: value for key, value in sample.kwargs.items() if not isinstance(value, torch.Tensor)}
        slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
        if not slots or any(leaves[i].layout != torch.strided for i in slots):
            continue  # layouts are about strided tensors
        mlu_base = [x.to("mlu") if isinstance(x, torch.Tensor) else x for x in leaves]
        for variant, fn, grad in variants:
            # The values are compared where the sample as given agrees (random ops draw other numbers on mlu).
            as_given = [
                [x.detach().clone().requires_grad_(grad and x.is_floating_point()) if isinstance(x, torch.Tensor)
                 else x for x in base] for base in (leaves, mlu_base)]
            baseline, detail = run_case(fn, *as_given, spec, "contiguous", True)
            if baseline.endswith("error"):
                continue  # not a layout question: test_opinfo.py covers it
            if baseline in ("strides", "alias"):
                emit(outcome=baseline, detail=detail, op=name, sample=k, layout="as_given", target="all",
                     variant=variant, options=repr(options))
            check_values = baseline != "values" and name not in UNINITIALIZED
            for layout in LAYOUTS:
                for target in TARGETS:
                    cpu_leaves = relaid_leaves(leaves, slots, layout, target, grad)
                    if cpu_leaves is None or (target == "input" and len(slots) == 1):
                        continue
                    mlu_leaves = relaid_leaves(mlu_base, slots, layout, target, grad)
                    case = dict(op=name, sample=k, layout=layout, target=target, variant=variant,
                                options=repr(options))
                    emit(start=True, **case)
                    compare_values = check_values and agree_on_values(fn, cpu_leaves, spec, layout, variant)
                    outcome, detail = run_case(fn, cpu_leaves, mlu_leaves, spec, layout, compare_values)
                    if outcome != "both_error":
                        emit(outcome=outcome, detail=detail, **case)



if __name__ == "__main__":
    sys.exit(main(__doc__.splitlines()[0], sweep_op, default_samples=8))
