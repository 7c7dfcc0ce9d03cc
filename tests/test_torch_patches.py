"""torch_mlu.patches: every change torch_mlu makes to torch is recorded there, holds, and undoes exactly.

The registry itself on throwaway objects; the entries a fresh ``import torch_mlu`` records; a scan of torch_mlu's
sources for changes to torch's objects made around the registry; and, in a subprocess (the undo would take this
process's patches away), undo_all restoring the very objects torch had before torch_mlu was imported.
"""
import ast
import collections
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import types

import torch_mlu
from conftest import REPO
from torch_mlu import patches


def run_python(code, **env):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=300, cwd=REPO, env={**os.environ, **env})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_set_attr_undo_and_idempotence():
    original, value, later = object(), object(), object()
    owner = types.SimpleNamespace(a=original)
    first = patches.set_attr(owner, "a", value, "test")
    assert patches.set_attr(owner, "a", value, "test") is first  # applied already: one entry
    assert patches.set_attr(owner, "a", value, "test") in patches.applied()
    assert first.original is original and owner.a is value and first.by == __name__
    second = patches.set_attr(owner, "a", later, "test")
    added = patches.set_attr(owner, "b", 1, "test")
    patches.undo(first)  # under a later patch: the value stays, the later one restores the original
    assert owner.a is later and second.original is original
    patches.undo(second)
    patches.undo(added)
    assert owner.a is original and not hasattr(owner, "b")
    assert not {first, second, added} & set(patches.applied())
    assert patches.set_attr(owner, "a", original, "test") is None  # holds it already: nothing to record


def test_class_attribute_undo_leaves_the_inherited_one():
    class Base:
        def f(self):
            return "base"

    class Derived(Base):
        pass

    entry = patches.set_attr(Derived, "f", lambda self: "patched", "test")
    assert entry.original is patches.MISSING and Derived().f() == "patched"
    patches.undo(entry)
    assert "f" not in Derived.__dict__ and Derived().f() == "base"


def test_items_and_members():
    original, finder = object(), object()
    mapping, finders, members = {"kept": 1, "changed": 2}, [original], set()
    item = patches.set_item(mapping, "new", 3, "test", label="mapping")
    with patches.recording_items(mapping, "test", label="mapping"):
        mapping["changed"] = 20
        mapping["added"] = 4
    first = patches.add_member(finders, finder, "test", label="finders")
    added = patches.add_member(members, "m", "test", label="members")
    assert finders[0] is finder and mapping == {"kept": 1, "changed": 20, "new": 3, "added": 4}
    assert item.name == "mapping['new']" and first.name == "finders += a object"
    assert patches.add_member(finders, finder, "test", label="finders") is first
    for entry in reversed([e for e in patches.applied() if e.target in (mapping, finders, members)]):
        patches.undo(entry)
    assert mapping == {"kept": 1, "changed": 2} and finders == [original] and members == set() and added


# What a fresh `import torch_mlu` records (not Inductor's, which come with the first compile): by name, the
# names that differ only by dtype counted together.
KNOWN_AT_IMPORT = {
    "torch.optim.optimizer.Optimizer._accelerator_graph_capture_health_check": 1,
    "torch._storage_classes += torch.mlu.<dtype>Storage": 12,
    "sys.meta_path += a torch_mlu._SubmoduleAlias": 1,
    "torch.version.mlu": 1,
    "torch.is_mlu_available": 1,
    "torch.nn.modules.linear_cross_entropy_options._AUTO_DEFAULTS[('mlu', <dtype>)]": 2,
    "torch.nn.modules.linear_cross_entropy_options.LinearCrossEntropyOptions._resolve_auto_acc_dtype": 1,
    "torch.Tensor.__dlpack_device__": 1,
    "torch.storage.UntypedStorage._share_mlu_": 1,
    "torch.storage.UntypedStorage._new_shared_mlu": 1,
    "torch.storage.TypedStorage._share_mlu_": 1,
    "torch.storage.TypedStorage._new_shared_mlu": 1,
    "torch.multiprocessing.reductions.reduce_storage": 1,
    "multiprocessing.reduction.ForkingPickler._extra_reducers[torch.storage.UntypedStorage]": 1,
    "multiprocessing.reduction.ForkingPickler._extra_reducers[torch.mlu.<dtype>Storage]": 12,
    "multiprocessing.reduction.ForkingPickler._extra_reducers[torch.Event]": 1,
    "torch.backends.mlu": 1,
    "sys.modules['torch.backends.mlu']": 1,
    "torch.distributed.ProcessGroupCNCL": 1,
    "torch.distributed.is_cncl_available": 1,
    # Note [Compiled RNG state on mlu]
    "torch._prims.rng_prims.run_and_save_rng_state.py_kernels[torch.DispatchKey.BackendSelect]": 1,
    "torch._prims.rng_prims.run_and_save_rng_state.python_key_table"
    "[torch.fx.experimental.proxy_tensor.ProxyTorchDispatchMode]": 1,
    "torch._higher_order_ops.utils.registered_hop_fake_fns"
    "[a torch._prims.rng_prims.register_run_and_save_rng_state_op.<locals>.RunAndSaveRngState]": 1,
    "torch._prims.rng_prims.run_with_rng_state.py_kernels[torch.DispatchKey.BackendSelect]": 1,
    # torch._dynamo, torchao's two subclasses, torch.nn.attention.flex_attention, torch.distributed.tensor,
    # lightning.pytorch.trainer.trainer, pytorch_lightning.trainer.trainer
    "sys.meta_path += a torch_mlu._after_import._AfterImport": 7,
}


