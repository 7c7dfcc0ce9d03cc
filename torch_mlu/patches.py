"""Every change ``import torch_mlu`` makes to torch's Python objects, listed and undoable.

PyTorch 2.13 has no hook for a few things a device backend needs (a renamed PrivateUse1 device's DLPack device,
interprocess sharing of its storages, Inductor's device-kind tests, ...), so torch_mlu replaces or adds
attributes of torch's modules and classes, entries of its tables and import-system hooks. Each such change
is recorded here, where it can be read back and undone::

    >>> import torch_mlu
    >>> for patch in torch_mlu.patches.applied():
    ...     print(patch)              # "torch.Tensor.__dlpack_device__: mlu tensors report ..."
    >>> torch_mlu.patches.undo_all()  # torch's own objects back, in reverse order

Invariants:

- every patch torch_mlu applies to torch (or to ``sys``, ``multiprocessing``: anything it does not own) is
  made through this module's :func:`set_attr`, :func:`set_item`, :func:`add_member` or
  :func:`recording_items`, by the module that needs it, with a one-line reason;
  tests/test_torch_patches.py scans torch_mlu's sources for changes made any other way;
- undo restores the exact original object (``is``), or removes what was absent before; entries are undone in
  reverse order, and undoing one entry under a later entry on the same attribute hands its original down to
  that later entry, so the last undo still restores torch's own object;
- applying is idempotent: setting what the target already holds records nothing, so the install functions that
  record here can run again (after :func:`undo_all` too, which lets them apply afresh).

Not here, because they are not patches: calls to torch's registration APIs for backends
(``rename_privateuse1_backend``, ``_register_device_module``, ``generate_methods_for_privateuse1_backend``,
``Backend.register_backend``, Inductor's ``register_backend_for_device``, Dynamo's
``register_interface_for_device`` and ``trace_rules.add``) and the C++ registrations of libtorch_mlu: torch
keeps their state and has no way to take them back. The opt-in CUDA migration
(``import torch_mlu.utils.gpu_migration``) records its patches in its own ``Patcher`` and undoes them with
``gpu_migration.restore()``. Inductor's patches are recorded when Inductor first compiles for mlu, not at import.
"""
import contextlib
import sys
import threading
import types

__all__ = ["Patch", "add_member", "applied", "recording_items", "set_attr", "set_item", "undo", "undo_all"]

MISSING = object()  # `Patch.original` of something absent before the patch
_lock = threading.RLock()
_entries = []  # Patch, in the order applied


def _describe(obj):
    """A short name: a module's or a class's dotted name, a function's qualified name, a key's repr."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        module = getattr(obj, "__module__", None)
        return obj.__qualname__ if module in (None, "builtins") else f"{module}.{obj.__qualname__}"
    if isinstance(obj, (str, int, float, bool, tuple, frozenset)) or obj is None:
        return repr(obj)
    if isinstance(getattr(type(obj), "__members__", None), dict) and isinstance(getattr(obj, "name", None), str):
        return f"{_describe(type(obj))}.{obj.name}"  # an enum member (DispatchKey.BackendSelect)
    return f"a {_describe(type(obj))}"


def _caller():
    """The module that asked for the patch: the first frame outside this module and contextlib."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "contextlib"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


