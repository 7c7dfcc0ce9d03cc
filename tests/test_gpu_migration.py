"""CUDA code on mlu: ``import torch_mlu.utils.gpu_migration``, the offline converter, the 1.x API, legacy types.

The oracle for the CUDA scripts (tests/cuda_scripts) is the same script on the CPU: without CUDA they take
their CPU path, as such scripts do.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import pytest
import torch

import torch_mlu  # noqa: F401  (torch.mlu)

SCRIPTS = pathlib.Path(__file__).parent / "cuda_scripts"
SINGLE_DEVICE_SCRIPTS = ["mlp_amp", "cnn", "lstm"]
# Runs a script as __main__ after the one import, the way a user adds it at the top.
WITH_MIGRATION = ("import runpy, sys\nimport torch_mlu.utils.gpu_migration\n"
                  "script = sys.argv[1]\nsys.argv = sys.argv[1:]\nrunpy.run_path(script, run_name='__main__')\n")


def run_script(path, *args, migrate=False, env=None, torchrun=False):
    prefix = [sys.executable]
    if torchrun:
        prefix += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    if migrate:
        launcher = pathlib.Path(args[0]) / "with_migration.py"
        launcher.write_text(WITH_MIGRATION)
        prefix.append(str(launcher))
    result = subprocess.run([*prefix, str(path), *args], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, **(env or {})))
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def assert_same_training(actual, expected, rtol, atol):
    for key, value in expected.items():
        if isinstance(value, list):
            torch.testing.assert_close(torch.tensor(actual[key]), torch.tensor(value), rtol=rtol, atol=atol,
                                       msg=lambda m: f"{key}: {m}")


# fp16 autocast on mlu against float32 on the CPU; float32 scripts as the CPU.
TOLERANCES = {"mlp_amp": (2e-2, 1e-2), "cnn": (1e-4, 1e-5), "lstm": (1e-4, 1e-5)}


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu")
    return {name: run_script(SCRIPTS / f"{name}.py", str(out)) for name in SINGLE_DEVICE_SCRIPTS}


@pytest.mark.parametrize("name", SINGLE_DEVICE_SCRIPTS)
def test_cuda_script_runs_unmodified_after_the_import(name, cpu_results, tmp_path):
    result = run_script(SCRIPTS / f"{name}.py", str(tmp_path), migrate=True)
    assert cpu_results[name]["device"] == "cpu" and result["device"] == "mlu:0"
    if name == "mlp_amp":
        assert result["loaded_on"] == "mlu:0"  # torch.load(map_location="cuda:0")
    assert_same_training(result, cpu_results[name], *TOLERANCES[name])


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("converted") / "scripts_mlu"
    result = subprocess.run([sys.executable, "-m", "torch_mlu.utils.gpu2mlu", "-i", str(SCRIPTS), "-o", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("name", SINGLE_DEVICE_SCRIPTS)
def test_converted_script_runs_without_the_import(name, converted, cpu_results, tmp_path):
    code = (converted / f"{name}.py").read_text().split('"""', 2)[2]  # after the module docstring (prose)
    assert not re.search(r"torch\.cuda|\.cuda\(|\.is_cuda|[\"']cuda", code)  # no CUDA reference left
    result = run_script(converted / f"{name}.py", str(tmp_path))
    assert result["device"] == "mlu:0"
    assert_same_training(result, cpu_results[name], *TOLERANCES[name])


def report_rows(report):
    rows = re.findall(r"^\| (\S+) \| (\d+) \| `(.*)` \| `(.*)` \|$", report.split("## Not converted")[0], re.M)
    return {(f, int(line), before, after) for f, line, before, after in rows}


def test_report_lists_exactly_the_changed_lines(converted):
    expected = set()
    for original in sorted(SCRIPTS.glob("*.py")):
        old = original.read_text().splitlines()
        new = (converted / original.name).read_text().splitlines()
        assert len(old) == len(new)
        expected |= {(original.name, i + 1, a.strip().replace("|", "\\|"), b.strip().replace("|", "\\|"))
                     for i, (a, b) in enumerate(zip(old, new)) if a != b}
    rows = report_rows((converted / "report.md").read_text())
    assert rows == expected
    assert ("cnn.py", 33, "model = model.cuda()", "model = model.mlu()") in rows
    assert any(r[0] == "ddp.py" and 'init_process_group("cncl")' in r[3] for r in rows)


