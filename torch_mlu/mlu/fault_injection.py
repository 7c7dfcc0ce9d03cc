"""Fault injection: make the software MLU fail on purpose, to test recovery code.

The rules are Note [Fault injection] (``runtime/include/mlu_runtime/fault.h``), separated by ``;``:

==================  ========================================================================
``alloc:N[+]``      the Nth device allocation from now fails as out of memory (``+``: and every later one)
``host_alloc:N[+]`` the same for pinned host memory
``kernel:N[+]``     the Nth kernel launched from now fails on the device
``kernel:NAME[@N]`` kernels whose name contains NAME fail (only the Nth such with ``@N``)
``copy:N[+]``       the Nth copy fails on the device
``delay:MS``        every kernel and copy waits MS milliseconds before it runs
``capacity:SIZE``   each device's capacity drops to SIZE (``64M``, ``1G``)
``corrupt:NAME[@N]`` the results of ATen ops whose name contains NAME (``aten::addmm``) are scaled by 1 + 2^-6
                    (only the Nth such op with ``@N``): a wrong kernel, for the accuracy tools to find
==================  ========================================================================

A failed kernel or copy does not run; the error surfaces as a real device error would, at the next
synchronizing call (``torch.AcceleratorError``, naming the kernel and the rule); a failed allocation is
``torch.OutOfMemoryError`` once the caching allocator has freed its cache and tried again. Rules come from
``TORCH_MLU_FAULT_INJECT`` for a whole program, or from :func:`inject` for a block of it::

    with torch.mlu.fault_injection.inject("kernel:add@2"):
        ...
"""
import contextlib

import torch_mlu._C as _C

__all__ = ["clear", "count", "inject", "set_rules", "spec"]


def set_rules(rules: str) -> None:
    """Replaces the rules in force (``""`` clears them); counting starts now. A malformed spec raises
    ``ValueError`` explaining the grammar and keeps the old rules."""
    _C._mlu_faultInjectSet(rules)


def clear() -> None:
    """Removes every rule."""
    _C._mlu_faultInjectSet("")


def spec() -> str:
    """The rules in force, as they were set."""
    return _C._mlu_faultInjectSpec()


def count() -> int:
    """How many faults were injected since the rules were last set."""
    return int(_C._mlu_faultInjectCount())


@contextlib.contextmanager
def inject(rules: str):
    """Sets ``rules`` for the block, then restores the rules that were in force before."""
    previous = spec()
    set_rules(rules)
    try:
        yield
    finally:
        set_rules(previous)
