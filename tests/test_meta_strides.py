"""Real strides are the declared ones: every op with an mlu kernel lays its outputs out as PyTorch's shape
functions (meta kernels, decompositions, fake tensors) declare.

torch.compile, torch.export and DTensor trace with fake tensors, whose strides come from those shape functions.
Inductor lays its buffers out by them, views a fallback op's outputs by them and asserts them
(assert_size_stride: the strides of dims longer than 1), so an op whose real strides differ from its declared
ones works eagerly and breaks compiled (issue 61 case 7: the overrideable SDPA backward's gradients).

Generated from the dispatcher and op_db: each op_db entry runs its first samples (float32, one per input rank,
at most SAMPLES) on mlu, forward and, where it supports autograd, backward, under a dispatch mode that, for every
aten overload reaching one of our PrivateUse1 kernels (torch._C._dispatch_get_registrations_for_dispatch_key),
runs the same call on fake copies of its arguments and compares each output's shape, dtype and significant
strides (those of dims longer than 1). A difference names the overload, the op_db entry and phase that reached
it, the shapes, both strides, and the CPU's strides for the same call (the same arguments, same strides, on the
CPU): where the CPU keeps to the declaration and mlu does not, it is ours to fix; where neither does, PyTorch's
declaration is inexact and the case may go to DECLARED_INEXACT with its reason. Calls the shape functions cannot
answer (data-dependent sizes, no meta kernel) are not compared.

  .venv/bin/python tests/test_meta_strides.py [--ops add,nn.functional.scaled_dot_product_attention]
                                              prints every difference and the coverage
"""
import argparse
import functools
import sys
import warnings

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import torch_mlu  # noqa: F401