def ddp_reference():
    """What ddp.py computes, without processes: 2 ranks' mean gradient, SGD(lr=0.1), 3 steps, on the CPU.

    (The script's own CPU path runs DDP over Gloo, whose exit sometimes aborts in stock torch
    -- "terminate called without an active exception", also with TORCH_DEVICE_BACKEND_AUTOLOAD=0.)
    """
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    generators = [torch.Generator().manual_seed(rank) for rank in range(2)]
    for _ in range(3):
        for generator in generators:
            (model(torch.randn(16, 8, generator=generator)).square().mean() / 2).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
                p.grad = None
    return {"all_reduce": [3.0] * 4, "weight": model.weight.detach().flatten().tolist()}


def test_cuda_ddp_script_under_torchrun(tmp_path):
    migrated = run_script(SCRIPTS / "ddp.py", str(tmp_path), migrate=True, torchrun=True)
    assert (migrated["backend"], migrated["device"]) == ("cncl", "mlu:0")
    assert_same_training(migrated, ddp_reference(), 1e-5, 1e-6)


def test_converted_ddp_script_under_torchrun(converted):
    result = run_script(converted / "ddp.py", torchrun=True)
    assert (result["backend"], result["device"]) == ("cncl", "mlu:0")
    assert_same_training(result, ddp_reference(), 1e-5, 1e-6)


# ---- the runtime migration, in this process (restored after each test: the `migration` fixture) ----

@pytest.mark.parametrize("device", ["cuda", "cuda:1", torch.device("cuda"), torch.device("cuda", 1), 1])
def test_device_arguments_of_every_form(migration, device):
    index = 1 if "1" in str(device) or device == 1 else torch.mlu.current_device()
    expected = torch.device("mlu", index)
    assert torch.zeros(2, device=device).device == expected
    assert torch.tensor([1.0], device=device).device == expected
    assert torch.ones(2).to(device).device == expected
    assert torch.ones(2).cuda(device).device == expected
    assert torch.nn.Linear(2, 2).to(device).weight.device == expected
    assert torch.nn.Linear(2, 2, device=device).weight.device == expected
    assert torch.ones(2).new_zeros(3, device=device).device == expected
    assert torch.Generator(device=device).device == expected


def test_tensor_and_module_attributes(migration):
    with pytest.warns(DeprecationWarning, match="deprecated"):  # torch's own warning about the argument
        assert torch.ones(2).pin_memory("cuda").is_pinned()
    x = torch.ones(2).cuda()
    assert x.is_cuda and x.device.type == "mlu" and not torch.ones(2).is_cuda
    assert torch.nn.Linear(2, 2).cuda().weight.is_cuda
    assert torch.ones(2).pin_memory().is_pinned()
    assert x.type("torch.cuda.HalfTensor").dtype == torch.float16
    assert isinstance(x.type(torch.cuda.DoubleTensor), torch.cuda.DoubleTensor)
    assert torch.cuda.LongTensor([1, 2]).device.type == "mlu"
    assert torch.UntypedStorage(16, device="cuda").device.type == "mlu"
    assert isinstance(torch.default_generator, torch.Generator)
    with torch.device("cuda"):
        assert torch.zeros(1).device.type == "mlu"
    torch.set_default_device("cuda")
    try:
        assert torch.zeros(1).device.type == "mlu"
    finally:
        torch.set_default_device(None)


def test_torch_cuda_is_torch_mlu(migration):
    import torch.cuda.amp
    from torch.cuda import nvtx
    assert torch.cuda.is_available() and torch.cuda.device_count() == torch.mlu.device_count()
    assert torch.cuda.current_device() == torch.mlu.current_device()
    assert torch.cuda.CUDAGraph is torch.mlu.MLUGraph and torch.cuda.graph is torch.mlu.graph
    assert torch.cuda.make_graphed_callables is not None and nvtx is torch.mlu.cnpx
    assert torch.cuda.amp.autocast is torch.mlu.amp.autocast and torch.cuda.amp.GradScaler is torch.mlu.amp.GradScaler
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    stream = torch.cuda.Stream(device="cuda:1")
    assert stream.device == torch.device("mlu", 1) and isinstance(stream, torch.mlu.Stream)
    with torch.cuda.device("cuda:1"):
        assert torch.cuda.current_device() == 1
    event = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(torch.cuda.Stream()):
        y = torch.ones(1000, device="cuda") * 2
        event.record()
    event.synchronize()
    torch.cuda.synchronize("cuda:0")
    assert torch.cuda.memory_allocated("cuda:0") >= y.numel() * 4 and torch.cuda.mem_get_info("cuda")[0] > 0
    torch.cuda.manual_seed(3)
    a = torch.randn(4, device="cuda")
    torch.cuda.manual_seed(3)
    assert torch.equal(a.cpu(), torch.randn(4, device="cuda").cpu())
    properties = torch.cuda.get_device_properties("cuda:0")
    assert (properties.major, properties.minor) == torch.cuda.get_device_capability() == (8, 0)
    assert properties.is_integrated is False and properties.total_memory > 0 and "MLU" in properties.name
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    # (Plain assignments run in the CUDA scripts; here torch's test helpers may have frozen the global flags.)
    with torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False):
        assert torch.mm(a.view(2, 2), a.view(2, 2)).device.type == "mlu"
    assert torch.cuda.nccl.is_available([a]) and torch.cuda.nccl.version() == torch.mlu.cncl.version()


