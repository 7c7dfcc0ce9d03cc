"""Op families on mlu against stock PyTorch on the CPU, same machine, same run.

Covers element-wise unary math, activations and some of their backward ops,
binary arithmetic, comparisons, where/clamp/lerp/addcmul/addcdiv, bitwise and
logical ops, dtype conversions, reductions (over the last dim, dim 0 and all)
and indexing/shape ops, on three layouts:

- contig:    [R, C] contiguous (C = 1024, R = n / 1024),
- broadcast: [R, C] op [C] (a row broadcast over the rows; ops with two or more
             tensor operands only),
- noncontig: every [R, C] operand is a transposed view of a [C, R] tensor,

at sizes 4K, 64K, 1M and 16M elements, in float32 and bfloat16 (ops that need
int32/int64/bool inputs use those and always run, whatever --dtypes says).

Default matrix (about 10 minutes on 2 cores): every op at 4K/64K/1M, float32
on every layout the op has, bfloat16 on the contiguous layout only, and 16M
for a representative subset of ops (marked `big` below), contiguous float32.
`--full` runs the whole matrix (bfloat16 on every layout, 16M for every op);
naming ops with `--ops` lifts the 16M subset restriction for those ops.

Timing (both devices the same way): one warm-up call (on mlu, between
`torch_mlu.reset_fallback_report()` and `fallback_report()`, which records the
ops that ran through the CPU fallback), a second warm-up call, one timed call
to size a batch, then batches of k calls, each batch ended by
`torch.mlu.synchronize()` on mlu (nothing on the CPU), timed as a whole and
divided by k: the per-call time of a stream of launches, i.e. throughput, with
all queued device work included. At least --min-reps batches and about
--min-time seconds per device; the median batch is reported. The devices are
timed one after the other, not interleaved: CPU PyTorch's OpenMP threads
keep spinning after each parallel region, and on a machine with few cores
that spin slows whichever mlu batch follows a CPU batch (the measurement is
in docs/bench_kernels.md, "Measurements formerly in code comments").
`--repeat R` runs the whole
matrix R times and reports, per case, the median of the R passes (the machines
are shared: a single pass can catch a burst of other load on one case).

`--recheck R` then re-measures every case of >= 1M elements whose median ratio
is below 0.8 (RECHECK_BELOW) with R more passes over just those cases, and
reports the median of all its passes (the first ones included): a confirmation
test for the "no op below 0.7" target: on a shared machine a case below it
is often one that caught a slow spell, and the extra passes tell those from
real shortfalls. The
JSON and the summary list every rechecked case with its ratio before and after.

ratio = cpu time / mlu time: above 1 means mlu is faster. The summary gives
the geometric mean of the ratio over all cases with >= 1M elements (and per
family, native vs fallback), and the ops with a ratio below 0.7 at >= 1M.
A case that raises is recorded with "error" and the run goes on. On 2 cores
any other busy process (a build) ruins the numbers, so the CPU time used by
other processes is measured per case (/proc/stat less this process) and a
case with more than 0.25 cores busy elsewhere is marked "!" ("other_load").

    python benchmarks/bench_ops.py [--quick] [--full] [--ops exp,add,reduction,'sum*']
        [--sizes 4K,1M] [--dtypes float32] [--layouts contig] [--min-time 0.1]
        [--min-reps 5] [--repeat 3] [--recheck 4] [--out benchmarks/results/bench_ops.json]
"""
import argparse
import fnmatch
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings

from host_isa import add_isa_argument, force_isa_from_argv, isa_label, isa_report

force_isa_from_argv()  # before torch loads: the caps are read at start-up

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_mlu  # noqa: E402

aten = torch.ops.aten
DEV = object()  # placeholder for the device argument of factory ops
FLOAT = ("float32", "bfloat16")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}
ALL_LAYOUTS = ("contig", "broadcast", "noncontig")
DEFAULT_SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20)
BIG = 16 << 20


def size_label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


# --------------------------------------------------------------------------------------------
# Inputs. A builder gets a Ctx and returns the op's arguments as CPU tensors (with the layout
# of the case); the mlu arguments are exact copies with the same sizes and strides.