class Patch:
    """One recorded change: ``kind`` is "attribute" (``target.key``), "item" (``target[key]``) or "member"
    (``key`` in the list or set ``target``); ``value`` is what was put there, ``original`` what was there
    (MISSING: nothing), ``by`` the module that applied it."""

    __slots__ = ("kind", "target", "key", "value", "original", "reason", "by", "name")

    def __init__(self, kind, target, key, value, original, reason, by, name):
        self.kind, self.target, self.key, self.value, self.original = kind, target, key, value, original
        self.reason, self.by, self.name = reason, by, name

    def current(self):
        """What the target holds now where the patch put its value (MISSING if nothing)."""
        if self.kind == "attribute":
            if isinstance(self.target, type):  # the class's own attribute, not an inherited one
                return self.target.__dict__.get(self.key, MISSING)
            return getattr(self.target, self.key, MISSING)
        if self.kind == "item":  # not .get(): Lightning's AcceleratorRegistry.get instantiates the accelerator
            return self.target[self.key] if self.key in self.target else MISSING
        return self.key if any(m is self.key for m in self.target) else MISSING

    def is_current(self):
        """Whether the target still holds the patched value."""
        return self.current() is self.value

    def _same_place(self, kind, target, key):
        return self.kind == kind and self.target is target and (self.key is key or self.key == key)

    def _restore(self):
        if self.kind == "member":
            if isinstance(self.target, list):
                for i, member in enumerate(self.target):
                    if member is self.key:
                        del self.target[i]
                        break
            else:
                self.target.discard(self.key)
        elif self.kind == "item":
            if self.original is MISSING:
                self.target.pop(self.key, None)
            else:
                self.target[self.key] = self.original
        elif self.original is MISSING:
            if self.current() is not MISSING:
                delattr(self.target, self.key)
        else:
            setattr(self.target, self.key, self.original)

    def __repr__(self):
        return f"{self.name}: {self.reason}"


def _applied_entry(kind, target, key, value):
    """The entry that put `value` there and still holds, if any."""
    for entry in reversed(_entries):
        if entry._same_place(kind, target, key):
            return entry if entry.value is value and entry.is_current() else None
    return None


def _record(kind, target, key, value, reason, by, name):
    """Applies and records putting `value` there; returns the entry (None if the target held it already)."""
    with _lock:
        entry = _applied_entry(kind, target, key, value)
        if entry is not None:
            return entry
        entry = Patch(kind, target, key, value, MISSING, reason, by or _caller(), name)
        if entry.current() is value:
            return None  # nothing changes: nothing to undo
        if kind != "member":
            entry.original = entry.current()
        if kind == "attribute":
            setattr(target, key, value)
        elif kind == "item":
            target[key] = value
        elif isinstance(target, list):
            target.insert(0, value)
        else:
            target.add(value)
        _entries.append(entry)
        return entry


def set_attr(target, name, value, reason, *, by=None):
    """``setattr(target, name, value)``, recorded; returns the entry (None if `target` held `value` already)."""
    return _record("attribute", target, name, value, reason, by, f"{_describe(target)}.{name}")


def set_item(mapping, key, value, reason, *, label, by=None):
    """``mapping[key] = value``, recorded; `label` names the mapping (``"sys.modules"``)."""
    return _record("item", mapping, key, value, reason, by, f"{label}[{_describe(key)}]")


def add_member(collection, member, reason, *, label, by=None):
    """Adds `member` to a set, or puts it first in a list (``sys.meta_path``), recorded."""
    return _record("member", collection, member, member, reason, by, f"{label} += {_describe(member)}")


@contextlib.contextmanager
def recording_items(mapping, reason, *, label, by=None):
    """Records, as set_item entries, the keys of `mapping` that the body adds or changes (for a torch function
    that registers several entries at once, such as ``torch.multiprocessing.reductions.init_reductions``)."""
    by = by or _caller()
    with _lock:
        before = dict(mapping)
        yield
        for key, value in list(mapping.items()):
            original = before.get(key, MISSING)
            if original is value or _applied_entry("item", mapping, key, value) is not None:
                continue
            _entries.append(Patch("item", mapping, key, value, original, reason, by, f"{label}[{_describe(key)}]"))


def applied():
    """The patches in effect, in the order applied: each with ``name``, ``reason``, ``by``, ``original``."""
    with _lock:
        return list(_entries)


def undo(entry):
    """Undoes one patch (a no-op if it was undone already)."""
    with _lock:
        index = next((i for i, e in enumerate(_entries) if e is entry), None)
        if index is None:
            return
        later = next((e for e in _entries[index + 1:] if e._same_place(entry.kind, entry.target, entry.key)), None)
        if later is not None:
            later.original = entry.original  # the later patch is what the target holds: it restores our original
        else:
            entry._restore()
        del _entries[index]


def undo_all():
    """Undoes every patch, the last applied first: torch's objects are the ones it had before torch_mlu."""
    with _lock:
        while _entries:
            undo(_entries[-1])