def test_cuda_names_mlu_lacks_stay_cudas_with_a_warning(migration):
    with pytest.warns(UserWarning, match="jiterator has no mlu counterpart"):
        jiterator = torch.cuda.jiterator
    assert jiterator.__name__ == "torch.cuda.jiterator"


def test_autocast_and_grad_scaler(migration):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled() and torch.is_autocast_enabled("cuda")
        assert torch.mm(torch.ones(2, 2, device="cuda"), torch.ones(2, 2, device="cuda")).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled()
    assert torch.get_autocast_gpu_dtype() == torch.get_autocast_dtype("mlu")
    for scaler in (torch.amp.GradScaler(), torch.amp.GradScaler("cuda"), torch.cuda.amp.GradScaler()):
        assert scaler._device == "mlu" and scaler.is_enabled()


def test_torch_load_maps_cuda_locations(migration, tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save({"w": torch.arange(4.0)}, path)
    for location in ("cuda:1", torch.device("cuda", 1), {"cpu": "cuda:1"}, lambda storage, loc: storage.cuda(1)):
        assert torch.load(path, map_location=location)["w"].device == torch.device("mlu", 1), location
    # A checkpoint written on CUDA names its storages "cuda:N": it loads on mlu:N without a map_location.
    entry = (0, lambda storage: "cuda:1" if storage.device.type == "mlu" else None, lambda storage, loc: None)
    torch.serialization._package_registry.insert(0, entry)
    try:
        torch.save({"w": torch.arange(4.0, device="mlu")}, path)
    finally:
        torch.serialization._package_registry.remove(entry)
    loaded = torch.load(path)["w"]
    assert loaded.device == torch.device("mlu", 1) and loaded.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_dataloader_pin_memory_device(migration):
    dataset = torch.utils.data.TensorDataset(torch.arange(8.0))
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, pin_memory=True, pin_memory_device="cuda")
    assert all(batch.is_pinned() for (batch,) in loader)


def test_profiler_cuda_activity_means_mlu(migration):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.mm(torch.ones(8, 8, device="cuda"), torch.ones(8, 8, device="cuda"))
        torch.cuda.synchronize()
    assert any(e.device_type == torch.autograd.DeviceType.PrivateUse1 for e in prof.events())
    assert "Self MLU" in prof.key_averages().table(sort_by="self_cuda_time_total")


def test_compile_reduce_overhead_under_migration(migration, released_graphs):
    # torch.cuda.is_available() is True here, in a torch without CUDA's bindings: Inductor's graph checks must cope.
    f = torch.compile(lambda a, s: (a @ a).relu() * s, mode="reduce-overhead")
    x = torch.randn(8, 8)
    for scale in (torch.tensor(2.0), torch.tensor(3.0), torch.tensor(4.0)):
        out = f(x.cuda(), scale)
        assert out.is_cuda
        torch.testing.assert_close(out.cpu(), (x @ x).relu() * scale, atol=1e-5, rtol=1e-5)
    g = torch.compile(lambda a: (a @ a).relu() + 1, mode="reduce-overhead")
    for _ in range(3):  # warm-up, record, replay
        torch.testing.assert_close(g(x.cuda()).cpu(), (x @ x).relu() + 1, atol=1e-5, rtol=1e-5)


def test_nccl_means_cncl(migration):
    import torch.distributed as dist
    assert dist.is_nccl_available() and dist.is_nccl_available is dist.is_cncl_available
    from torch_mlu.utils.gpu_migration.migration import _to_cncl
    assert [_to_cncl(b) for b in ("nccl", "cuda:nccl,cpu:gloo", "gloo")] == ["cncl", "mlu:cncl,cpu:gloo", "gloo"]