class Ctx:
    def __init__(self, n, dtype, layout, seed=0):
        self.C = min(1024, n)
        self.R = max(1, n // self.C)
        self.n = self.R * self.C
        self.dtype = dtype
        self.layout = layout
        self.g = torch.Generator().manual_seed(seed)

    def make(self, shape, kind="randn", dtype=None):
        dtype = dtype or self.dtype
        g = self.g
        if kind == "randn":
            t = torch.randn(shape, generator=g)
        elif kind == "pos":      # in [0.5, 2.5): log, sqrt, divisors, pow bases
            t = torch.rand(shape, generator=g) * 2 + 0.5
        elif kind == "unit":     # in (-0.9, 0.9)
            t = torch.rand(shape, generator=g) * 1.8 - 0.9
        elif kind == "prob":     # in (0.05, 0.95): sigmoid outputs
            t = torch.rand(shape, generator=g) * 0.9 + 0.05
        elif kind == "near1":    # products that neither vanish nor overflow
            t = 1 + 0.001 * torch.randn(shape, generator=g)
        elif kind == "int":
            return torch.randint(-1000, 1000, shape, generator=g, dtype=dtype)
        elif kind == "bool":
            return torch.rand(shape, generator=g) < 0.5
        else:
            raise ValueError(kind)
        return t.to(dtype)

    def main(self, kind="randn", dtype=None):
        """The [R, C] operand: contiguous, or a transposed view for noncontig."""
        if self.layout == "noncontig":
            return self.make((self.C, self.R), kind, dtype).t()
        return self.make((self.R, self.C), kind, dtype)

    def other(self, kind="randn", dtype=None):
        """A further operand: as main(), but a [C] row for broadcast."""
        if self.layout == "broadcast":
            return self.make((self.C,), kind, dtype)
        return self.main(kind, dtype)

    def index(self, high, size):
        return torch.randint(0, high, size if isinstance(size, tuple) else (size,), generator=self.g)


def mirror(obj, device):
    if obj is DEV:
        return device
    if isinstance(obj, torch.Tensor):
        if device == "cpu":
            return obj
        return torch.empty_strided(obj.size(), obj.stride(), dtype=obj.dtype, device=device).copy_(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(mirror(o, device) for o in obj)
    return obj


# --------------------------------------------------------------------------------------------
# The ops. Op(name, family, fn, build, dtypes, layouts, big): fn(*args) runs the op on args
# from build(ctx); `dtypes` FLOAT follows --dtypes, any other tuple is fixed (int/bool inputs).

class Op:
    def __init__(self, name, family, fn, build, dtypes=FLOAT, layouts=("contig", "noncontig"), big=False):
        self.name, self.family, self.fn, self.build = name, family, fn, build
        self.dtypes, self.layouts, self.big = dtypes, layouts, big


def one(kind="randn"):
    return lambda c: (c.main(kind),)


def two(k1="randn", k2="randn"):
    return lambda c: (c.main(k1), c.other(k2))


def build_ops():
    ops = []

    def add(*a, **k):
        ops.append(Op(*a, **k))

    # element-wise unary math
    for name, fn, kind in [
        ("exp", torch.exp, "randn"), ("expm1", torch.expm1, "randn"), ("log", torch.log, "pos"),
        ("log1p", torch.log1p, "pos"), ("sqrt", torch.sqrt, "pos"), ("rsqrt", torch.rsqrt, "pos"),
        ("reciprocal", torch.reciprocal, "pos"), ("sin", torch.sin, "randn"), ("cos", torch.cos, "randn"),
        ("tanh", torch.tanh, "randn"), ("sigmoid", torch.sigmoid, "randn"), ("erf", torch.erf, "randn"),
        ("abs", torch.abs, "randn"), ("neg", torch.neg, "randn"), ("floor", torch.floor, "randn"),
        ("ceil", torch.ceil, "randn"), ("round", torch.round, "randn"), ("trunc", torch.trunc, "randn"),
        ("sign", torch.sign, "randn"),
    ]:
        add(name, "unary", fn, one(kind), big=name in ("exp", "sqrt", "sigmoid"))

    # activations
    for name, fn in [
        ("relu", F.relu), ("gelu", F.gelu), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
        ("silu", F.silu), ("mish", F.mish), ("elu", F.elu), ("leaky_relu", F.leaky_relu),
        ("hardtanh", F.hardtanh), ("hardswish", F.hardswish), ("hardsigmoid", F.hardsigmoid),
        ("softplus", F.softplus),
    ]:
        add(name, "activation", fn, one(), big=name in ("relu", "gelu", "silu"))
    for name, fn, kind in [
        ("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 0.0), "randn"),
        ("gelu_backward", lambda g, x: aten.gelu_backward(g, x), "randn"),
        ("gelu_backward_tanh", lambda g, x: aten.gelu_backward(g, x, approximate="tanh"), "randn"),
        ("sigmoid_backward", aten.sigmoid_backward, "prob"),
        ("tanh_backward", aten.tanh_backward, "unit"),
        ("silu_backward", aten.silu_backward, "randn"),
    ]:
        add(name, "activation_bwd", fn, (lambda k: lambda c: (c.main(), c.main(k)))(kind),
            layouts=("contig",), big=name == "threshold_backward")

    # binary arithmetic
    bin_layouts = ALL_LAYOUTS
    for name, fn, build, big in [
        ("add", torch.add, two(), True),
        ("add_alpha", lambda a, b: torch.add(a, b, alpha=2), two(), False),
        ("add_scalar", lambda a: a + 1.5, one(), False),
        ("sub", torch.sub, two(), False),
        ("mul", torch.mul, two(), True),
        ("mul_scalar", lambda a: a * 1.5, one(), False),
        ("div", torch.div, two("randn", "pos"), True),
        ("pow", torch.pow, two("pos", "unit"), False),
        ("pow_scalar", lambda a: a ** 3, one(), False),
        ("fmod", torch.fmod, two("randn", "pos"), False),
        ("remainder", torch.remainder, two("randn", "pos"), False),
        ("maximum", torch.maximum, two(), False),
        ("minimum", torch.minimum, two(), False),
    ]:
        layouts = bin_layouts if len(build(Ctx(4, torch.float32, "contig"))) > 1 else ("contig", "noncontig")
        add(name, "binary", fn, build, layouts=layouts, big=big)

    # comparisons
    for name, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
                     ("gt", torch.gt), ("ge", torch.ge)]:
        add(name, "compare", fn, two(), layouts=bin_layouts, big=name == "lt")
    add("gt_scalar", "compare", lambda a: a > 0.1, one())

    # where / clamp / lerp / addcmul / addcdiv
    add("where", "ternary", torch.where, lambda c: (c.main("bool", torch.bool), c.main(), c.other()),
        layouts=ALL_LAYOUTS, big=True)
    add("where_scalar", "ternary", lambda m, a: torch.where(m, a, 0.0),
        lambda c: (c.main("bool", torch.bool), c.other()), layouts=ALL_LAYOUTS)
    add("clamp", "ternary", lambda x: torch.clamp(x, -0.5, 0.5), one(), big=True)
    add("clamp_tensor", "ternary", torch.clamp,
        lambda c: (c.main(), c.other("randn") - 1, c.other("randn") + 1), layouts=ALL_LAYOUTS)
    add("lerp", "ternary", lambda a, b: torch.lerp(a, b, 0.3), two(), layouts=ALL_LAYOUTS)
    add("lerp_tensor", "ternary", torch.lerp, lambda c: (c.main(), c.other(), c.other("unit")),
        layouts=ALL_LAYOUTS)
    add("addcmul", "ternary", lambda a, b, d: torch.addcmul(a, b, d, value=0.5),
        lambda c: (c.main(), c.other(), c.other()), layouts=ALL_LAYOUTS, big=True)
    add("addcdiv", "ternary", lambda a, b, d: torch.addcdiv(a, b, d, value=0.5),
        lambda c: (c.main(), c.other(), c.other("pos")), layouts=ALL_LAYOUTS)

    # bitwise (int32) and logical (bool)
    i32 = lambda c: (c.main("int", torch.int32), c.other("int", torch.int32))
    bo = lambda c: (c.main("bool", torch.bool), c.other("bool", torch.bool))
    for name, fn, build, dt in [
        ("bitwise_and", torch.bitwise_and, i32, "int32"), ("bitwise_or", torch.bitwise_or, i32, "int32"),
        ("bitwise_xor", torch.bitwise_xor, i32, "int32"),
        ("bitwise_and_bool", torch.bitwise_and, bo, "bool"),
        ("logical_and", torch.logical_and, bo, "bool"), ("logical_or", torch.logical_or, bo, "bool"),
        ("logical_xor", torch.logical_xor, bo, "bool"),
    ]:
        add(name, "bitwise", fn, build, dtypes=(dt,), layouts=ALL_LAYOUTS, big=name == "logical_and")
    add("bitwise_not", "bitwise", torch.bitwise_not, lambda c: (c.main("int", torch.int32),), dtypes=("int32",))
    add("shift_left", "bitwise", lambda a: a << 3, lambda c: (c.main("int", torch.int32),), dtypes=("int32",))
    add("logical_not", "bitwise", torch.logical_not, lambda c: (c.main("bool", torch.bool),), dtypes=("bool",))

    # dtype conversions (the dtype column is the source dtype)
    for src, dst, kind in [
        ("float32", "bfloat16", "randn"), ("bfloat16", "float32", "randn"), ("float32", "float16", "randn"),
        ("float16", "float32", "randn"), ("float32", "float64", "randn"), ("float32", "int64", "randn"),
        ("int64", "float32", "int"), ("float32", "int32", "randn"), ("int32", "float32", "int"),
        ("float32", "bool", "randn"), ("bool", "float32", "bool"),
    ]:
        add(f"to_{dst}", "convert", (lambda d: lambda x: x.to(d))(DTYPES[dst]),
            (lambda k, s: lambda c: (c.main(k, DTYPES[s]),))(kind, src), dtypes=(src,),
            big=(src, dst) == ("float32", "bfloat16"))

    # reductions: over the last dim, over dim 0 and over all
    dims = [("dim=-1", -1), ("dim=0", 0), ("all", None)]
    for name, fn, kind, dt, big in [
        ("sum", lambda x, d: x.sum() if d is None else x.sum(d), "randn", FLOAT, True),
        ("mean", lambda x, d: x.mean() if d is None else x.mean(d), "randn", FLOAT, False),
        ("prod", lambda x, d: x.prod() if d is None else x.prod(d), "near1", FLOAT, False),
        ("amax", lambda x, d: x.amax() if d is None else x.amax(d), "randn", FLOAT, True),
        ("argmax", lambda x, d: x.argmax() if d is None else x.argmax(d), "randn", FLOAT, False),
        ("var", lambda x, d: x.var() if d is None else x.var(d), "randn", FLOAT, False),
        ("std", lambda x, d: x.std() if d is None else x.std(d), "randn", FLOAT, False),
        ("norm", lambda x, d: torch.linalg.vector_norm(x, dim=d), "randn", FLOAT, False),
        ("logsumexp", lambda x, d: torch.logsumexp(x, (0, 1) if d is None else d), "randn", FLOAT, False),
        ("all", lambda x, d: x.all() if d is None else x.all(d), "bool", ("bool",), False),
        ("any", lambda x, d: x.any() if d is None else x.any(d), "bool", ("bool",), False),
        ("max_dim", lambda x, d: torch.max(x, d), "randn", FLOAT, False),
        ("cumsum", lambda x, d: torch.cumsum(x, d), "randn", FLOAT, True),
        ("softmax", lambda x, d: torch.softmax(x, d), "randn", FLOAT, True),
        ("log_softmax", lambda x, d: torch.log_softmax(x, d), "randn", FLOAT, False),
    ]:
        for label, d in dims:
            if d is None and name in ("max_dim", "cumsum", "softmax", "log_softmax"):
                continue
            build = (lambda k, t: lambda c: (c.main(k, torch.bool if t == ("bool",) else None),))(kind, dt)
            add(f"{name}({label})", "reduction", (lambda f, d: lambda x: f(x, d))(fn, d), build, dtypes=dt,
                big=big and (name, label) in (("sum", "all"), ("sum", "dim=-1"), ("sum", "dim=0"),
                                              ("amax", "dim=-1"), ("cumsum", "dim=-1"), ("softmax", "dim=-1")))

    # indexing and shape
    add("index_select", "index", lambda x, i: torch.index_select(x, 0, i),
        lambda c: (c.main(), c.index(c.R, c.R)), big=True)
    add("gather", "index", lambda x, i: torch.gather(x, 1, i),
        lambda c: (c.main(), c.index(c.C, (c.R, c.C))), big=True)
    add("scatter_add", "index", lambda x, i, s: torch.scatter_add(x, 1, i, s),
        lambda c: (c.main(), c.index(c.C, (c.R, c.C)), c.main()), layouts=("contig",))
    add("index_add", "index", lambda x, i, s: torch.index_add(x, 0, i, s),
        lambda c: (c.main(), c.index(c.R, c.R), c.main()), layouts=("contig",))
    add("index_put", "index", lambda x, i, v: torch.index_put(x, (i,), v),
        lambda c: (c.main(), torch.randperm(c.R, generator=c.g), c.main()), layouts=("contig",))
    add("index_put_acc", "index", lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
        lambda c: (c.main(), c.index(c.R, c.R), c.main()), layouts=("contig",))
    add("adv_index_rows", "index", lambda x, i: x[i], lambda c: (c.main(), c.index(c.R, c.R)))
    add("adv_index_points", "index", lambda x, i, j: x[i, j],
        lambda c: (c.main(), c.index(c.R, c.n), c.index(c.C, c.n)), layouts=("contig",))
    add("masked_fill", "index", lambda x, m: x.masked_fill(m, 0.0),
        lambda c: (c.main(), c.main("bool", torch.bool)), big=True)
    add("masked_select", "index", torch.masked_select, lambda c: (c.main(), c.main("bool", torch.bool)),
        layouts=("contig",))
    add("nonzero", "index", torch.nonzero, lambda c: (c.main("bool", torch.bool),), dtypes=("bool",),
        layouts=("contig",))
    add("cat(dim=0)", "index", lambda a, b: torch.cat([a, b], 0), lambda c: (c.main(), c.main()), big=True)
    add("cat(dim=-1)", "index", lambda a, b: torch.cat([a, b], -1), lambda c: (c.main(), c.main()))
    add("stack", "index", lambda a, b: torch.stack([a, b]), lambda c: (c.main(), c.main()))
    add("repeat", "index", lambda x: x.repeat(2, 1), one())
    add("flip(dim=-1)", "index", lambda x: torch.flip(x, [-1]), one())
    add("flip(dim=0)", "index", lambda x: torch.flip(x, [0]), one())
    add("roll", "index", lambda x: torch.roll(x, 7, -1), one())
    add("tril", "index", torch.tril, one())
    add("sort", "index", lambda x: torch.sort(x, -1), one())
    add("topk", "index", lambda x: torch.topk(x, 8, -1), one())
    add("embedding", "index", F.embedding, lambda c: (c.index(c.R, c.R), c.main()), layouts=("contig",))
    add("contiguous", "index", lambda x: x.contiguous(), one(), layouts=("noncontig",))
    add("clone", "index", torch.clone, one(), layouts=("contig",))
    add("arange", "index", lambda n, dt, dev: torch.arange(n, dtype=dt, device=dev),
        lambda c: (c.n, c.dtype, DEV), layouts=("contig",))
    add("full", "index", lambda r, cc, dt, dev: torch.full((r, cc), 1.5, dtype=dt, device=dev),
        lambda c: (c.R, c.C, c.dtype, DEV), layouts=("contig",), big=True)
    return ops


# --------------------------------------------------------------------------------------------
# Timing

class OtherLoad:
    """Cores kept busy by other processes since the last call (Linux /proc/stat, else None).

    A benchmark on 2 cores is meaningless while something else runs (a build, say): OpenMP
    regions then wait for descheduled threads and times jump to multiples of the scheduler slice.
    """
    def __init__(self):
        self.last = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / hz  # user..steal, less idle and iowait
        return busy, time.process_time(), time.perf_counter()

    def __call__(self):
        now = self._sample()
        last, self.last = self.last, now
        if now is None or last is None or now[2] - last[2] <= 0:
            return None
        return max(0.0, ((now[0] - last[0]) - (now[1] - last[1])) / (now[2] - last[2]))


def nop():
    pass


def batch_size(fn, args, sync, min_time, min_reps, max_batch=100000):
    """Calls per batch: about min_time / min_reps seconds, from one timed call."""
    start = time.perf_counter()
    fn(*args)
    sync()
    single = max(time.perf_counter() - start, 1e-7)
    return max(1, min(max_batch, int(min_time / min_reps / single)))


def timed_batch(fn, args, sync, k):
    start = time.perf_counter()
    for _ in range(k):
        fn(*args)
    sync()
    return (time.perf_counter() - start) / k


def measure(fn, args, sync, min_time, min_reps):
    """Median per-call seconds over batches of k calls (see the module docstring)."""
    k = batch_size(fn, args, sync, min_time, min_reps)
    runs = []
    begin = time.perf_counter()
    while len(runs) < min_reps or (time.perf_counter() - begin < min_time and len(runs) < 50):
        runs.append(timed_batch(fn, args, sync, k))
    return statistics.median(runs), runs, k


def run_case(op, n, dtype_name, layout, args):
    case = {"op": op.name, "family": op.family, "layout": layout, "n": n, "size": size_label(n),
            "dtype": dtype_name}
    try:
        ctx = Ctx(n, DTYPES[dtype_name], layout)
        cpu_args = mirror(op.build(ctx), "cpu")
        mlu_args = mirror(cpu_args, "mlu")
        case["numel"] = ctx.n
        # CPU: two warm-up calls, then the timed batches
        op.fn(*cpu_args)
        op.fn(*cpu_args)
        cpu_med, cpu_runs, cpu_k = measure(op.fn, cpu_args, nop, args.min_time, args.min_reps)
        # mlu: a warm-up call between reset_fallback_report() / fallback_report(), a second one, timing
        torch.mlu.synchronize()
        torch_mlu.reset_fallback_report()
        op.fn(*mlu_args)
        torch.mlu.synchronize()
        fallback = {k.removeprefix("aten::"): v for k, v in torch_mlu.fallback_report().items()}
        op.fn(*mlu_args)
        torch.mlu.synchronize()
        mlu_med, mlu_runs, mlu_k = measure(op.fn, mlu_args, torch.mlu.synchronize, args.min_time, args.min_reps)
        case.update({
            "cpu_us": round(cpu_med * 1e6, 3), "mlu_us": round(mlu_med * 1e6, 3), "ratio": round(cpu_med / mlu_med, 4),
            "native": not fallback, "fallback": fallback,
            "cpu_batch": cpu_k, "mlu_batch": mlu_k,
            "cpu_runs_us": [round(t * 1e6, 3) for t in cpu_runs],
            "mlu_runs_us": [round(t * 1e6, 3) for t in mlu_runs],
        })
    except Exception as e:  # noqa: BLE001 - a failing case is recorded, the run goes on
        case["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        try:
            torch.mlu.synchronize()
        except Exception:  # noqa: BLE001 - the device error of this case, already recorded
            pass
    return case


RECHECK_BELOW = 0.8


def combine_passes(passes):
    """One case from its --repeat passes: median cpu and mlu times, median ratio, every pass kept."""
    ok = [p for p in passes if "ratio" in p]
    if len(ok) < len(passes):
        return next(p for p in passes if "error" in p)
    case = dict(ok[0])
    for key in ("cpu_us", "mlu_us", "ratio"):
        case[key] = round(statistics.median(p[key] for p in ok), 4 if key == "ratio" else 3)
    case["pass_ratios"] = [p["ratio"] for p in ok]
    case["other_load"] = max((p.get("other_load") or 0) for p in ok)
    for key in ("cpu_runs_us", "mlu_runs_us"):
        case.pop(key, None)
    return case


# --------------------------------------------------------------------------------------------

def select_cases(ops, args):
    want = [w.strip() for w in args.ops.split(",")] if args.ops else None
    cases = []
    for op in ops:
        if want and not any(w in (op.name, op.family) or fnmatch.fnmatchcase(op.name, w) for w in want):
            continue
        for layout in op.layouts:
            if args.layouts and layout not in args.layouts:
                continue
            if op.dtypes == FLOAT:
                dtypes = [d for d in args.dtypes if d in FLOAT]
            else:
                dtypes = list(op.dtypes)
            for dtype in dtypes:
                if op.dtypes == FLOAT and dtype != "float32" and layout != "contig" and not args.full:
                    continue  # default: bfloat16 on the contiguous layout only
                for n in args.sizes:
                    if n >= BIG and not (args.full or want or op.big):
                        continue  # default: 16M for the `big` subset only ...
                    if n >= BIG and not (args.full or want) and (layout != "contig" or dtype == "bfloat16"):
                        continue  # ... contiguous, not bfloat16
                    cases.append((op, n, dtype, layout))
    return cases


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results, big_n):
    ok = [r for r in results if "ratio" in r]
    large = [r for r in ok if r["numel"] >= big_n]
    summary = {
        "cases": len(results), "errors": sum("error" in r for r in results),
        "native_cases": sum(r["native"] for r in ok), "fallback_cases": sum(not r["native"] for r in ok),
        "large_threshold": big_n, "large_cases": len(large),
        "geomean_ratio_large": geomean([r["ratio"] for r in large]),
        "geomean_ratio_large_native": geomean([r["ratio"] for r in large if r["native"]]),
        "geomean_ratio_large_fallback": geomean([r["ratio"] for r in large if not r["native"]]),
        "geomean_ratio_all": geomean([r["ratio"] for r in ok]),
        "geomean_ratio_large_by_family": {},
        "worst_large": [],
        "native_ops": sorted({r["op"] for r in ok if r["native"]}),
        "fallback_ops": sorted({r["op"] for r in ok if not r["native"]}),
    }
    for fam in dict.fromkeys(r["family"] for r in large):
        summary["geomean_ratio_large_by_family"][fam] = geomean([r["ratio"] for r in large if r["family"] == fam])
    worst = {}
    for r in large:
        if r["ratio"] < 0.7 and (r["op"] not in worst or r["ratio"] < worst[r["op"]]["ratio"]):
            worst[r["op"]] = r
    summary["worst_large"] = [
        {"op": r["op"], "ratio": r["ratio"], "layout": r["layout"], "size": r["size"], "dtype": r["dtype"],
         "native": r["native"]}
        for r in sorted(worst.values(), key=lambda r: r["ratio"])]
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--ops", help="comma list of op names, families or globs (e.g. exp,binary,'sum*')")
    parser.add_argument("--sizes", help="comma list of sizes in elements, e.g. 4K,64K,1M,16M")
    parser.add_argument("--dtypes", help="comma list among float32,bfloat16 (int/bool ops always run)")
    parser.add_argument("--layouts", help="comma list among contig,broadcast,noncontig")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 64K only, float32, --min-time 0.02 (unless given)")
    parser.add_argument("--full", action="store_true", help="bfloat16 on every layout and 16M for every op")
    parser.add_argument("--min-time", type=float, help="seconds of timed batches per device and case (0.1)")
    parser.add_argument("--min-reps", type=int, default=5, help="at least this many batches (5)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the whole matrix this many times; each case reports the median of its passes")
    parser.add_argument("--recheck", type=int, default=0,
                        help=f"this many more passes over the cases >= 1M below {RECHECK_BELOW} (see above)")
    parser.add_argument("--list", action="store_true", help="print the selected cases and exit")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_ops.json"))
    add_isa_argument(parser)
    args = parser.parse_args()
    args.sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else (
        [64 << 10] if args.quick else list(DEFAULT_SIZES))
    args.dtypes = [d.strip() for d in args.dtypes.split(",")] if args.dtypes else (
        ["float32"] if args.quick else list(FLOAT))
    for d in args.dtypes:
        if d not in FLOAT:
            parser.error(f"--dtypes: {d!r} is not one of {', '.join(FLOAT)}")
    args.layouts = [s.strip() for s in args.layouts.split(",")] if args.layouts else None
    for lay in args.layouts or ():
        if lay not in ALL_LAYOUTS:
            parser.error(f"--layouts: {lay!r} is not one of {', '.join(ALL_LAYOUTS)}")
    if args.min_time is None:
        args.min_time = 0.02 if args.quick else 0.1
    warnings.simplefilter("ignore")  # the CPU fallback warns once per op

    cases = select_cases(build_ops(), args)
    if not cases:
        parser.error("no case selected (see --ops / --sizes / --dtypes / --layouts)")
    if args.list:
        for op, n, dtype, layout in cases:
            print(f"{op.family:<15} {op.name:<22} {layout:<10} {size_label(n):>5} {dtype}")
        print(f"{len(cases)} cases")
        return

    other = OtherLoad()
    time.sleep(1.0)
    other_start = other()
    if other_start is not None and other_start > 0.25:
        print(f"warning: other processes keep {other_start:.1f} of {os.cpu_count()} cores busy: "
              "timings will be unreliable", flush=True)
    other_run = OtherLoad()
    isa = isa_report()
    print(f"instruction sets: {isa_label(isa)}; mlu kernels {isa['mlu_kernels_isa']}"
          f"{' + AMX' if isa['mlu_amx'] else ''}, ATen {isa['aten_cpu_capability']}", flush=True)
    header = (f"{'family':<15} {'op':<22} {'layout':<10} {'size':>5} {'dtype':<9} {'cpu us':>11} {'mlu us':>11} "
              f"{'cpu/mlu':>8}  fallback")
    print(header)
    print("-" * len(header))
    passes = [[] for _ in cases]
    t0 = time.perf_counter()
    rounds = [(f"pass {rep + 1} of {args.repeat}" if args.repeat > 1 else None, range(len(cases)))
              for rep in range(args.repeat)]
    rechecked = {}
    while rounds:
        label, indices = rounds.pop(0)
        if label:
            print(f"-- {label}", flush=True)
        for i in indices:
            (op, n, dtype, layout), done = cases[i], passes[i]
            case_load = OtherLoad()
            r = run_case(op, n, dtype, layout, args)
            r["other_load"] = case_load()
            done.append(r)
            head = f"{op.family:<15} {op.name:<22} {layout:<10} {r['size']:>5} {dtype:<9}"
            if "error" in r:
                print(f"{head} ERROR {r['error'][:100]}", flush=True)
            else:
                fb = ",".join(r["fallback"]) if r["fallback"] else "- (native)"
                busy = "!" if (r["other_load"] or 0) > 0.25 else " "
                print(f"{head} {r['cpu_us']:>11.1f} {r['mlu_us']:>11.1f} {r['ratio']:>8.3f}{busy} {fb[:60]}",
                      flush=True)
        if not rounds and args.recheck and not rechecked:
            suspects = [i for i, p in enumerate(passes) if cases[i][1] >= 1 << 20
                        and combine_passes(p).get("ratio", 1) < RECHECK_BELOW]
            rechecked = {i: combine_passes(passes[i])["ratio"] for i in suspects}
            rounds = [(f"recheck {rep + 1} of {args.recheck}: {len(suspects)} cases below {RECHECK_BELOW}", suspects)
                      for rep in range(args.recheck) if suspects]
    results = [combine_passes(p) if len(p) > 1 else p[0] for p in passes]
    elapsed = time.perf_counter() - t0
    other_during = other_run()

    big_n = 1 << 20
    summary = summarize(results, big_n)
    summary["elapsed_s"] = elapsed
    summary["rechecked"] = [
        {"op": results[i]["op"], "layout": results[i]["layout"], "size": results[i]["size"],
         "dtype": results[i]["dtype"], "ratio_before": before, "ratio": results[i].get("ratio"),
         "pass_ratios": results[i].get("pass_ratios")}
        for i, before in rechecked.items()]
    report = {
        "benchmark": "ops",
        "torch": torch.__version__,
        "torch_mlu": torch_mlu.__version__,
        "machine": platform.machine(),
        "isa": isa,
        "python": sys.version.split()[0],
        "cpu_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "other_load_start": other_start,
        "other_load_during": other_during,
        "config": {
            "sizes": args.sizes, "dtypes": args.dtypes, "layouts": args.layouts, "ops": args.ops,
            "quick": args.quick, "full": args.full, "min_time_s": args.min_time, "min_reps": args.min_reps,
            "repeat": args.repeat, "recheck": args.recheck, "recheck_below": RECHECK_BELOW,
            "shape": "[n/1024, 1024] (C = min(1024, n)); broadcast: [R, C] with a [C] row; "
                     "noncontig: transposed views",
            "timing": "per device: 2 warm-up calls (the first between reset_fallback_report and "
                      "fallback_report on mlu), then batches of k calls each ended by torch.mlu.synchronize() "
                      "(mlu) and divided by k; median batch; at least min_reps batches and ~min_time s; with "
                      "repeat > 1 the median over the passes",
            "ratio": "cpu time / mlu time (> 1: mlu faster)",
            "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCH_MLU", "MLU_", "OMP_"))},
        },
        "summary": summary,
        "results": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:  # indented, but one line per case
        head = json.dumps({k: v for k, v in report.items() if k != "results"}, indent=1)
        f.write(head[:-2] + ',\n "results": [\n  ' + ",\n  ".join(json.dumps(r) for r in results) + "\n ]\n}\n")

    def fmt(x):
        return "n/a" if x is None else f"{x:.3f}"

    print()
    print(f"{summary['cases']} cases in {elapsed:.0f} s, {summary['errors']} errors; "
          f"{summary['native_cases']} native on mlu, {summary['fallback_cases']} through the CPU fallback")
    print(f"geomean cpu/mlu over {summary['large_cases']} cases >= {size_label(big_n)}: "
          f"{fmt(summary['geomean_ratio_large'])} (native {fmt(summary['geomean_ratio_large_native'])}, "
          f"fallback {fmt(summary['geomean_ratio_large_fallback'])}); over all sizes: "
          f"{fmt(summary['geomean_ratio_all'])}")
    if summary["geomean_ratio_large_by_family"]:
        print("by family (>= 1M): " + ", ".join(
            f"{k} {fmt(v)}" for k, v in summary["geomean_ratio_large_by_family"].items()))
    worst = summary["worst_large"]
    print(f"ops with cpu/mlu < 0.7 at >= {size_label(big_n)} ({len(worst)}, worst case of each, worst first):")
    line = " "
    for w in worst:
        item = f" {w['op']} {w['ratio']:.2f}{'' if w['native'] else '*'},"
        if len(line) + len(item) > 110:
            print(line.rstrip(","))
            line = " "
        line += item
    if worst:
        print(line.rstrip(","))
        print("  (* = through the CPU fallback)")
    if summary["rechecked"]:
        print(f"rechecked ({len(summary['rechecked'])} cases >= {size_label(big_n)} below {RECHECK_BELOW} after "
              f"the first {args.repeat} pass(es), {args.recheck} more passes each; ratio before -> after):")
        line = " "
        for c in summary["rechecked"]:
            item = f" {c['op']} {c['layout']} {c['size']} {c['dtype']} {c['ratio_before']:.2f} -> {c['ratio']:.2f},"
            if len(line) + len(item) > 110:
                print(line.rstrip(","))
                line = " "
            line += item
        print(line.rstrip(","))
    if other_during is not None:
        noisy = sum((r.get("other_load") or 0) > 0.25 for r in results)
        print(f"other processes kept {other_during:.2f} of {os.cpu_count()} cores busy on average during the run; "
              f"{noisy} cases ran with more than 0.25 cores busy elsewhere"
              + (", marked ! (unreliable: rerun on an idle machine)" if other_during > 0.1 or noisy else ""))
    print(f"(cpu/mlu > 1: mlu faster; medians of >= {args.min_reps} batches, ~{args.min_time} s per "
          f"device and case" + (f", median of {args.repeat} passes" if args.repeat > 1 else "")
          + (f" ({args.recheck} more for the rechecked cases)" if summary["rechecked"] else "")
          + f"; JSON in {args.out})")


if __name__ == "__main__":
    main()
