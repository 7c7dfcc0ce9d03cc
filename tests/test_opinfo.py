"""OpInfo correctness harness: PyTorch's own op_db, run on mlu and compared with the CPU.

`torch.testing._internal.common_methods_invocations.op_db` (shipped in the wheel) describes ~700 ops
with sample inputs, error inputs, supported dtypes and per-test skips/xfails/tolerances. This module
instantiates `TestCommon` for the mlu device with `instantiate_device_type_tests(..., only_for="mlu")`
(class `TestCommonMLU`). The method names are upstream test_ops.py's, so op_db's DecorateInfo entries
keyed on ("TestCommon", "test_compare_cpu") etc. apply (skips, expectedFailures, toleranceOverride,
precisionOverride), except the few tests/opinfo/known_failures.py UPSTREAM_NOT_APPLICABLE drops.

  test_compare_cpu            upstream's test: every reference input on mlu and on the CPU
                              (sample transformed to cpu); assertEqual with atol=rtol=1e-3 (upstream's),
                              raised to the dtype default where looser and by the op's tolerance overrides.
                              The mlu outputs must be mlu tensors.
  test_compare_cpu_grad       backward on mlu vs CPU: float32 when in the op's supported_backward_dtypes;
                              forward outputs, then the gradients of every input that requires grad.
                              Inherits op_db's test_compare_cpu skips (RNG, uninitialized outputs).
  test_out                    upstream's out= protocol (cases 0-4: NaN-filled out, non-contiguous out with
                              strides and storage kept, empty out resized without warning, out on the CPU
                              rejected, unsafe-cast out dtype rejected); ops without out= must refuse it.
  test_noncontiguous_samples  upstream's test: sample.noncontiguous() gives the contiguous result, forward
                              and backward (float32, int64, complex64).
  test_errors                 every error_input raises its documented exception type and message regex,
                              AND the same exception type as the CPU (a NotImplementedError from a missing
                              kernel does not count as the RuntimeError the op should raise).

Known failures (tests/opinfo/known_failures.py) are strict expected failures, each with a reason: a
listed case that passes fails with "unexpectedly passed: remove it from known_failures". For every case
the harness records whether the op ran natively or through the CPU fallback (torch_mlu.fallback_report()
reset before and read after each mlu run).

How to run:

  pytest -q tests/test_opinfo.py                   the CI shard (MLU_OPINFO=ci, the default; `make test`)
  MLU_OPINFO=full MLU_OPINFO_DTYPES=float32 MLU_OPINFO_OPS=add,mul pytest -q tests/test_opinfo.py
                                                   any slice of the full sweep, in-process
  make opinfo                                      the full sweep (all ops, all dtypes), crash-proof,
                                                   summary in docs/opinfo_summary.md
  .venv/bin/python tests/opinfo/sweep.py --dtypes float32      float32 only (see --help)

Environment variables: see tests/opinfo/config.py.
"""
import copy
import re
import unittest
import warnings
from collections.abc import Sequence
from functools import partial

import pytest
import torch

import torch_mlu  # noqa: F401  (mlu must be registered before common_device_type is imported)

from torch.testing import make_tensor
from torch.testing._comparison import default_tolerances
from torch.testing._internal import common_device_type
from torch.testing._internal.common_device_type import OpDTypes, instantiate_device_type_tests, ops
from torch.testing._internal.common_dtype import floating_and_complex_types_and
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, is_iterable_of_tensors, noncontiguous_like
from torch.testing._internal.opinfo.core import DecorateInfo, SampleInput
from torch.utils._pytree import tree_flatten

from opinfo import config, known_failures, record

if common_device_type.PrivateUse1TestBase not in common_device_type.device_type_test_bases:
    raise RuntimeError("torch.testing._internal.common_device_type was imported before torch_mlu registered "
                       "the mlu device, so it has no PrivateUse1 test base: import torch_mlu first")
# Names the device-generic class TestCommonMLU (not TestCommonPRIVATEUSE1) and makes every op's
# DecorateInfo lookup see device_type "mlu" (instantiation would otherwise rename it after the first op).
common_device_type.PrivateUse1TestBase.setUpClass()

known_failures.validate(op_db)