SAMPLES = 1
REGISTERED = frozenset(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
FALLBACK_TOO = False  # --fallback-too: also the ops without an mlu kernel (the CPU fallback runs them)

# Overloads whose real strides may differ from the declared ones, with why: (overload, phase or None, reason).
# Only cases where the CPU's strides differ from the declaration too (PyTorch's own shape function is inexact for
# every backend, so compiled graphs cannot rely on it); a case where the CPU keeps to it is an mlu bug, not listed.
_COLUMN_MAJOR_OUT = ("an out= of no elements: the CPU's LAPACK kernel (ours as the CPU's) resizes it column-major, "
                     "PyTorch's out_wrapper declares it resized contiguous (_maybe_resize_out); compiled graphs "
                     "functionalize out= calls, so nothing relies on it")
DECLARED_INEXACT = [
    *[(overload, "out", _COLUMN_MAJOR_OUT) for overload in (
        "aten::_linalg_eigh.eigenvalues", "aten::linalg_eig.out", "aten::linalg_householder_product.out",
        "aten::linalg_ldl_factor_ex.out", "aten::linalg_ldl_solve.out", "aten::linalg_lu_factor_ex.out",
        "aten::linalg_lu_solve.out", "aten::linalg_qr.out", "aten::ormqr.out", "aten::triangular_solve.X")],
    ("aten::geqrf.a", "out", "PyTorch's meta kernel for geqrf's out= returns the out tensors without resizing them "
                             "(declared shape (0,)); the CPU resizes them, as mlu"),
    ("aten::conj_physical.out", "out", "an out= of no elements resized by the kernel takes its input's layout on "
                                       "the CPU and mlu (TensorIterator); PyTorch's out_wrapper declares it "
                                       "contiguous"),
]


def overload_name(func):
    schema = func._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def tensors(tree):
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def layout(t):
    """What a compiled graph relies on: shape, dtype and the strides of dims longer than 1 (assert_size_stride)."""
    strides = tuple((d, s) for d, (n, s) in enumerate(zip(t.shape, t.stride())) if n > 1) if t.numel() else ()
    return tuple(t.shape), t.dtype, strides


def on_cpu(x):
    """x on the CPU with x's sizes, strides and storage offset (its whole storage copied)."""
    if isinstance(x, torch.Tensor) and x.device.type == "mlu":
        storage = x.untyped_storage().cpu()
        return torch.empty(0, dtype=x.dtype).set_(storage, x.storage_offset(), x.shape, x.stride())
    if isinstance(x, torch.device) and x.type == "mlu":
        return torch.device("cpu")
    return x


def call_key(name, args, kwargs):
    """What an output's declared and real layouts can depend on: the overload, the arguments' structure, each
    tensor's shape, strides, storage offset, dtype and device, and every other argument's value; None where an
    operand is not strided."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if any(isinstance(x, torch.Tensor) and x.layout != torch.strided for x in leaves):
        return None  # sparse operands: compared every time
    return name, str(spec), tuple(
        (tuple(x.shape), x.stride(), x.storage_offset(), x.dtype, x.device.type) if isinstance(x, torch.Tensor)
        else repr(x) for x in leaves)


class CompareWithDeclared(TorchDispatchMode):
    """Runs every call reaching an mlu kernel on fake copies of its arguments too; records where outputs differ."""

    # The calls already compared, by call_key: an overload given tensors of the same layouts and the same other
    # arguments lays its outputs out the same way, so the many op_db entries reaching aten::add or aten::copy_ with
    # one kind of arguments compare it once.
    compared = set()

    def __init__(self, entry, phase, findings, reached):
        super().__init__()
        self.entry, self.phase, self.findings, self.reached = entry, phase, findings, reached
        self.running = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = overload_name(func)
        if name not in REGISTERED and not FALLBACK_TOO:
            return self.run_through(func, args, kwargs)
        key = call_key(name, args, kwargs)
        if key is not None and key in self.compared:
            return func(*args, **kwargs)
        self.compared.add(key)
        # Fake copies first: an in-place or out= call changes its arguments (so do the CPU's copies, then).
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        try:
            fake_args = pytree.tree_map_only(torch.Tensor, fake_mode.from_tensor, (args, kwargs))
        except Exception:  # noqa: BLE001 - a tensor fake tensors cannot stand for
            return func(*args, **kwargs)
        cpu_args = pytree.tree_map(on_cpu, (args, kwargs)) if func._schema.is_mutable else None
        result = func(*args, **kwargs) if name in REGISTERED else self.run_through(func, args, kwargs)
        real = tensors(result)
        if not any(t.device.type == "mlu" for t in real):
            return result
        try:
            with fake_mode, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                declared = tensors(func(*fake_args[0], **fake_args[1]))
        except Exception:  # noqa: BLE001 - data-dependent sizes, no shape function: nothing declared
            return result
        self.reached.add(name)
        bad = [i for i, (r, d) in enumerate(zip(real, declared)) if layout(r) != layout(d)]
        if len(real) != len(declared):
            bad = bad or [min(len(real), len(declared))]
        if bad:
            self.record(name, func, bad, real, declared, cpu_args or pytree.tree_map(on_cpu, (args, kwargs)),
                        [tuple(t.shape) for t in tensors((args, kwargs))])
        return result

    def record(self, name, func, bad, real, declared, cpu_args, shapes):
        try:
            cpu = tensors(func(*cpu_args[0], **cpu_args[1]))
        except Exception:  # noqa: BLE001 - no CPU kernel (the overrideable ops) or it refuses
            cpu = None

        def full(ts, i):
            return (tuple(ts[i].shape), tuple(ts[i].stride()), ts[i].dtype) if ts is not None and i < len(ts) else None
        for i in bad:
            self.findings.append(dict(
                overload=name, phase=self.phase, entry=self.entry, inputs=shapes, output=i, real=full(real, i),
                declared=full(declared, i), cpu=full(cpu, i),
                cpu_keeps=None if cpu is None else
                i < len(cpu) and i < len(declared) and layout(cpu[i]) == layout(declared[i])))

    def run_through(self, func, args, kwargs):
        """func's own composite kernel for mlu with this mode still on, so that the mlu kernels it calls are
        compared too (aten::convolution reaches convolution_overrideable)."""
        name = overload_name(func)
        if (name in self.running  # its kernel came back here (aten::detach's does)
                or not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")
                or not any(t.device.type == "mlu" for t in tensors((args, kwargs)))):
            return func(*args, **kwargs)
        self.running.add(name)
        try:
            with self:
                return func.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1), *args, **kwargs)
        finally:
            self.running.discard(name)


def entry_name(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def first_samples(op, dtype, grad):
    seen, picked = set(), []
    for sample in op.sample_inputs("mlu", dtype, requires_grad=grad):
        rank = sample.input.dim() if isinstance(sample.input, torch.Tensor) else -1
        if rank not in seen:
            seen.add(rank)
            picked.append(sample)
        if len(picked) == SAMPLES:
            break
    return picked


def check_entry(op, findings, reached):
    """Forward and backward of op's first float32 samples under CompareWithDeclared."""
    if torch.float32 not in op.supported_dtypes("cpu"):
        return
    grad = op.supports_autograd and torch.float32 in op.supported_backward_dtypes("cpu")
    name = entry_name(op)
    try:
        samples = first_samples(op, torch.float32, grad)
    except Exception:  # noqa: BLE001 - sample generation refusing mlu: test_opinfo.py covers the entry
        return
    for sample in samples:
        try:
            with CompareWithDeclared(name, "forward", findings, reached):
                out = op.op(sample.input, *sample.args, **sample.kwargs)
            if grad:
                outs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.requires_grad]
                ins = [t for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
                       if isinstance(t, torch.Tensor) and t.requires_grad]
                if outs and ins:
                    with CompareWithDeclared(name, "backward", findings, reached):
                        torch.autograd.grad(outs, ins, [torch.ones_like(t) for t in outs], allow_unused=True)
        except Exception:  # noqa: BLE001 - the op refusing the sample: test_opinfo.py covers it
            continue
        plain = sample.transform(lambda t: t.detach() if isinstance(t, torch.Tensor) else t)
        if op.inplace_variant is not None and isinstance(plain.input, torch.Tensor):
            try:
                with CompareWithDeclared(name, "inplace", findings, reached):
                    op.inplace_variant(plain.input.clone(), *plain.args, **plain.kwargs)
            except Exception:  # noqa: BLE001
                pass
        flat = pytree.tree_leaves(out)
        if op.supports_out and flat and all(isinstance(t, torch.Tensor) for t in flat):
            # out= tensors of no elements: the kernel resizes them and picks their strides.
            outs = [torch.empty(0, dtype=t.dtype, device="mlu") for t in flat]
            try:
                with CompareWithDeclared(name, "out", findings, reached):
                    op.op(plain.input, *plain.args, **plain.kwargs, out=outs[0] if len(outs) == 1 else tuple(outs))
            except Exception:  # noqa: BLE001
                pass
        torch.mlu.synchronize()