def test_memory_pools_and_allocators_keep_their_cuda_names(migration):
    from torch.cuda.memory import CUDAPluggableAllocator, _record_memory_history
    assert CUDAPluggableAllocator is torch.cuda.CUDAPluggableAllocator is torch.mlu.memory.MLUPluggableAllocator
    assert _record_memory_history is torch.mlu.memory._record_memory_history
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        x = torch.ones(1000, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool.id):
        y = x * 2
    assert g.pool() == pool.id and pool.use_count() == 2
    g.replay()
    assert y.sum().item() == 2000 and x.device.type == "mlu"
    assert {s["address"] for s in pool.snapshot()} and torch.cuda.memory.get_allocator_backend() == "native"
    del g, x, y, pool


def test_cpp_extension_reports_no_cuda_toolkit(migration):
    # No CUDA toolkit can build for mlu: CUDA_HOME stays None, so scripts skip their CUDA-kernel builds.
    import torch.utils.cpp_extension as cpp_extension
    assert cpp_extension.CUDA_HOME is None and torch.version.cuda is None


def test_restore_undoes_everything():
    import torch_mlu.utils.gpu_migration as gpu_migration  # applies on its first import
    gpu_migration.restore()
    import torch.cuda.amp
    before = (torch.cuda, torch.zeros, torch.Tensor.to, torch.Generator, sys.modules["torch.cuda.amp"],
              list(torch.serialization._package_registry), torch.nn.Module.cuda, torch.load, torch.is_autocast_enabled)
    gpu_migration.apply()
    assert torch.cuda is not before[0] and gpu_migration.is_applied()
    gpu_migration.apply()  # idempotent
    gpu_migration.restore()
    after = (torch.cuda, torch.zeros, torch.Tensor.to, torch.Generator, sys.modules["torch.cuda.amp"],
             list(torch.serialization._package_registry), torch.nn.Module.cuda, torch.load, torch.is_autocast_enabled)
    assert all(a is b for a, b in zip(after[:5], before[:5])) and after[5:] == before[5:]
    assert not gpu_migration.is_applied() and not torch.ones(1, device="mlu").is_cuda
    assert "is_cuda" not in torch.Tensor.__dict__ and "cuda" not in torch.Tensor.__dict__
    with pytest.raises((RuntimeError, AssertionError)):
        torch.zeros(1, device="cuda")


