"""Running torch_mlu's code right after another module is first imported (a one-shot post-import hook).

torch_mlu registers itself with modules that are heavy to import or optional (``torch._dynamo``, torchao's
tensor subclasses) only once the program imports them: :func:`after_import` runs the callback at once if the
module is already loaded, else right after the module's own code has run, through a finder at the front of
``sys.meta_path``. The finder is recorded in :mod:`torch_mlu.patches` and leaves ``sys.meta_path`` the first
time it sees the name, so the import itself goes to the usual finders; one finder waits per module name.
"""
import importlib.abc
import importlib.util
import sys

from . import patches


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs `callback` right after the module `name` has executed."""

    def __init__(self, name: str, callback):
        self.name = name
        self.callback = callback
        self.loader = None
        self.entry = None  # its patches entry, while it waits in sys.meta_path

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        patches.undo(self.entry)  # one-shot: out of sys.meta_path, so the other finders locate the module itself
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.callback()


def after_import(name: str, callback, reason: str) -> None:
    """callback() now if `name` is imported, else right after its first import."""
    if name in sys.modules:
        callback()
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        finder = _AfterImport(name, callback)
        finder.entry = patches.add_member(sys.meta_path, finder, reason, label="sys.meta_path")
