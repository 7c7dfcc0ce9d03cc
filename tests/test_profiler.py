"""torch.profiler on mlu: device rows, device time per op, traces, memory, the legacy stubs, cnpx.

The device rows come from our Kineto plugin (csrc/profiler/MLUActivityProfiler.cpp, Note [mlu rows in Kineto]).
"""

import json
import os
import sys

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torch_mlu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from gpt import GPT, GPTConfig  # noqa: E402

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def events(prof):
    # torch.profiler.profile has events(); the legacy torch.autograd.profiler.profile has function_events.
    return prof.events() if hasattr(prof, "events") else prof.function_events


def device_events(prof):
    return [e for e in events(prof) if e.device_type == DeviceType.PrivateUse1]


def named(prof, name):
    return [e for e in events(prof) if e.name == name and e.device_type == DeviceType.CPU]


def test_mlu_activity_alias_and_supported():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()
    assert ProfilerActivity.MLU == ProfilerActivity.PrivateUse1


def test_every_kernel_is_a_device_event_linked_to_its_op():
    x = torch.randn(64, 64, device="mlu")
    with profile(activities=ACTIVITIES) as prof:
        y = torch.mm(x, x)
        z = y.add(1)
        torch.mlu.synchronize()
    kernels = device_events(prof)
    names = [k.name for k in kernels]
    assert "mm" in names and "Add" in names, names
    assert all(k.time_range.end > k.time_range.start for k in kernels)
    assert all(k.device_index == 0 for k in kernels)
    (mm,) = named(prof, "aten::mm")
    assert mm.self_device_time_total > 0
    assert [k.name for k in mm.kernels] == ["mm"]
    (add,) = named(prof, "aten::add")
    assert add.self_device_time_total > 0
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::mm"].self_device_time_total > 0
    assert "Self MLU" in prof.key_averages().table(sort_by="self_device_time_total")
    torch.testing.assert_close(z.cpu(), (x.cpu() @ x.cpu()) + 1, rtol=1.3e-6 * 64, atol=1e-4)


def test_kernel_names_in_tables_are_the_kernels_names():
    """Profiler tables demangle every name (torch.autograd.profiler_util.StringTable): a kernel named "Gt" read as
    "unsigned short _Imaginary". The comparisons' kernels, and a training step's, must read as themselves."""
    x = torch.randn(64, device="mlu", dtype=torch.bfloat16)
    model = GPT(GPTConfig(vocab_size=32, block_size=8, n_layer=1, n_head=2, n_embd=16)).to("mlu")
    ids = torch.randint(0, 32, (2, 8), device="mlu")
    with profile(activities=ACTIVITIES) as prof:
        for compare in (torch.gt, torch.ge, torch.lt, torch.le, torch.eq, torch.ne):
            compare(x, 0)
        model(ids, ids)[1].backward()
        torch.mlu.synchronize()
    names = {k.name for k in device_events(prof)}
    assert {"Greater", "GreaterEqual", "Less", "LessEqual"} <= names, names
    garbled = {n: torch._C._demangle(n) for n in names if len(n) > 1 and torch._C._demangle(n) != n}
    assert not garbled, garbled
    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=-1)
    assert "_Imaginary" not in table and "GreaterEqual" in table


def test_two_streams_give_two_rows():
    x = torch.randn(32, 32, device="mlu")
    side = torch.mlu.Stream()
    with profile(activities=ACTIVITIES) as prof:
        a = x * 2
        with torch.mlu.stream(side):
            b = x * 3
        torch.mlu.synchronize()
    rows = {k.device_resource_id for k in device_events(prof) if k.name == "Mul"}
    assert rows == {0, side.stream_id}, rows
    del a, b


def test_copies_are_device_events():
    with profile(activities=ACTIVITIES) as prof:
        x = torch.arange(1000.0).to("mlu")
        back = x.cpu()
    assert torch.equal(back, torch.arange(1000.0))
    assert any(k.name == "memcpy" for k in device_events(prof))


