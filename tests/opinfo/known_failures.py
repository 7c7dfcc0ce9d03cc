"""Declared known failures of the OpInfo harness, each with the reason it fails on mlu.

Entries are STRICT: a listed case that passes fails the run with "unexpectedly passed: remove it from
known_failures". Two kinds:

  xfail  the case runs and must fail (any exception: wrong values, an error, ...);
  crash  the case kills or hangs the interpreter, so it is not run in-process (reported as skipped);
         `tests/opinfo/sweep.py` runs it anyway with MLU_OPINFO_RUN_CRASHERS=1 and reports whether
         it still crashes.

`op` is the op_db full name (``name`` or ``name.variant``), `test` the TestCommon method name
(``test_compare_cpu``...) or ``*``, `dtypes` a tuple of dtype names or None for every dtype.

UPSTREAM_NOT_APPLICABLE drops op_db's own decorators that do not describe mlu: op_db's test_compare_cpu
xfails were written for CUDA (upstream runs test_compare_cpu only on CUDA), and the software MLU, whose
fallback computes with the CPU kernels, matches the CPU where CUDA does not. Every other op_db
DecorateInfo (skips, xfails, toleranceOverride, precisionOverride) applies unchanged.

The entries come from float32 sweeps (the CI shard's dtype); the all-dtype sweep (`make opinfo`) reports
failures of other dtypes as "failed" in docs/opinfo_summary.md until they are listed here.

Refresh candidates after kernels land: `python tests/opinfo/sweep.py --regen-known-failures`
(see its --help); the generated file is a starting point, reasons must be checked by hand.
"""
import collections

import torch

KnownFailure = collections.namedtuple("KnownFailure", "op test dtypes kind reason")

# Reason categories (prefixes of the reason strings), so reports can group them.
COMPLEX = "complex dtype not supported on mlu"
RNG = "differs by design: RNG"
CRASH = "crashes the process"
NO_KERNEL = "no mlu kernel and the CPU fallback cannot run it"
BUG = "bug"


def KF(op, test, dtypes, kind, reason):
    if kind not in ("xfail", "crash"):
        raise ValueError(kind)
    return KnownFailure(op, test, tuple(dtypes) if dtypes else None, kind, reason)


KNOWN_FAILURES = [
    # --- dtypes mlu does not support ---
    KF("hash_tensor", "test_out", None, "xfail",
       "unsigned 64-bit dtype not supported on mlu: hash_tensor's out= is uint64 and fill_ rejects UInt64"),

    # --- crashes (segfaults kill the interpreter: not run in-process) ---
    KF("nn.functional.grid_sample", "test_compare_cpu", ("float16", "bfloat16"), "crash",
       "a CPU bug, reached through the fallback: the CPU's 16-bit grid_sampler_2d computes its gather offsets in "
       "int16, so on op_db's (2, 3, 345, 456) sample ((H - 1) * sH + (W - 1) * sW > 32767) it reads memory it "
       "does not own: 750625 of 943920 bfloat16 outputs off the float result, NaN counts varying with the heap "
       "(0, 20, 0, 364 over four identical calls), one float16 sweep run segfaulted. The CPU's answer is not "
       "reproducible, so neither is the comparison; grid_sampler_2d has no mlu kernel yet"),
    KF("mode", "test_out", None, "xfail",
       f"{NO_KERNEL}: aten::mode.values (out=) checks the device type itself ('mode only supports CPU, CUDA "
       f"and XPU device type, got: mlu') before any kernel; the functional mode falls back fine"),

    # --- as on the CPU, or where the CPU's reference is the less accurate ---
    KF("linalg.eig", "test_out", None, "xfail",
       "as on the CPU, where op_db marks it expectedFailure: mlu runs PyTorch's own linalg_eig_out, which computes "
       "into temporaries and copies back, and the non-contiguous out= case sees other strides"),
    KF("native_group_norm", "test_noncontiguous_samples", None, "xfail",
       "as on the CPU, CUDA and MPS, for which op_db marks it: native_group_norm refuses an input that is not "
       "contiguous in its suggested memory format (\"Expected X.is_contiguous(memory_format)\"), and mlu raises the "
       "CPU's error"),
    KF("linalg.householder_product", "test_compare_cpu_grad", ("float32",), "xfail",
       "differs by design: an ill-conditioned float32 gradient; mlu's float sums (Note [Float chunks in sums]) "
       "round differently from the CPU's cascade and one element differs by 1.8e-3 relative (tolerance 1e-3); "
       "against the float64 gradient, mlu is 0.027 off at most, the CPU 0.041"),

    # --- random numbers: mlu's Philox streams differ from the CPU's mt19937 by design ---
    KF("randn", "test_compare_cpu", None, "xfail", f"{RNG}: mlu draws from its Philox generator"),
    KF("randint", "test_compare_cpu", None, "xfail", f"{RNG}: mlu draws from its Philox generator"),
    KF("nn.functional.alpha_dropout", "test_compare_cpu", None, "xfail",
       f"{RNG}: the dropout mask comes from mlu's Philox generator (op_db skips the other dropouts)"),
    KF("nn.functional.alpha_dropout", "test_compare_cpu_grad", None, "xfail",
       f"{RNG}: the dropout mask comes from mlu's Philox generator"),

    # --- differs by design ---
    KF("as_strided.partial_views", "test_compare_cpu_grad", None, "xfail",
       "differs by design: copying the sample to the CPU compacts the partial view's storage, so as_strided "
       "reads other elements there (op_db xfails test_compare_cpu for the same reason)"),
]

