"""Memory history and snapshots, read by PyTorch's own memory tools."""
import pickle

import torch
from torch.cuda import _memory_viz

from torch_mlu.mlu import memory
from conftest import EXPANDABLE_SEGMENTS


def _allocate_here():
    return torch.empty(3 << 20, dtype=torch.uint8, device="mlu")


def test_snapshot_segments_and_blocks_match_the_allocator():
    torch.mlu.empty_cache()
    keep = torch.empty(1000, dtype=torch.uint8, device="mlu")
    snap = memory._snapshot()
    assert set(snap) >= {"segments", "device_traces", "allocator_settings"}
    segments = [s for s in snap["segments"] if s["device"] == 0]
    assert sum(s["total_size"] for s in segments) == torch.mlu.memory_reserved(0)
    assert sum(s["allocated_size"] for s in segments) == torch.mlu.memory_allocated(0)
    ours = [b for s in segments for b in s["blocks"] if b["address"] == keep.data_ptr()]
    assert len(ours) == 1 and ours[0]["state"] == "active_allocated" and ours[0]["requested_size"] == 1000
    for s in segments:
        assert s["segment_type"] in ("small", "large")
        assert sum(b["size"] for b in s["blocks"]) == s["total_size"]


def test_history_records_stack_traces_and_events():
    torch.mlu.empty_cache()
    memory._record_memory_history(enabled="all", context="all", stacks="python", clear_history=True)
    try:
        x = _allocate_here()
        address = x.data_ptr()
        del x
        y = _allocate_here()
        snap = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
    block = [b for s in snap["segments"] for b in s["blocks"] if b["address"] == y.data_ptr()][0]
    names = [f["name"] for f in block["frames"]]
    assert "_allocate_here" in names and any(f["filename"].endswith("test_memory_history.py") for f in block["frames"])
    actions = [(e["action"], e["addr"]) for e in snap["device_traces"][0] if e["action"] != "oom"]
    assert ("segment_map" if EXPANDABLE_SEGMENTS else "segment_alloc", address) in actions
    assert actions.index(("alloc", address)) < actions.index(("free_requested", address)) < \
        actions.index(("free_completed", address))
    alloc = [e for e in snap["device_traces"][0] if e["action"] == "alloc"][0]
    assert alloc["size"] == 3 << 20 and alloc["stream"] == 0 and alloc["time_us"] > 0
    assert "_allocate_here" in [f["name"] for f in alloc["frames"]]


def test_history_ring_keeps_the_last_entries():
    memory._record_memory_history(enabled="all", context=None, max_entries=5, clear_history=True)
    try:
        for _ in range(10):
            torch.empty(100, device="mlu")
        trace = memory._snapshot()["device_traces"][0]
    finally:
        memory._record_memory_history(enabled=None)
    assert len(trace) == 5
    assert trace[-1]["action"] == "free_completed"
    assert all(e["frames"] == [] for e in trace)


def test_memory_viz_reads_an_mlu_snapshot(tmp_path):
    memory._record_memory_history(enabled="all", stacks="python", clear_history=True)
    try:
        a = _allocate_here()
        b = torch.empty(100, device="mlu")
        del a
        snap = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
    html = _memory_viz.trace_plot(snap)
    assert html.startswith("<!DOCTYPE html>") or "<html" in html
    assert "Active Memory Timeline" in html
    assert "Allocator State History" in _memory_viz.segment_plot(snap)
    summary = _memory_viz.segsum(snap)
    assert "total_reserved" in summary
    trace_text = _memory_viz.trace(snap)
    assert "del a # 3.0MiB" in trace_text and "free completed" in trace_text
    path = tmp_path / "snapshot.pickle"
    memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        loaded = pickle.load(f)
    assert loaded["segments"] and isinstance(loaded["device_traces"], list)
    del b


def test_oom_is_traced(python):
    result = python(
        """
        import torch, torch_mlu
        from torch_mlu.mlu import memory
        memory._record_memory_history(enabled="all", context=None)
        try:
            torch.empty(1 << 30, dtype=torch.uint8, device="mlu")
        except torch.OutOfMemoryError:
            pass
        oom = [e for e in memory._snapshot()["device_traces"][0] if e["action"] == "oom"]
        print(len(oom), oom[0]["size"], oom[0]["device_free"] > 0)
        """,
        env={"TORCH_MLU_DEVICE_MEMORY": "256M"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", str(1 << 30), "True"]


def test_bad_arguments_are_clear_errors():
    import pytest

    with pytest.raises(RuntimeError, match="enabled must be None, 'state' or 'all'"):
        memory._record_memory_history(enabled="sometimes")
    with pytest.raises(RuntimeError, match="stacks must be 'python' or 'all'"):
        memory._record_memory_history(enabled="all", stacks="cpp")