_MLU = re.compile(r"^mlu(:\d+)?$")


# --- op selection -----------------------------------------------------------------------------------

def _drop_upstream_xfails(op):
    """op, or a copy without the op_db expectedFailures that UPSTREAM_NOT_APPLICABLE lists for it."""
    tests = {t for (name, t) in known_failures.UPSTREAM_NOT_APPLICABLE if name == op.full_name}
    if not tests:
        return op

    def dropped(d):
        return (isinstance(d, DecorateInfo) and d.test_name in tests and d.cls_name in (None, "TestCommon")
                and d.device_type in (None, "mlu") and unittest.expectedFailure in d.decorators)

    kept = tuple(d for d in op.decorators if not dropped(d))
    if len(kept) == len(op.decorators):
        raise ValueError(f"known_failures.UPSTREAM_NOT_APPLICABLE: {op.full_name} has no op_db expectedFailure "
                         f"for {sorted(tests)} (stale entry)")
    op = copy.copy(op)
    op.decorators = kept
    return op


_OPS = {op.full_name: _drop_upstream_xfails(op) for op in op_db}
if config.OPS is not None:
    unknown = [n for n in config.OPS if n not in _OPS]
    if unknown:
        raise ValueError(f"MLU_OPINFO_OPS: not op_db entries: {unknown}")


def _select(ci_names, keep=lambda op: True):
    if config.OPS is not None:
        names = config.OPS
    elif config.MODE == "ci":
        names = ci_names
    else:
        names = list(_OPS)
    return [_OPS[n] for n in names if keep(_OPS[n])]


def _allowed(dtypes):
    """dtypes narrowed by MLU_OPINFO_DTYPES (None: no restriction)."""
    if config.DTYPES is None:
        return None if dtypes is None else set(dtypes)
    return set(config.DTYPES) if dtypes is None else set(dtypes) & config.DTYPES


def _enabled(test, op_list):
    return test in config.TESTS and len(op_list) > 0


def _any_one_dtype(op):
    """The dtype OpDTypes.any_one gives the op (its `ops` code breaks when combined with allowed_dtypes)."""
    supported = set(op.supported_dtypes("mlu"))
    both = supported & op.supported_backward_dtypes("mlu")
    return next((d for d in common_device_type.ANY_DTYPE_ORDER if d in (both or supported)), None)


_COMPARE_OPS = _select(config.CI_COMPARE_OPS)
_GRAD_OPS = _select(config.CI_GRAD_OPS, lambda op: op.supports_autograd)
_OUT_OPS = _select(config.CI_OUT_OPS, lambda op: config.DTYPES is None or _any_one_dtype(op) in config.DTYPES)
_NONCONTIG_OPS = _select(config.CI_NONCONTIGUOUS_OPS)
_ERROR_OPS = _select(config.CI_ERRORS_OPS, lambda op: op.error_inputs_func is not None)


# --- helpers ----------------------------------------------------------------------------------------

def _to_cpu(x, grad=False):
    """The CPU version of a sample argument: mlu tensors are copied to the CPU (detached; leaves requiring grad
    if grad and the original did), mlu device arguments (``device="mlu:0"``) become the CPU."""
    if isinstance(x, torch.Tensor):
        if x.device.type != "mlu" and not (grad and x.requires_grad):
            return x  # CPU (index tensors, scalars) and meta tensors of the sample stay where they are
        t = x.detach().to("cpu") if x.device.type == "mlu" else x.detach().clone()
        if grad and x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, torch.device):
        return torch.device("cpu") if x.type == "mlu" else x
    if isinstance(x, str):
        return "cpu" if _MLU.match(x) else x
    if type(x) in (list, tuple):
        return type(x)(_to_cpu(v, grad) for v in x)
    if isinstance(x, dict):
        return {k: _to_cpu(v, grad) for k, v in x.items()}
    return x


def _cpu_sample(sample, grad=False):
    return SampleInput(_to_cpu(sample.input, grad), args=_to_cpu(sample.args, grad),
                       kwargs=_to_cpu(sample.kwargs, grad), output_process_fn_grad=sample.output_process_fn_grad,
                       broadcasts_input=sample.broadcasts_input, name=sample.name + "_cpu")