def test_a_fresh_import_records_the_known_patches():
    out = run_python("""
        import torch_mlu
        for entry in torch_mlu.patches.applied():
            assert entry.is_current(), entry
            assert entry.reason and entry.by.startswith("torch_mlu"), entry
            print(entry.name)
    """)
    names = collections.Counter(re.sub(r"torch\.mlu\.\w+Storage", "torch.mlu.<dtype>Storage",
                                       re.sub(r"torch\.(bfloat16|float16)", "<dtype>", line))
                                for line in out.splitlines())
    assert names == KNOWN_AT_IMPORT


def test_every_entry_holds_its_value_in_this_process():
    assert patches.applied()
    for entry in patches.applied():
        assert entry.is_current(), entry
    assert torch_mlu.patches is patches


# --- no change to torch's objects outside the registry -------------------------------------------------------

# Modules torch_mlu does not own: names bound to them (or to what they hold) are torch's objects.
FOREIGN = {"torch", "sys", "builtins", "copyreg", "multiprocessing", "pickle", "importlib"}
MUTATORS = {"insert", "append", "extend", "add", "update", "setdefault", "register", "remove", "pop", "discard",
            "clear", "sort", "__setitem__", "__delitem__"}
# The registry, and gpu_migration's Patcher (opt-in, undone by gpu_migration.restore()).
EXEMPT = {"torch_mlu/patches.py", "torch_mlu/utils/gpu_migration/patcher.py"}
# A line that writes to torch's objects and is no patch (a cache used as designed) says so.
MARK = re.compile(r"#.*\b(not a patch|undone by)\b")


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def direct_patches(source):
    """(line, text) of each statement of `source` that changes an object of a FOREIGN module directly."""
    tree = ast.parse(source)
    modules, foreign = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FOREIGN:
                    name = alias.asname or alias.name.split(".")[0]
                    modules.add(name)
                    foreign.add(name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] in FOREIGN:
            foreign.update(alias.asname or alias.name for alias in node.names)
    for _ in range(3):  # names bound to what a foreign name holds: `table = options._AUTO_DEFAULTS`
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript))
                    and _root(node.value) in foreign):
                foreign.add(node.targets[0].id)
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        hit = any(isinstance(t, (ast.Attribute, ast.Subscript)) and _root(t) in foreign for t in targets)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                hit = _root(node.args[0]) in foreign
            elif isinstance(func, ast.Attribute) and func.attr in MUTATORS and _root(func.value) in foreign:
                # torch.add(...) is a function of a module; torch._storage_classes.add(...) changes torch.
                hit = not (isinstance(func.value, ast.Name) and func.value.id in modules)
        if hit:
            found.append(node.lineno)
    lines = source.splitlines()
    return [(n, lines[n - 1].strip()) for n in sorted(set(found)) if not MARK.search(lines[n - 1])]


def test_the_scan_finds_direct_patches():
    source = textwrap.dedent("""\
        import sys
        import torch
        from torch._inductor import config as inductor_config
        from torch.nn.modules import linear_cross_entropy_options as lce
        torch.Tensor.__dlpack_device__ = f
        setattr(torch, "is_mlu_available", f)
        sys.meta_path.insert(0, finder)
        inductor_config.cuda_backend = "cpp"
        table = lce._AUTO_DEFAULTS
        table.setdefault(key, value)
        torch._storage_classes.add(cls)
        sys.modules["torch.backends.mlu"] = m
        x = torch.add(a, b)
        obj = make(); obj.attr = 1
        torch.cache[key] = value  # not a patch: a cache used as designed
        """)
    assert [n for n, _ in direct_patches(source)] == [5, 6, 7, 8, 10, 11, 12]


