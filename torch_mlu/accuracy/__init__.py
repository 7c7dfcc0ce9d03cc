"""Accuracy tools: where do mlu and the CPU part ways? (docs/accuracy.md)

- ``check()``: a context manager (or ``TORCH_MLU_ACCURACY_CHECK=1`` for the whole program) under which every aten
  op on mlu also runs on CPU copies of its inputs; the first op out of tolerance is named, with its stack, shapes,
  error statistics and a standalone reproducer (``_check.py``).
- ``nonfinite_origin()``: stops at the first op that makes a NaN or an Inf out of finite inputs
  (``_nonfinite.py``).
- ``overflow_check()``: every op on mlu that makes a NaN or an Inf sets its device's sticky flag, which
  ``overflow_flag()`` reads on the device without a sync and ``clear_overflow_flag()`` resets (``_overflow.py``).
- ``dump()``: records named modules' outputs, gradients and parameter updates of a run (any device) into a
  folder; ``compare_dumps()`` / ``python -m torch_mlu.accuracy compare A B`` names the first and the largest
  divergences by module, ``plot()`` draws them (``_dump.py``, ``_compare_dumps.py``).
- ``difference()``: the tolerance rule every tool shares (``_tolerance.py``).

The environment (read when torch_mlu is imported): ``TORCH_MLU_ACCURACY_CHECK=1`` stops at the first divergence,
``=report`` collects them all and prints the report at exit; ``TORCH_MLU_ACCURACY_OPS=mm,addmm`` checks only those
ops; ``TORCH_MLU_ACCURACY_RTOL`` / ``_ATOL`` replace the per-dtype tolerances; reproducers go to
``TORCH_MLU_ACCURACY_DIR`` (default ``accuracy_reproducers``). ``TORCH_MLU_OVERFLOW_CHECK=1`` turns the overflow check
on for the whole program.
"""
import atexit
import os
import sys

from ._check import AccuracyError, Divergence, Report, check
from ._compare_dumps import Comparison, compare_dumps, plot
from ._dump import dump
from ._nonfinite import NonFiniteError, NonFiniteOrigin, nonfinite_origin
from ._overflow import clear_overflow_flag, is_overflow_check_enabled, overflow_check, overflow_flag
from ._tolerance import Difference, difference, tolerances

__all__ = ["AccuracyError", "Comparison", "Difference", "Divergence", "NonFiniteError", "NonFiniteOrigin", "Report",
           "check", "clear_overflow_flag", "compare_dumps", "difference", "dump", "enable_from_environment",
           "is_overflow_check_enabled", "nonfinite_origin", "overflow_check", "overflow_flag", "plot", "tolerances"]


def enable_from_environment(environ=os.environ):
    """Turns the check on for the rest of the program, as the TORCH_MLU_ACCURACY_* variables say; returns its
    report."""
    mode = environ.get("TORCH_MLU_ACCURACY_CHECK", "1")
    if mode not in ("1", "report"):
        raise ValueError(f"TORCH_MLU_ACCURACY_CHECK={mode!r}: use 1 (stop at the first divergence) or report")

    def number(name):
        value = environ.get(name)
        try:
            return None if value in (None, "") else float(value)
        except ValueError:
            raise ValueError(f"{name}={value!r} is not a number") from None

    ops = [op for op in environ.get("TORCH_MLU_ACCURACY_OPS", "").split(",") if op] or None
    checker = check(rtol=number("TORCH_MLU_ACCURACY_RTOL"), atol=number("TORCH_MLU_ACCURACY_ATOL"),
                    fail_fast=mode == "1", ops=ops,
                    reproducer_dir=environ.get("TORCH_MLU_ACCURACY_DIR") or "accuracy_reproducers")
    report = checker.__enter__()
    if mode == "report":
        atexit.register(lambda: print(report, file=sys.stderr))
    return report