# (op full name, test name) -> why op_db's expectedFailure for it does not describe mlu.
_CUDA_COMPARE = ("op_db's xfail describes CUDA (upstream runs test_compare_cpu on CUDA only); mlu computes this "
                 "op as the CPU does (natively, or with the CPU kernel through the fallback), so it matches the CPU")
_OUT_WRITEBACK = ("op_db's xfail describes the CPU kernel's out= handling ({}); on mlu the fallback writes the "
                  "result back into the caller's out= tensor with its strides, so the case passes")
UPSTREAM_NOT_APPLICABLE = {
    **{(op, "test_compare_cpu"): _CUDA_COMPARE
       for op in ("native_batch_norm", "_native_batch_norm_legit", "linalg.lu", "linalg.lu_factor",
                  "linalg.lu_factor_ex", "special.zeta", "special.chebyshev_polynomial_t",
                  "special.chebyshev_polynomial_u", "special.chebyshev_polynomial_v",
                  "special.chebyshev_polynomial_w", "special.hermite_polynomial_h", "special.hermite_polynomial_he",
                  "special.laguerre_polynomial_l", "special.legendre_polynomial_p",
                  "special.shifted_chebyshev_polynomial_t", "special.shifted_chebyshev_polynomial_u",
                  "special.shifted_chebyshev_polynomial_v", "special.shifted_chebyshev_polynomial_w")},
    ("narrow_copy", "test_out"): _OUT_WRITEBACK.format("pytorch/pytorch#84577"),
}


def _index():
    index = collections.defaultdict(list)
    for kf in KNOWN_FAILURES:
        index[kf.op].append(kf)
    return index


_INDEX = _index()


def lookup(op_full_name, test_name, dtype):
    """The KnownFailure for this case, or None."""
    dtype_name = str(dtype).replace("torch.", "") if dtype is not None else None
    for kf in _INDEX.get(op_full_name, ()):
        if kf.test not in ("*", test_name):
            continue
        if kf.dtypes is not None and dtype_name not in kf.dtypes:
            continue
        return kf
    return None


def validate(op_db):
    """Raises if an entry names an op or test that does not exist (typos would silently never match)."""
    names = {op.full_name for op in op_db}
    tests = {"*", "test_compare_cpu", "test_compare_cpu_grad", "test_out", "test_noncontiguous_samples",
             "test_errors"}
    bad = [kf for kf in KNOWN_FAILURES if kf.op not in names or kf.test not in tests]
    bad += [k for k in UPSTREAM_NOT_APPLICABLE if k[0] not in names or k[1] not in tests]
    for kf in KNOWN_FAILURES:
        for d in kf.dtypes or ():
            if not isinstance(getattr(torch, d, None), torch.dtype):
                bad.append(kf)
        if not kf.reason or len(kf.reason) < 15:
            bad.append(kf)
    if bad:
        raise ValueError(f"known_failures.py: entries with unknown op/test/dtype or no reason: {bad}")