def test_environment_variables_and_warnings(python):
    code = """
    import os, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import torch, torch_mlu.utils.gpu_migration
    print(torch.cuda.device_count(), os.environ.get("PYTORCH_MLU_ALLOC_CONF"), os.environ["CNCL_DEBUG"],
          os.environ["CNCL_SOCKET_IFNAME"], os.environ["TORCH_CNCL_TRACE_BUFFER_SIZE"])
    print([str(w.message) for w in caught if "gpu_migration" in str(w.message)])
    """
    env = {"CUDA_VISIBLE_DEVICES": "1", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64", "NCCL_DEBUG": "WARN",
           "NCCL_SOCKET_IFNAME": "eth0", "TORCH_NCCL_TRACE_BUFFER_SIZE": "64", "NCCL_IB_DISABLE": "1",
           "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    result = python(code, env=env)
    assert result.returncode == 0, result.stderr
    counts, warned = result.stdout.splitlines()
    assert counts == "1 max_split_size_mb:64 WARN eth0 64"
    assert "NCCL_IB_DISABLE" in warned and "CUDA_DEVICE_ORDER" in warned and "no mlu equivalent" in warned
    # An explicit mlu setting wins; TORCH_MLU_MIGRATION_WITH_WARNING=0 silences the warnings.
    result = python(code, env=dict(env, MLU_VISIBLE_DEVICES="0,1", TORCH_MLU_MIGRATION_WITH_WARNING="0"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["2 max_split_size_mb:64 WARN eth0 64", "[]"]


def test_documented_one_import_example(python):
    result = python(documented_snippet("**One import.**"))
    assert result.returncode == 0, result.stderr
    device, allocated = result.stdout.split()
    assert device == "mlu:0" and int(allocated) > 0


def test_model_transfer_is_the_old_name(python):
    result = python("import torch, torch_mlu.utils.model_transfer as mt\n"
                    "print(mt.is_applied(), torch.ones(1).cuda().device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "mlu:0"]


# HF accelerate and transformers keep their own mlu paths, with the import in place and without it.
HF_CODE = """
import torch
{migration}
import transformers
from accelerate import Accelerator, PartialState
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

assert PartialState().device.type == "mlu", PartialState().device
accelerator = Accelerator()
torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32, num_labels=2)
model = BertForSequenceClassification(config)
data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.tensor(i % 2)} for i in range(16)]
args = TrainingArguments(output_dir="{out}", per_device_train_batch_size=4, max_steps=3, report_to=[],
                         logging_steps=1, save_strategy="no", use_cpu=False)
trainer = Trainer(model=model, args=args, train_dataset=data)
assert trainer.args.device.type == "mlu", trainer.args.device
result = trainer.train()
assert next(model.parameters()).device.type == "mlu"
print("OK", trainer.args.device, round(result.training_loss, 3))
"""


@pytest.mark.parametrize("migrated", [True, False], ids=["with_migration", "plain"])
def test_accelerate_and_transformers_keep_their_mlu_paths(python, tmp_path, migrated):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    code = HF_CODE.replace("{out}", str(tmp_path))
    code = code.replace("{migration}", "import torch_mlu.utils.gpu_migration" if migrated else "import torch_mlu")
    result = python(code, env={"HF_HUB_OFFLINE": "1"}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split()[:2] for line in result.stdout.splitlines() if line.startswith("OK")] == [["OK", "mlu:0"]], \
        result.stdout


# ---- the torch_mlu 1.x API: the getting-started snippet, verbatim ----

def documented_snippet(after):
    """The first python block of docs/migration.md after the line starting with `after` (tested as documented)."""
    page = (pathlib.Path(__file__).parent.parent / "docs" / "migration.md").read_text()
    rest = page[page.index(after):]
    return rest.split("```python\n", 1)[1].split("```", 1)[0]


def test_torch_mlu_1x_snippet_runs_verbatim_and_warns_once_per_call(python):
    snippet = documented_snippet("**torch_mlu 1.x scripts**")
    assert "import torch_mlu.core.mlu_model as ct" in snippet
    result = python("import warnings\nwarnings.simplefilter('default')\n" + snippet)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"torch.Size([4, 2]) 0 {torch.mlu.device_count()}"
    warned = [line for line in result.stderr.splitlines() if "FutureWarning" in line]
    assert len(warned) == 6, result.stderr  # set_cnml_enabled, set_device, mlu_device, synchronize, ...
    assert "use torch.mlu.set_device(n)" in result.stderr and "there is no CNML mode" in result.stderr


def test_mlu_model_functions():
    import torch_mlu.core.mlu_model as ct
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert ct.mlu_device(1) == torch.device("mlu", 1)
        assert ct.is_available() and ct.get_device_name() == torch.mlu.get_device_name()
        assert ct.get_device(torch.ones(1, device="mlu:1")) == 1 and ct.get_running_mode() == "eager"
        ct.manual_seed(1)
        a = torch.randn(3, device="mlu")
        ct.manual_seed_all(1)
        assert torch.equal(a.cpu(), torch.randn(3, device="mlu").cpu())
        ct.set_core_number(4), ct.set_core_version("MLU270"), ct.set_input_format(0), ct.empty_cache()


# ---- legacy tensor types (torch.mlu, no migration needed) ----

@pytest.mark.parametrize("name, dtype", [("FloatTensor", torch.float32), ("HalfTensor", torch.float16),
                                         ("BFloat16Tensor", torch.bfloat16), ("LongTensor", torch.int64),
                                         ("BoolTensor", torch.bool), ("DoubleTensor", torch.float64)])
def test_legacy_tensor_types(name, dtype):
    cls = getattr(torch.mlu, name)
    assert repr(cls) == f"<class 'torch.mlu.{name}'>"
    x = torch.zeros(3, dtype=torch.int32)
    for converted in (x.type(cls), x.type(f"torch.mlu.{name}")):
        assert converted.device.type == "mlu" and converted.dtype == dtype and converted.type() == f"torch.mlu.{name}"
        assert isinstance(converted, cls) and not isinstance(converted.cpu(), cls)
    assert cls(2, 3).shape == (2, 3) and cls(torch.Size([4])).shape == (4,) and cls().shape == (0,)
    assert cls([1, 0]).tolist() == torch.tensor([1, 0], dtype=dtype).tolist()
    assert torch.ones(2, device="mlu").is_mlu and torch.ones(2).mlu().device.type == "mlu"
    with pytest.raises(RuntimeError, match="mlu tensor type"):
        cls(2, device="cpu")


# ---- the converter on constructs it must and must not touch ----

def convert(source):
    from torch_mlu.utils.gpu2mlu import convert_source
    return convert_source(source)


def test_converter_changes_only_proven_device_references():
    source = '''import torch  # uses cuda
msg = "cuda is fast"  # a "cuda" in a comment
x = torch.ones(1).to("cuda")
print(f"on cuda:{0}", f"cuda:{rank}")
name = "CUDA_VISIBLE_DEVICES"
s = 'nccl'
'''
    new, changed, unconverted = convert(source)
    assert new.splitlines() == ['import torch  # uses cuda', 'msg = "cuda is fast"  # a "cuda" in a comment',
                                'x = torch.ones(1).to("mlu")', 'print(f"on cuda:{0}", f"mlu:{rank}")',
                                'name = "MLU_VISIBLE_DEVICES"', "s = 'cncl'"]
    assert [line for line, _, _ in changed] == [3, 4, 5, 6]
    assert (2, "'cuda is fast'") in {(line, what) for line, what, _ in unconverted}


def test_converter_imports_scalers_and_unconvertible_constructs():
    source = '''from torch.cuda import nccl, CUDAGraph as G
from torch.amp import GradScaler as GS
import numba.cuda
from torch.utils.cpp_extension import CUDAExtension
s = GS(init_scale=2.0)
t = torch.amp.GradScaler(device="cuda")
torch.cuda.set_sync_debug_mode(1)
c = torch.cuda.get_device_capability()
'''
    new, _, unconverted = convert(source)
    lines = new.splitlines()
    assert lines[0] == "from torch.mlu import cncl as nccl, MLUGraph as G"
    assert lines[4] == 's = GS("mlu", init_scale=2.0)' and lines[5] == 't = torch.amp.GradScaler(device="mlu")'
    assert lines[6] == "torch.cuda.set_sync_debug_mode(1)" and lines[7] == "c = torch.mlu.get_device_capability()"
    what = {w for _, w, _ in unconverted}
    assert {"import numba.cuda", "CUDAExtension", "torch.cuda.set_sync_debug_mode",
            "torch.cuda.get_device_capability"} <= what


def test_importing_the_converter_leaves_torch_unpatched(python):
    # gpu2mlu reads the CUDA environment names without importing gpu_migration, whose import applies it.
    result = python("import sys, torch, torch_mlu, torch_mlu.utils.gpu2mlu\n"
                    "print(torch.cuda.is_available(), 'torch_mlu.utils.gpu_migration' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_converter_on_a_tree_and_a_file(tmp_path):
    from torch_mlu.utils.gpu2mlu import main
    tree = tmp_path / "proj"
    (tree / "kernels").mkdir(parents=True)
    (tree / "train.py").write_text('import torch\nx = torch.ones(1, device="cuda")\n')
    (tree / "kernels" / "add.cu").write_text("__global__ void add() {}\n")
    (tree / "broken.py").write_text("x = (\n")
    (tree / "data.txt").write_text("cuda\n")
    assert main(["-i", str(tree)]) == 0
    out = tmp_path / "proj_mlu"
    assert (out / "train.py").read_text() == 'import torch\nx = torch.ones(1, device="mlu")\n'
    assert (out / "kernels" / "add.cu").exists() and (out / "data.txt").read_text() == "cuda\n"
    report = (out / "report.md").read_text()
    assert "CUDA source file" in report and "not valid Python" in report
    with pytest.raises(SystemExit):  # an existing output is never overwritten
        main(["-i", str(tree)])
    assert main(["-i", str(tree / "train.py")]) == 0
    assert (tree / "train_mlu.py").exists() and (tree / "train_mlu.report.md").exists()


def test_console_script(tmp_path):
    script = pathlib.Path(sys.executable).parent / "torch_mlu_convert"
    if not script.exists():
        pytest.skip("torch_mlu_convert is installed by pip install (make build reinstalls on pyproject changes)")
    source = tmp_path / "t.py"
    source.write_text('import torch\nprint(torch.cuda.is_available())\n')
    result = subprocess.run([str(script), "-i", str(source)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "1 line(s) changed" in result.stdout
    assert (tmp_path / "t_mlu.py").read_text() == 'import torch\nprint(torch.mlu.is_available())\n'
