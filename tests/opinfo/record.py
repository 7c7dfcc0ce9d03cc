"""Per-case facts the test bodies record for the result collector (tests/opinfo/collector.py).

A case is one instantiated test (``TestCommonMLU::test_compare_cpu_add_mlu_float32``). The body
records which ops fell back to the CPU while it ran on mlu, its raw outcome (before known_failures
turned a failure into an expected failure) and the known-failure entry that applied.
"""
import collections
import contextlib

import torch_mlu

CASES = {}


def case_key(testcase):
    return f"{type(testcase).__name__}::{testcase._testMethodName}"


class Case:
    def __init__(self, op, test, dtype):
        self.op = op
        self.test = test
        self.dtype = str(dtype).replace("torch.", "") if dtype is not None else None
        self.samples = 0            # samples run on mlu
        self.native_samples = 0     # ... of which no op fell back to the CPU
        self.fallback_ops = collections.Counter()
        self.raw = None             # "pass" / "fail" (None: the body never finished)
        self.error = None           # "Type: first line" of the raw failure
        self.known = None           # "kind: reason" of the known_failures entry, if any
        self.tolerance = None       # (atol, rtol) floors the device-type framework set from the op's
                                    # toleranceOverride / precisionOverride (0, 0 without any)

    @contextlib.contextmanager
    def on_mlu(self):
        """Wraps the mlu part of one sample; counts what fell back to the CPU."""
        torch_mlu.reset_fallback_report()
        try:
            yield
        except BaseException:
            # a sample that raised counts only if something fell back before the error
            report = torch_mlu.fallback_report()
            if report:
                self.samples += 1
                self.fallback_ops.update(report)
            raise
        report = torch_mlu.fallback_report()
        self.samples += 1
        if report:
            self.fallback_ops.update(report)
        else:
            self.native_samples += 1

    def as_dict(self):
        if self.samples == 0:
            path = None
        elif self.native_samples == self.samples:
            path = "native"
        elif self.native_samples == 0:
            path = "fallback"
        else:
            path = "mixed"
        return {"op": self.op, "test": self.test, "dtype": self.dtype, "samples": self.samples,
                "native_samples": self.native_samples, "path": path,
                "fallback_ops": dict(sorted(self.fallback_ops.items())), "raw": self.raw,
                "raw_error": self.error, "known": self.known, "tolerance": self.tolerance}


def start(testcase, op, test, dtype):
    case = Case(op, test, dtype)
    CASES[case_key(testcase)] = case
    return case