def test_chrome_trace_has_kernel_rows_and_flows(tmp_path):
    x = torch.randn(64, 64, device="mlu")
    with profile(activities=ACTIVITIES) as prof:
        torch.mm(x, x).relu()
        torch.mlu.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert {"mm", "ClampMin"} <= {k["name"] for k in kernels}
    assert all(k["dur"] > 0 for k in kernels)
    flow_ends = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "f"}
    flow_starts = {e["id"] for e in events if e.get("cat") == "ac2g" and e["ph"] == "s"}
    assert len(flow_ends) >= 2 and flow_ends == flow_starts
    launches = [e for e in events if e.get("name") == "mluLaunchKernel"]
    ops = {e["args"]["External id"] for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    assert launches and all(e["args"]["External id"] in ops for e in launches)
    assert {e["args"]["correlation"] for e in launches} == flow_starts
    labels = [e["args"].get("labels") for e in events if e.get("ph") == "M" and e.get("name") == "process_labels"]
    assert "MLU 0" in labels


def test_profile_memory_fills_device_memory_columns():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        x = torch.empty(1 << 18, device="mlu")
        del x
    (empty,) = named(prof, "aten::empty")
    assert empty.device_memory_usage == 1 << 20
    assert "MLU Mem" in prof.key_averages().table(sort_by="self_device_memory_usage")


def test_legacy_autograd_profiler_uses_the_event_stubs():
    x = torch.randn(128, 128, device="mlu")
    with torch.autograd.profiler.profile(use_device="mlu") as prof:
        torch.mm(x, x)
        torch.mlu.synchronize()
    (mm,) = named(prof, "aten::mm")
    assert mm.self_device_time_total > 0
    assert not device_events(prof)  # no kernel rows: the marker-only state does not count kernels twice


def test_cnpx_ranges_and_marks_annotate_device_rows(tmp_path):
    from torch.mlu import cnpx

    assert cnpx.range_pop() == -1
    assert cnpx.range_push("outside") == 0 and cnpx.range_pop() == 0
    x = torch.randn(32, 32, device="mlu")
    with profile(activities=ACTIVITIES) as prof:
        with cnpx.range("step {}", 3):
            y = x + 1
            cnpx.mark("checkpoint")
            y = y * 2
        handle = cnpx.range_start("across")
        cnpx.range_end(handle)
        torch.mlu.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    device_notes = {e["name"]: e for e in events if e.get("cat") == "gpu_user_annotation"}
    assert {"step 3", "checkpoint"} <= set(device_notes), device_notes
    assert device_notes["step 3"]["dur"] > 0
    host_notes = {e["name"] for e in events if e.get("cat") == "user_annotation"}
    assert {"step 3", "across"} <= host_notes
    with pytest.raises(TypeError, match="msg must be a str"):
        cnpx.range_push(3)


def test_cpu_fallback_ops_are_named_in_the_trace():
    x = torch.ones(3, device="mlu")
    with profile(activities=ACTIVITIES) as prof:
        y = torch.histc(x)  # no mlu kernel (tests/test_fallback.py): runs on the CPU fallback
    torch.testing.assert_close(y.cpu(), torch.histc(torch.ones(3)))
    assert any(e.name == "mlu_cpu_fallback: aten::histc" for e in events(prof))


def test_gpt_mini_training_step_profile_is_complete(tmp_path):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=48, block_size=16, n_layer=2, n_head=2, n_embd=32)).to("mlu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 48, (2, 16), device="mlu")
    with profile(activities=ACTIVITIES, schedule=torch.profiler.schedule(wait=0, warmup=1, active=1), acc_events=True,
                 on_trace_ready=torch.profiler.tensorboard_trace_handler(str(tmp_path))) as prof:
        for _ in range(2):
            loss = model(idx, idx)[1]
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    kernels = device_events(prof)
    assert len(kernels) > 50
    correlated = {k.linked_correlation_id for k in kernels}
    assert 0 not in correlated  # every kernel of the step belongs to an op
    ops = {e.id for e in events(prof) if e.device_type == DeviceType.CPU}
    assert correlated <= ops
    (trace,) = list(tmp_path.glob("*.pt.trace.json"))
    tb = pytest.importorskip("torch_tb_profiler.profiler.data")
    data = tb.RunProfileData.from_json("worker0", "span0", json.loads(trace.read_text()))
    assert data.has_kernel


def test_record_shapes_stacks_and_record_function_as_on_cuda():
    x = torch.randn(8, 16, device="mlu")
    w = torch.randn(16, 4, device="mlu")
    # Stock 2.13 sometimes garbles a Python frame's name in the first with_stack session of a process (CPU-only
    # runs too: about 1 in 4 fresh processes raise UnicodeDecodeError from events()); later sessions are clean.
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as warm_up:
        torch.mm(x, w)
    try:
        warm_up.events()
    except UnicodeDecodeError:
        pass
    with profile(activities=ACTIVITIES, record_shapes=True, with_stack=True) as prof:
        with torch.profiler.record_function("my_block"):
            y = torch.mm(x, w)
        torch.mlu.synchronize()
    (mm,) = named(prof, "aten::mm")
    assert mm.input_shapes == [[8, 16], [16, 4]]
    # with_stack records the Python frames as events (2.13 leaves FunctionEvent.stack empty, CPU alike).
    frames = [e for e in events(prof) if "test_record_shapes_stacks" in e.name]
    assert frames and frames[0].time_range.start <= mm.time_range.start, [e.name for e in events(prof)][:20]
    (block,) = named(prof, "my_block")
    # The range encloses the op, and the op's kernel ran on the device.
    assert block.time_range.start <= mm.time_range.start and mm.time_range.end <= block.time_range.end
    assert mm.self_device_time_total > 0
    by_shape = [(a.key, a.input_shapes) for a in prof.key_averages(group_by_input_shape=True)]
    assert ("aten::mm", [[8, 16], [16, 4]]) in by_shape
    torch.testing.assert_close(y.cpu(), x.cpu() @ w.cpu())
