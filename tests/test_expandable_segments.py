"""Expandable segments (expandable_segments:True; Note [Expandable segments] in MLUCachingAllocator.cpp).

Each test turns the setting on with torch.mlu.memory._set_allocator_settings
and puts back the process's own setting (CI runs the memory suite a second
time with PYTORCH_MLU_ALLOC_CONF=expandable_segments:True).
"""
import os
import warnings

import pytest
import torch

import torch_mlu
from torch_mlu.mlu import memory

MiB = 1 << 20
PAGE = 512 << 10  # what an expandable segment maps at a time


def set_settings(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        memory._set_allocator_settings(text)


@pytest.fixture
def expandable():
    """Expandable segments on, and a stream of the test's own: its segments start empty whatever other
    tests left cached or alive on the usual streams."""
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    set_settings("expandable_segments:True")
    with torch.mlu.stream(torch.mlu.Stream()):
        yield
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    on = "expandable_segments:True" in os.environ.get("PYTORCH_MLU_ALLOC_CONF", "")
    set_settings(f"expandable_segments:{on}")


def stats():
    return torch.mlu.memory_stats()


def segments():
    return [s for s in memory._snapshot()["segments"] if s["device"] == 0]


def test_reserved_memory_grows_by_pages_not_segments(expandable):
    base = torch.mlu.memory_reserved()
    a = torch.empty(3 * MiB - 1000, dtype=torch.uint8, device="mlu")
    assert torch.mlu.memory_reserved() - base == 3 * MiB  # six pages, not a 20 MiB segment
    b = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    assert torch.mlu.memory_reserved() - base == 6 * MiB  # a's 512-byte free tail, then six more pages
    assert b.data_ptr() == a.data_ptr() + 3 * MiB - 512  # contiguous (after a's 512-byte rounding)
    ours = [s for s in segments() if s["address"] <= a.data_ptr() < s["address"] + s["total_size"]]
    assert len(ours) == 1 and ours[0]["is_expandable"] and ours[0]["segment_type"] == "large"
    assert ours[0]["total_size"] == 6 * MiB
    del a, b


def test_freed_blocks_merge_across_page_boundaries(expandable):
    a = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    b = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    start, reserved = a.data_ptr(), torch.mlu.memory_reserved()
    del a, b
    c = torch.empty(6 * MiB, dtype=torch.uint8, device="mlu")
    assert c.data_ptr() == start and torch.mlu.memory_reserved() == reserved  # no new memory
    del c


def test_data_survives_growth_and_spans_pages(expandable):
    tensors = [torch.arange(n, dtype=torch.float32) for n in (1, 300_000, 700_001, 1_500_000, 123)]
    on_device = [t.to("mlu") for t in tensors]
    doubled = [t * 2 for t in on_device]
    for t, d, dd in zip(tensors, on_device, doubled):
        torch.testing.assert_close(d.cpu(), t)
        torch.testing.assert_close(dd.cpu(), t * 2)


def test_empty_cache_unmaps_free_pages_and_keeps_live_blocks(expandable):
    torch_mlu._C._mlu_resetAccumulatedMemoryStats(0)
    keep = torch.full((MiB,), 7, dtype=torch.uint8, device="mlu")
    gone = torch.empty(9 * MiB, dtype=torch.uint8, device="mlu")
    del gone
    torch.mlu.empty_cache()
    s = stats()
    assert s["num_device_free"] >= 1
    assert torch.mlu.memory_reserved() - torch.mlu.memory_allocated() < 2 * PAGE  # only partial pages stay
    assert torch.equal(keep.cpu(), torch.full((MiB,), 7, dtype=torch.uint8))
    address = keep.data_ptr()
    del keep
    torch.mlu.empty_cache()
    assert not [s for s in segments() if s["address"] <= address < s["address"] + s["total_size"]]


def test_small_requests_share_the_streams_segment(expandable):
    """Unlike CUDA's, one expandable segment per stream serves every size (Note [Expandable segments])."""
    before = stats()
    small = [torch.empty(1000, dtype=torch.uint8, device="mlu") for _ in range(10)]
    big = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    after = stats()
    assert after["reserved_bytes.small_pool.current"] == before["reserved_bytes.small_pool.current"]
    assert after["reserved_bytes.large_pool.current"] - before["reserved_bytes.large_pool.current"] == 3 * MiB + PAGE
    assert after["allocated_bytes.large_pool.current"] - before["allocated_bytes.large_pool.current"] == \
        10 * 1024 + 3 * MiB
    assert all(s["is_expandable"] for s in segments() if s["address"] <= big.data_ptr() < s["address"] +
               s["total_size"])
    del small, big


def test_streams_get_separate_segments(expandable):
    side = torch.Stream(device="mlu")
    x = torch.empty(MiB, device="mlu")
    with torch.mlu.stream(side):
        y = torch.empty(MiB, device="mlu")
    streams = {s["stream"] for s in segments() if s["is_expandable"] and s["segment_type"] == "large"}
    assert len(streams) == 2
    del x, y


def test_trace_records_maps_and_unmaps(expandable):
    memory._record_memory_history("all", clear_history=True)
    try:
        x = torch.empty(5 * MiB, dtype=torch.uint8, device="mlu")
        del x
        torch.mlu.empty_cache()
        actions = [e["action"] for e in memory._snapshot()["device_traces"][0]]
    finally:
        memory._record_memory_history(None)
    assert "segment_map" in actions and "segment_unmap" in actions
    assert "segment_alloc" not in actions


def test_turning_the_setting_off_keeps_old_blocks_but_uses_fixed_segments(expandable):
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    set_settings("expandable_segments:False")
    y = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    by_address = {s["address"]: s for s in segments()}
    owner = [s for a, s in by_address.items() if a <= y.data_ptr() < a + s["total_size"]]
    assert len(owner) == 1 and not owner[0]["is_expandable"] and owner[0]["total_size"] == 20 * MiB
    del x
    z = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")  # not from the freed expandable block
    assert not any(s["is_expandable"] for s in segments() if s["address"] <= z.data_ptr() < s["address"] +
                   s["total_size"])
    del y, z


def test_fragmentation_stays_within_a_page_per_pool(expandable):
    """A training-like pattern: the peak reserved tracks the peak allocated to within two pages per pool."""
    torch.mlu.reset_peak_memory_stats()
    weights = [torch.empty(n * 1024, dtype=torch.uint8, device="mlu") for n in (256, 1024, 512, 2048, 768, 1536)]
    for batch in (8, 24, 16, 32, 12):
        acts = [torch.empty(w.numel() // 64 * batch, dtype=torch.uint8, device="mlu") for w in weights]
        grads = [torch.empty_like(w) for w in weights]
        del acts
        _ = [torch.empty_like(g) for g in grads]
        del grads, _
    s = stats()
    assert s["reserved_bytes.all.peak"] - s["allocated_bytes.all.peak"] <= 4 * PAGE
    del weights


def test_out_of_memory_is_reported_and_the_process_goes_on(python):
    result = python(
        """
        import torch, torch_mlu
        keep = [torch.empty(8 << 20, dtype=torch.uint8, device="mlu") for _ in range(5)]
        try:
            torch.empty(40 << 20, dtype=torch.uint8, device="mlu")
            print("no error")
        except torch.OutOfMemoryError as e:
            print("oom:", str(e).splitlines()[0][:40])
        del keep
        x = torch.ones(40 << 20, dtype=torch.uint8, device="mlu")  # the unmapped retry frees enough
        print("after:", int(x.sum().item()), torch.mlu.memory_stats()["num_ooms"])
        """,
        env={"PYTORCH_MLU_ALLOC_CONF": "expandable_segments:True", "TORCH_MLU_DEVICE_MEMORY": "64M"},
    )
    assert result.returncode == 0, result.stderr
    assert "oom: MLU out of memory. Tried to allocate 40" in result.stdout
    assert f"after: {40 << 20} 1" in result.stdout


def test_graph_capture_uses_expandable_private_pools(expandable):
    static_in = torch.ones(1 << 18, device="mlu")
    g = torch.mlu.MLUGraph()
    s = torch.Stream(device="mlu")
    s.wait_stream(torch.accelerator.current_stream())
    with torch.mlu.stream(s):
        out = static_in * 2  # warm-up
        torch.mlu.synchronize()
        g.capture_begin()
        out = static_in * 3 + 1
        g.capture_end()
    torch.mlu.synchronize()
    pool = [x for x in segments() if tuple(x["segment_pool_id"]) == tuple(g.pool())]
    assert pool and all(x["is_expandable"] for x in pool)
    static_in.fill_(2)
    g.replay()
    torch.mlu.synchronize()
    assert torch.equal(out.cpu(), torch.full((1 << 18,), 7.0))
    del g, out
