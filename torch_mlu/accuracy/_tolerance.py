"""How far apart an mlu result and its CPU reference are, and whether that is too far.

Invariant: one rule for every accuracy tool (the op-by-op check, the NaN/Inf origin, the dump comparison), so
they agree on what a divergence is. An element of ``actual`` is out of tolerance where
``|actual - expected| > atol + rtol * |expected|`` (torch.testing's rule, with its per-dtype defaults unless
given), or where one is NaN/Inf and the other is not (or both infinite with different signs); integer and bool
results must be equal.
"""
from dataclasses import dataclass

import torch
from torch.testing._comparison import default_tolerances


@dataclass
class Difference:
    """Error statistics of one output against its reference."""

    mismatched: int  # elements out of tolerance
    numel: int
    max_abs: float  # over the finite pairs; 0 when nothing is out of tolerance
    max_rel: float
    rtol: float
    atol: float
    shape_or_dtype: str = ""  # set when the two cannot be compared element by element

    @property
    def diverges(self) -> bool:
        return bool(self.shape_or_dtype) or self.mismatched > 0

    def __str__(self):
        if self.shape_or_dtype:
            return self.shape_or_dtype
        return (f"{self.mismatched} / {self.numel} elements out of tolerance (rtol {self.rtol:g}, atol "
                f"{self.atol:g}); max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}")


def tolerances(dtype, rtol=None, atol=None):
    """(rtol, atol): the given values, else torch.testing's defaults for `dtype`."""
    if rtol is not None and atol is not None:
        return rtol, atol
    default_rtol, default_atol = default_tolerances(dtype)
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def difference(actual, expected, rtol=None, atol=None) -> Difference:
    """Compares `actual` (any device) with `expected` (a CPU tensor)."""
    actual = actual.detach().cpu()
    expected = expected.detach()
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return Difference(1, expected.numel(), float("inf"), float("inf"), 0.0, 0.0,
                          f"shape/dtype {tuple(actual.shape)} {actual.dtype} vs the CPU's "
                          f"{tuple(expected.shape)} {expected.dtype}")
    rtol, atol = tolerances(actual.dtype, rtol, atol)
    if actual.is_complex():
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
    if not (actual.is_floating_point() or actual.is_complex()):
        unequal = actual != expected
        count = int(unequal.sum())
        abs_err = float((actual.double() - expected.double()).abs().max()) if count else 0.0
        return Difference(count, actual.numel(), abs_err, float("inf") if count else 0.0, 0.0, 0.0)
    # The common case, every element close, in one pass at the tensors' precision (float for half types).
    compute = torch.float32 if actual.element_size() < 4 else actual.dtype
    a, e = actual.to(compute), expected.to(compute)
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return Difference(0, actual.numel(), 0.0, 0.0, rtol, atol)
    a, e = a.double(), e.double()
    finite = a.isfinite() & e.isfinite()
    if finite.any():
        finite_abs = (a - e).abs()[finite]
        rel = finite_abs / e[finite].abs().clamp_min(torch.finfo(torch.float64).tiny)
        max_abs, max_rel = float(finite_abs.max()), float(rel.max())
    else:
        max_abs = max_rel = 0.0
    return Difference(int((~close).sum()), actual.numel(), max_abs, max_rel, rtol, atol)