def _expects_mlu_outputs(sample):
    """Whether an mlu run of the sample must return mlu tensors: it has an mlu tensor or device argument
    and no other device argument (``full_like(x, device="cpu")`` rightly returns a CPU tensor)."""
    mlu = other = False

    def walk(x):
        nonlocal mlu, other
        if isinstance(x, torch.Tensor):
            mlu = mlu or x.device.type == "mlu"
        elif isinstance(x, torch.device):
            mlu, other = mlu or x.type == "mlu", other or x.type != "mlu"
        elif isinstance(x, str) and re.match(r"^(cpu|meta|cuda|mlu)(:\d+)?$", x):
            mlu, other = mlu or x.startswith("mlu"), other or not x.startswith("mlu")
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    walk((sample.input, sample.args, sample.kwargs))
    return mlu and not other


def _tolerances(dtype):
    """upstream test_compare_cpu's atol=rtol=1e-3, raised to the dtype's default where that is looser
    (bfloat16). For integer and bool inputs upstream's 1e-3 too: their floating results (exp, sin, softmax of an
    int64 tensor) round like any float's, and an integer result within 1e-3 (+1e-3 relative) of the CPU's is
    equal below 1000. float8 tensors are compared bitwise. Tolerance overrides of the op raise them further."""
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex) and dtype.itemsize == 1:
        return 0.0, 0.0  # float8: assertEqual compares bitwise
    if dtype is None or not (dtype.is_floating_point or dtype.is_complex):
        return 1e-3, 1e-3
    rtol, atol = default_tolerances(dtype)
    return max(atol, 1e-3), max(rtol, 1e-3)


_TYPE_ERROR_ON_UNSAFE_OUT = ("_chunk_cat", "cat", "column_stack", "dstack", "hstack", "vstack", "stack")


def _tensors(tree):
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _describe(e):
    cause = e.__cause__ if type(e) is Exception and e.__cause__ is not None else e  # op_db repro wrapper
    first = str(cause).strip().split("\n")[0][:300]
    return f"{type(cause).__name__}: {first}"


