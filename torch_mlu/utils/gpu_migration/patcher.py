"""A record of attribute replacements that can be undone, in reverse order.

Invariant: every change gpu_migration makes to another module goes through `Patcher.set` (attributes,
sys.modules entries through `set_module`), so `restore()` returns each to the exact object it held.
"""
import sys
import warnings

_MISSING = object()


class Patcher:
    def __init__(self):
        self._undo = []

    def set(self, owner, name, value):
        old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        self._undo.append(lambda: delattr(owner, name) if old is _MISSING else setattr(owner, name, old))
        setattr(owner, name, value)

    def wrap(self, owner, name, wrapper, warn_missing=True):
        """Replaces owner.name by wrapper(owner.name); warns (TORCH_MLU_MIGRATION_WITH_WARNING) if absent."""
        fn = getattr(owner, name, None)
        if fn is None:
            if warn_missing:
                warn(f"gpu_migration: {getattr(owner, '__name__', owner)}.{name} does not exist in this torch; "
                     "not patched")
            return
        self.set(owner, name, wrapper(fn))

    def set_module(self, name, module):
        old = sys.modules.get(name, _MISSING)
        self._undo.append(lambda: sys.modules.pop(name, None) if old is _MISSING
                          else sys.modules.__setitem__(name, old))
        sys.modules[name] = module

    def call_on_undo(self, fn):
        self._undo.append(fn)

    def undo_all(self):
        while self._undo:
            self._undo.pop()()


def warn(message):
    import os
    if os.environ.get("TORCH_MLU_MIGRATION_WITH_WARNING", "1") != "0":
        warnings.warn(message, stacklevel=3)