def test_no_patch_bypasses_the_registry():
    package = pathlib.Path(REPO) / "torch_mlu"
    problems = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel in EXEMPT:
            continue
        problems.extend(f"{rel}:{n}: {text}" for n, text in direct_patches(path.read_text(encoding="utf-8")))
    assert not problems, ("changes to torch's objects made around torch_mlu.patches (use patches.set_attr, "
                          "set_item, add_member or recording_items; mark a line that is no patch "
                          "'# not a patch: why'):\n" + "\n".join(problems))


# --- undo ------------------------------------------------------------------------------------------------------

def test_undo_all_restores_torch_in_a_subprocess():
    out = run_python("""
        import multiprocessing.reduction
        import sys

        import torch
        import torch._inductor.config
        import torch._inductor.cudagraph_utils
        import torch._inductor.ir
        import torch._inductor.lowering
        import torch._inductor.scheduler
        import torch.distributed
        import torch.multiprocessing.reductions
        import torch.nn.attention.flex_attention as flex
        from torch.distributed.tensor import DTensor
        from torch._higher_order_ops.flex_attention import flex_attention as flex_hop
        from torch._higher_order_ops.utils import registered_hop_fake_fns
        from torch._prims.rng_prims import run_and_save_rng_state, run_with_rng_state
        from torch.nn.modules import linear_cross_entropy_options as lce
        from torch.optim.optimizer import Optimizer

        assert "torch_mlu" not in sys.modules  # no autoload: the objects below are torch's own
        config = torch._inductor.config
        # Every object an entry changes (the test fails naming an entry whose target is missing here).
        watched = [torch, torch.version, torch.backends, torch.Tensor, torch.UntypedStorage, torch.TypedStorage,
                   torch.multiprocessing.reductions, Optimizer, torch.distributed, lce._AUTO_DEFAULTS,
                   lce.LinearCrossEntropyOptions, multiprocessing.reduction.ForkingPickler._extra_reducers,
                   torch._storage_classes, sys.meta_path, sys.modules, torch._inductor.ir, torch._inductor.lowering,
                   torch._inductor.scheduler, torch._inductor.scheduler.BaseSchedulerNode,
                   torch._inductor.cudagraph_utils, flex, torch._inductor.lowering.lowerings,
                   registered_hop_fake_fns, run_and_save_rng_state.py_kernels, run_with_rng_state.py_kernels,
                   run_and_save_rng_state.python_key_table, flex_hop.py_kernels,
                   DTensor, *(getattr(DTensor._op_dispatcher.sharding_propagator, table)
                     for table in ("op_strategy_funcs", "op_to_schema_info", "op_single_dim_strategy_funcs",
                                   "op_to_schema_info_for_single_dim_strategy"))]

        def state(obj):
            if isinstance(obj, dict):
                return dict(obj)
            return list(obj) if isinstance(obj, (list, set)) else dict(vars(obj))

        before = {id(obj): state(obj) for obj in watched}
        config_before = config.get_config_copy()

        import torch_mlu
        import torch_mlu._inductor  # Inductor's patches too
        from torch_mlu import patches

        entries = patches.applied()
        kinds = {e.kind for e in entries}
        assert kinds == {"attribute", "item", "member"}, kinds
        for entry in entries:
            assert entry.is_current(), entry
            if entry.target is config:
                assert entry.original == config_before[entry.key], entry
                continue
            assert id(entry.target) in before, f"{entry.name}: add its owner to `watched`"
            snapshot = before[id(entry.target)]
            if entry.kind == "member":
                assert not any(m is entry.key for m in snapshot), entry
            else:
                assert entry.original is snapshot.get(entry.key, patches.MISSING), entry

        patches.undo_all()
        assert patches.applied() == []
        for entry in entries:
            now = entry.current()
            if entry.target is config:
                assert now == config_before[entry.key], entry
            elif entry.kind == "member":
                assert now is patches.MISSING, entry
            else:
                assert now is before[id(entry.target)].get(entry.key, patches.MISSING), entry
        assert torch.Tensor.__dlpack_device__ is before[id(torch.Tensor)]["__dlpack_device__"]
        assert not hasattr(torch, "is_mlu_available") and "torch.backends.mlu" not in sys.modules

        x = torch.arange(6.0).reshape(2, 3)
        assert (x @ x.T).tolist() == [[5.0, 14.0], [14.0, 50.0]]
        assert torch.from_dlpack(x).data_ptr() == x.data_ptr()
        print(len(entries), "undone")
    """, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert int(out.split()[0]) > len(KNOWN_AT_IMPORT)