class TestCommon(TestCase):
    exact_dtype = True

    def _run_case(self, test_name, op, dtype, body):
        """Runs body(case), applying known_failures strictly and recording the case for the collector."""
        case = record.start(self, op.full_name, test_name, dtype)
        case.tolerance = (self.precision, self.rel_tol)  # set from op_db's overrides by instantiated_test
        kf = known_failures.lookup(op.full_name, test_name, dtype) if config.USE_KNOWN_FAILURES else None
        if kf is not None:
            case.known = f"{kf.kind}: {kf.reason}"
            if kf.kind == "crash" and not config.RUN_CRASHERS:
                raise unittest.SkipTest(f"known_failures (crash, not run in-process): {kf.reason}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                body(case)
            torch.mlu.synchronize()  # a device error of this case surfaces here, not in the next case
        except unittest.SkipTest:
            raise
        except Exception as e:
            case.raw, case.error = "fail", _describe(e)
            if kf is not None:
                pytest.xfail(f"known_failures: {kf.reason}")
            raise
        case.raw = "pass"
        if kf is not None:
            self.fail(f"unexpectedly passed: remove it from known_failures "
                      f"({op.full_name!r}, {test_name!r}, {dtype}): {kf.reason}")

    def _check_on_mlu(self, results, what="output"):
        for t in _tensors(results):
            if t.device.type != "mlu":
                self.fail(f"an {what} of the mlu run is on {t.device}, not on mlu")

    if _enabled("compare_cpu", _COMPARE_OPS):
        @ops(_COMPARE_OPS, allowed_dtypes=_allowed(None))
        def test_compare_cpu(self, device, dtype, op):
            atol, rtol = _tolerances(dtype)

            def body(case):
                for sample in op.reference_inputs(device, dtype):
                    cpu_sample = _cpu_sample(sample)
                    try:
                        cpu_results = op(cpu_sample.input, *cpu_sample.args, **cpu_sample.kwargs)
                    except Exception as cpu_error:  # noqa: BLE001
                        # A sample the CPU refuses (its kernel lacks the dtype...): mlu refuses it too.
                        with self.assertRaises(type(cpu_error)), case.on_mlu():
                            op(sample.input, *sample.args, **sample.kwargs)
                        continue
                    with case.on_mlu():
                        mlu_results = op(sample.input, *sample.args, **sample.kwargs)
                    # output_process_fn_grad canonicalizes ill-defined outputs (signs of SVD vectors...)
                    mlu_results = sample.output_process_fn_grad(mlu_results)
                    cpu_results = cpu_sample.output_process_fn_grad(cpu_results)
                    if _expects_mlu_outputs(sample) and all(t.device.type == "cpu" for t in _tensors(cpu_results)):
                        self._check_on_mlu(mlu_results)
                    self.assertEqual(mlu_results, cpu_results, atol=atol, rtol=rtol)

            self._run_case("test_compare_cpu", op, dtype, body)

    if _enabled("compare_cpu_grad", _GRAD_OPS):
        @ops(_GRAD_OPS, dtypes=OpDTypes.supported_backward, allowed_dtypes=_allowed(config.GRAD_DTYPES))
        def test_compare_cpu_grad(self, device, dtype, op):
            # Inherits op_db's skips of test_compare_cpu: an op whose forward cannot be compared with the
            # CPU (random numbers, uninitialized memory) cannot have its gradients compared either.
            for decorator in op.get_decorators("TestCommon", "test_compare_cpu", "mlu", dtype, {}):
                probe = decorator(lambda: None)
                if getattr(probe, "__unittest_skip__", False):
                    self.skipTest(f"op_db skips test_compare_cpu: {probe.__unittest_skip_why__}")
            atol, rtol = _tolerances(dtype)

            def requiring_grad(tree):
                return [t for t in _tensors(tree) if t.requires_grad]

            def body(case):
                for sample in op.sample_inputs(device, dtype, requires_grad=True):
                    cpu_sample = _cpu_sample(sample, grad=True)
                    cpu_out = cpu_sample.output_process_fn_grad(
                        op(cpu_sample.input, *cpu_sample.args, **cpu_sample.kwargs))
                    cpu_outputs = requiring_grad(cpu_out)
                    cpu_inputs = requiring_grad((cpu_sample.input, cpu_sample.args, cpu_sample.kwargs))
                    mlu_inputs = requiring_grad((sample.input, sample.args, sample.kwargs))
                    cpu_grad_outputs = [torch.randn_like(t) for t in cpu_outputs]
                    with case.on_mlu():
                        mlu_out = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
                        mlu_outputs = requiring_grad(mlu_out)
                        self.assertEqual(len(mlu_outputs), len(cpu_outputs),
                                         msg="different number of outputs requiring grad on mlu and CPU")
                        mlu_grads = ()
                        if mlu_outputs and mlu_inputs:
                            mlu_grads = torch.autograd.grad(mlu_outputs, mlu_inputs,
                                                            [g.to(device) for g in cpu_grad_outputs],
                                                            allow_unused=True)
                    self.assertEqual(mlu_out, cpu_out, atol=atol, rtol=rtol)
                    if not (cpu_outputs and cpu_inputs):
                        continue
                    cpu_grads = torch.autograd.grad(cpu_outputs, cpu_inputs, cpu_grad_outputs, allow_unused=True)
                    self._check_on_mlu([g for g in mlu_grads if g is not None], "input gradient")
                    for i, (m, c) in enumerate(zip(mlu_grads, cpu_grads)):
                        self.assertEqual(m, c, atol=atol, rtol=rtol,
                                         msg=f"gradient of input {i} differs from the CPU's")

            self._run_case("test_compare_cpu_grad", op, dtype, body)

    if _enabled("noncontiguous_samples", _NONCONTIG_OPS):
        @ops(_NONCONTIG_OPS, allowed_dtypes=_allowed((torch.float32, torch.long, torch.complex64)))
        def test_noncontiguous_samples(self, device, dtype, op):
            test_grad = dtype in op.supported_backward_dtypes(torch.device(device).type)

            def body(case):
                for sample in op.sample_inputs(device, dtype, requires_grad=test_grad):
                    t_inp, t_args, t_kwargs = sample.input, sample.args, sample.kwargs
                    noncontig = sample.noncontiguous()
                    n_inp, n_args, n_kwargs = noncontig.input, noncontig.args, noncontig.kwargs

                    with case.on_mlu():
                        expected = op(t_inp, *t_args, **t_kwargs)
                    with case.on_mlu():
                        actual = op(n_inp, *n_args, **n_kwargs)
                    self.assertEqual(actual, expected)
                    if not test_grad:
                        continue

                    expected = sample.output_process_fn_grad(expected)
                    actual = sample.output_process_fn_grad(actual)
                    if isinstance(expected, torch.Tensor):
                        grad_for_expected = torch.randn_like(expected)
                        grad_for_actual = noncontiguous_like(grad_for_expected)
                    elif isinstance(expected, Sequence):
                        expected = [t for t in expected if isinstance(t, torch.Tensor) and t.requires_grad]
                        actual = [n for n in actual if isinstance(n, torch.Tensor) and n.requires_grad]
                        grad_for_expected = [torch.randn_like(t) for t in expected]
                        grad_for_actual = [noncontiguous_like(n) for n in grad_for_expected]
                    else:
                        continue
                    t_inputs = (t_inp,) + t_args if isinstance(t_inp, torch.Tensor) else tuple(t_inp) + t_args
                    n_inputs = (n_inp,) + n_args if isinstance(n_inp, torch.Tensor) else tuple(n_inp) + n_args
                    t_input_tensors = [t for t in t_inputs if isinstance(t, torch.Tensor) and t.requires_grad]
                    n_input_tensors = [n for n in n_inputs if isinstance(n, torch.Tensor) and n.requires_grad]
                    self.assertEqual(len(t_input_tensors), len(n_input_tensors))
                    with case.on_mlu():
                        t_grads = torch.autograd.grad(expected, t_input_tensors, grad_for_expected,
                                                      allow_unused=True)
                    with case.on_mlu():
                        n_grads = torch.autograd.grad(actual, n_input_tensors, grad_for_actual, allow_unused=True)
                    for i, (t, n) in enumerate(zip(t_grads, n_grads)):
                        self.assertEqual(t, n, msg=f"Got different gradients for contiguous / non-contiguous "
                                                   f"inputs wrt input {i}.")

            self._run_case("test_noncontiguous_samples", op, dtype, body)

    if _enabled("out", _OUT_OPS):
        @ops(_OUT_OPS, dtypes=OpDTypes.any_one)
        def test_out(self, device, dtype, op):
            def body(case):
                for sample in op.sample_inputs(device, dtype):
                    with case.on_mlu():
                        expected = op(sample.input, *sample.args, **sample.kwargs)
                    op_out = partial(op, sample.input, *sample.args, **sample.kwargs)
                    if not isinstance(expected, torch.Tensor) and not is_iterable_of_tensors(
                            expected, include_empty=True):
                        self.skipTest("Skipped! Only supports single tensor or iterable of tensor outputs.")

                    if not op.supports_out:  # the op must refuse out=
                        with self.assertRaises(Exception):
                            assert op_out(out=expected) != NotImplemented
                        return

                    def apply_out(fn, out):
                        return fn(out) if isinstance(out, torch.Tensor) else tuple(map(fn, out))

                    def strides(out):
                        return (out.stride(),) if isinstance(out, torch.Tensor) else tuple(t.stride() for t in out)

                    def data_ptrs(out):  # upstream skips this check off cpu/cuda; mlu has real storage
                        return ((out.data_ptr(),) if isinstance(out, torch.Tensor)
                                else tuple(t.data_ptr() for t in out))

                    def compare_out(transform, *, same_strides_and_storage=True):
                        out = apply_out(transform, expected)
                        original_strides, original_ptrs = strides(out), data_ptrs(out)
                        with case.on_mlu():
                            op_out(out=out)
                        self.assertEqual(expected, out)
                        if same_strides_and_storage:
                            self.assertEqual(original_strides, strides(out),
                                             msg=f"Strides are not the same! Original strides were "
                                                 f"{original_strides} and strides are now {strides(out)}")
                            self.assertEqual(original_ptrs, data_ptrs(out))

                    # Case 0: right shape, dtype and device, full of NaN / the integer maximum.
                    def case_zero(t):
                        try:
                            return torch.full_like(t, torch.iinfo(t.dtype).max)
                        except TypeError:
                            return torch.full_like(t, float("nan"))

                    compare_out(case_zero)

                    # Case 1: right shape, dtype and device, non-contiguous: strides and storage are kept.
                    compare_out(lambda t: make_tensor(t.shape, dtype=t.dtype, device=t.device, noncontiguous=True))

                    # Case 2: right dtype and device, no elements: resized without a warning.
                    def case_two(t):
                        return make_tensor((0,), dtype=t.dtype, device=t.device)

                    compare_out(case_two, same_strides_and_storage=False)
                    out = apply_out(case_two, expected)
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        op_out(out=out)
                    for w in caught:
                        if "An output with one or more elements" in str(w.message):
                            self.fail("Resizing an out= argument with no elements threw a resize warning!")

                    factory_note = ("\n\nNOTE: If your op is a factory function (i.e., it accepts TensorOptions) "
                                    "you should mark its OpInfo with `is_factory_function=True`.")
                    # Case 3: right shape and dtype, wrong device (the CPU): an error.
                    out = apply_out(lambda t: make_tensor(t.shape, dtype=t.dtype, device="cpu"), expected)
                    if op.is_factory_function and sample.kwargs.get("device", None) is None:
                        op_out(out=out)
                    else:
                        with self.assertRaises(RuntimeError, msg=f"Expected RuntimeError when calling with "
                                                                 f"input.device={device} and out.device=cpu"
                                                                 + factory_note):
                            op_out(out=out)
                            torch.mlu.synchronize()

                    # Case 4: right shape and device, a dtype the result cannot safely cast to (long).
                    floats = floating_and_complex_types_and(torch.float16, torch.bfloat16)
                    if (isinstance(expected, torch.Tensor) and expected.dtype in floats) or (
                            not isinstance(expected, torch.Tensor) and any(t.dtype in floats for t in expected)):
                        out = apply_out(lambda t: make_tensor(t.shape, dtype=torch.long, device=t.device), expected)
                        if op.is_factory_function and sample.kwargs.get("dtype", None) is None:
                            op_out(out=out)
                        else:
                            # upstream: the cat family raises TypeError (as on the CPU), the rest RuntimeError
                            exc_type = TypeError if op.name in _TYPE_ERROR_ON_UNSAFE_OUT else RuntimeError
                            with self.assertRaises(exc_type, msg="Expected an error when doing an unsafe "
                                                                 "cast!" + factory_note):
                                op_out(out=out)
                                torch.mlu.synchronize()

            self._run_case("test_out", op, dtype, body)

    if _enabled("errors", _ERROR_OPS):
        @ops(_ERROR_OPS, dtypes=OpDTypes.none)
        def test_errors(self, device, op):
            def call(si):
                """The exception the call raises (or None); returning NotImplemented counts as an error,
                as in upstream's test (assertFalse(isinstance(out, type(NotImplemented))))."""
                try:
                    out = op(si.input, *si.args, **si.kwargs)
                    torch.mlu.synchronize()
                except Exception as e:
                    return e
                if out is NotImplemented:
                    return TypeError("the op returned NotImplemented")
                return None

            def documented(ei, e):
                return e is not None and isinstance(e, ei.error_type) and re.search(ei.error_regex, str(e))

            def body(case):
                for ei in op.error_inputs(device):
                    si = ei.sample_input
                    cpu_exc = call(_cpu_sample(si))
                    with case.on_mlu():
                        mlu_exc = call(si)
                    what = f"{ei.error_type.__name__} matching {ei.error_regex!r} for {si.summary()}"
                    if mlu_exc is None:
                        self.fail(f"expected {what}; nothing was raised")
                    if not documented(ei, mlu_exc):
                        self.fail(f"expected {what}; got {_describe(mlu_exc)}")
                    # Where the CPU raises the documented error, mlu must raise the same exception type (a
                    # NotImplementedError of a missing kernel is a RuntimeError, but not the op's error).
                    # Where the CPU deviates from op_db, matching op_db is enough.
                    if documented(ei, cpu_exc) and type(mlu_exc) is not type(cpu_exc):
                        self.fail(f"the CPU raises {type(cpu_exc).__name__} for {si.summary()}, mlu raises "
                                  f"{_describe(mlu_exc)}")
                    if isinstance(mlu_exc, NotImplementedError) and not issubclass(
                            ei.error_type, NotImplementedError) and not isinstance(cpu_exc, NotImplementedError):
                        self.fail(f"expected {what}; got NotImplementedError (a missing kernel is not the "
                                  f"op's error): {_describe(mlu_exc)}")

            self._run_case("test_errors", op, None, body)


instantiate_device_type_tests(TestCommon, globals(), only_for="mlu")


# --- checks of the harness itself (CI shard only) -------------------------------------------------------

def _run_nested(name):
    """Runs one instantiated case outside pytest; returns (unittest result, recorded Case or None)."""
    test = TestCommonMLU(name)  # noqa: F821  (created by instantiate_device_type_tests)
    result = unittest.TestResult()
    test.run(result)
    return result, record.CASES.pop(record.case_key(test), None)


def _need(*names):
    if config.MODE != "ci" or not config.USE_KNOWN_FAILURES:
        pytest.skip("checks of the harness run in the CI shard (MLU_OPINFO=ci, known failures on)")
    missing = [n for n in names if not hasattr(globals().get("TestCommonMLU"), n)]
    if missing:
        pytest.skip(f"not instantiated in this configuration: {missing}")


def test_opdb_skips_and_xfails_apply():
    """op_db's DecorateInfo skips and expectedFailures keyed on TestCommon tests reach the mlu cases."""
    _need("test_compare_cpu_nn_functional_dropout_mlu_float32", "test_out_cumsum_mlu_float32")
    cls = globals()["TestCommonMLU"]
    dropout = cls.test_compare_cpu_nn_functional_dropout_mlu_float32
    assert getattr(dropout, "__unittest_skip__", False), "op_db's test_compare_cpu skip of dropout did not apply"
    assert "non-deterministic" in dropout.__unittest_skip_why__
    # op_db: "cumsum does not handle correctly out= dtypes" (expectedFailure, TestCommon, test_out)
    assert getattr(cls.test_out_cumsum_mlu_float32, "__unittest_expecting_failure__", False)
    result, _ = _run_nested("test_out_cumsum_mlu_float32")
    assert len(result.expectedFailures) == 1, (result.failures, result.errors, result.unexpectedSuccesses)


def test_opdb_tolerance_overrides_apply():
    """op_db's toleranceOverride / precisionOverride set the case's tolerance floors at run time."""
    _need("test_compare_cpu_erfinv_mlu_float32", "test_out_bmm_mlu_float32", "test_compare_cpu_add_mlu_float32")
    result, case = _run_nested("test_compare_cpu_erfinv_mlu_float32")  # precisionOverride({float32: 1e-4})
    assert result.wasSuccessful() and case.tolerance[0] == 1e-4, (result.failures, result.errors, case.tolerance)
    result, case = _run_nested("test_out_bmm_mlu_float32")  # toleranceOverride(float32: atol=rtol=1e-5)
    assert result.wasSuccessful() and case.tolerance == (1e-5, 1e-5), (result.failures, result.errors,
                                                                         case.tolerance)
    result, case = _run_nested("test_compare_cpu_add_mlu_float32")  # no override
    assert result.wasSuccessful() and case.tolerance == (0, 0), case.tolerance


def test_known_failures_are_strict(monkeypatch):
    """A case listed in known_failures that passes fails the run; the native/fallback record is filled."""
    _need("test_compare_cpu_add_mlu_float32")
    result, case = _run_nested("test_compare_cpu_add_mlu_float32")
    assert result.wasSuccessful() and case.samples > 0
    assert case.as_dict()["path"] in ("native", "mixed", "fallback")
    fake = known_failures.KnownFailure("add", "test_compare_cpu", None, "xfail", "a reason for the self-test")
    monkeypatch.setattr(known_failures, "lookup", lambda op, test, dtype: fake if op == "add" else None)
    result, case = _run_nested("test_compare_cpu_add_mlu_float32")
    problems = result.failures + result.errors  # op_db's repro wrapper turns the AssertionError into an error
    assert len(problems) == 1 and "unexpectedly passed: remove it from known_failures" in problems[0][1]
    assert case.raw == "pass"