def attention_cases(findings, reached):
    """The overrideable SDPA ops on the layouts models give them (op_db's samples are contiguous): contiguous,
    [batch, seq, heads, dim] transposed (batch_first MultiheadAttention), [seq, batch * heads, dim] viewed as
    [batch, heads, seq, dim] (MultiheadAttention); and called directly with a transposed additive mask (which
    scaled_dot_product_attention would hand over contiguous)."""
    torch.manual_seed(0)
    layouts = {"contiguous": lambda b, h, s, d: torch.randn(b, h, s, d),
               "bshd": lambda b, h, s, d: torch.randn(b, s, h, d).transpose(1, 2),
               "mha": lambda b, h, s, d: torch.randn(s, b * h, d).transpose(0, 1).view(b, h, s, d)}
    fused = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    for layout, make in layouts.items():
        for masked in (False, True):
            leaves = [make(2, 4, 8, 16).to("mlu").requires_grad_() for _ in range(3)]
            if masked:
                leaves.append(torch.randn(2, 4, 8, 8).transpose(-1, -2).to("mlu").requires_grad_())
            name = f"scaled_dot_product_attention[{layout}{', transposed mask' if masked else ''}]"
            with CompareWithDeclared(name, "forward", findings, reached):
                out = fused(*leaves)[0] if masked else F.scaled_dot_product_attention(*leaves)
            with CompareWithDeclared(name, "backward", findings, reached):
                torch.autograd.grad(out, leaves, torch.ones_like(out))


def inexact(finding):
    return any(o == finding["overload"] and p in (None, finding["phase"]) for o, p, _ in DECLARED_INEXACT)


def sweep(wanted=()):
    findings, reached = [], set()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    for op in op_db:
        if not wanted or entry_name(op) in wanted or op.name in wanted:
            check_entry(op, findings, reached)
    attention_cases(findings, reached)
    return findings, reached


@functools.lru_cache(maxsize=None)
def _sweep():
    with warnings.catch_warnings():
        return sweep()


def describe(f):
    cpu = {None: "no CPU kernel", True: "the CPU keeps to the declaration", False: "the CPU does not either"}
    return (f'{f["overload"]} ({f["phase"]} of {f["entry"]}, inputs {f["inputs"]}): output {f["output"]} '
            f'(shape, strides, dtype) {f["real"]} on mlu, declared {f["declared"]}, CPU {f["cpu"]} '
            f'({cpu[f["cpu_keeps"]]})')


def test_every_reached_kernel_keeps_to_its_declared_strides():
    findings, _ = _sweep()
    unexpected = {}
    for f in findings:
        if not inexact(f):
            unexpected.setdefault(f["overload"], describe(f))
    assert not unexpected, "outputs laid out otherwise than their shape functions declare:\n" + "\n".join(
        f"  {d}" for d in unexpected.values())


def test_declared_inexact_entries_are_still_seen():
    findings, _ = _sweep()
    stale = [o for o, p, _ in DECLARED_INEXACT
             if not any(f["overload"] == o and p in (None, f["phase"]) for f in findings)]
    assert not stale, f"DECLARED_INEXACT lists differences no longer seen: {stale}"


def test_sweep_reaches_the_kernels():
    _, reached = _sweep()
    assert len(reached) > 600, f"only {len(reached)} of {len(REGISTERED)} mlu kernels compared"
    for name in ("aten::_scaled_dot_product_fused_attention_overrideable",
                 "aten::_scaled_dot_product_fused_attention_overrideable_backward",
                 "aten::convolution_overrideable", "aten::convolution_backward_overrideable"):
        assert name in reached, name


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default="", help="comma-separated op_db names (default: all)")
    parser.add_argument("--fallback-too", action="store_true", help="also ops the CPU fallback runs")
    options = parser.parse_args()
    FALLBACK_TOO = options.fallback_too
    found, hit = sweep(set(filter(None, options.ops.split(","))))
    for f in found:
        print(("inexact  " if inexact(f) else "MISMATCH ") + describe(f))
    print(f"{len(hit & REGISTERED)} of {len(REGISTERED)} mlu kernels compared ({len(hit - REGISTERED)} other ops); "
          f"{len(found)} differences", file=sys.stderr)
