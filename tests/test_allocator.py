"""The caching allocator's stream semantics, configuration, and pinned memory."""
import textwrap

import pytest
import torch

import torch_mlu
from conftest import EXPANDABLE_SEGMENTS, fixed_segments_only


def stats(device=0):
    return torch_mlu._C._mlu_memoryStats(device)


def test_freed_block_is_reused_on_the_same_stream():
    torch.mlu.synchronize()
    x = torch.empty(4096, device="mlu")
    ptr = x.data_ptr()
    del x
    y = torch.empty(4096, device="mlu")
    assert y.data_ptr() == ptr  # cached and reused, no new segment


# With expandable segments the freed block's pages may be unmapped (once the device has finished with them)
# and their addresses reserved again for the other stream: safe, but not this test's point.
@fixed_segments_only
def test_block_is_not_reused_on_another_stream():
    side = torch.Stream(device="mlu")
    x = torch.empty(4096, device="mlu")
    ptr = x.data_ptr()
    del x
    default = torch.accelerator.current_stream()
    torch.accelerator.set_stream(side)
    try:
        y = torch.empty(4096, device="mlu")
    finally:
        torch.accelerator.set_stream(default)
    assert y.data_ptr() != ptr  # blocks belong to their allocation stream


def test_record_stream_delays_reuse_until_the_other_stream_passes():
    """Without record_stream the side stream's pending read would see a reused block."""
    side = torch.Stream(device="mlu")
    default = torch.accelerator.current_stream()
    x = torch.full((1 << 16,), 1.0, device="mlu")
    ptr = x.data_ptr()
    result = torch.empty(1 << 16, device="mlu")
    torch.accelerator.set_stream(side)
    try:
        side.wait_stream(default)
        gate = torch_mlu._C._StreamGate()  # holds the side stream
        result.copy_(x)                     # pending read of x on the side stream
    finally:
        torch.accelerator.set_stream(default)
    x.record_stream(side)
    del x
    y = torch.empty(1 << 16, device="mlu")
    assert y.data_ptr() != ptr  # the block waits for the side stream's event
    y.fill_(-5.0)
    gate.open()
    torch.mlu.synchronize()
    assert torch.equal(result.cpu(), torch.ones(1 << 16))
    del y
    z = torch.empty(1 << 16, device="mlu")  # now the event completed: the block is free again
    assert z.data_ptr() == ptr


def test_stats_move_by_exact_rounded_amounts():
    torch_mlu._C._mlu_emptyCache()
    before = stats()
    x = torch.empty(1000, dtype=torch.uint8, device="mlu")  # rounds to 1024 bytes, small pool
    after = stats()
    assert after["allocated_bytes"]["all"]["current"] - before["allocated_bytes"]["all"]["current"] == 1024
    pool = "large_pool" if EXPANDABLE_SEGMENTS else "small_pool"  # expandable: one segment serves every size
    assert after["allocated_bytes"][pool]["current"] - before["allocated_bytes"][pool]["current"] == 1024
    assert after["requested_bytes"]["all"]["current"] - before["requested_bytes"]["all"]["current"] == 1000
    assert after["allocation"]["all"]["current"] - before["allocation"]["all"]["current"] == 1
    del x
    back = stats()
    assert back["allocated_bytes"]["all"]["current"] == before["allocated_bytes"]["all"]["current"]
    assert back["requested_bytes"]["all"]["current"] == before["requested_bytes"]["all"]["current"]


# The tests that count segments run in an interpreter of their own: in the suite's worker, earlier tests' live
# blocks (module fixtures, Dynamo's caches) hold segments whose free space would take the allocations counted here.
def _in_fresh_interpreter(python, body):
    result = python("import torch, torch_mlu\nstats = lambda: torch_mlu._C._mlu_memoryStats(0)\n" +
                    textwrap.dedent(body) + "\nprint('ok')")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


@fixed_segments_only
def test_segment_sizes(python):
    _in_fresh_interpreter(python, """
        torch.ones(1, device="mlu")
        torch_mlu._C._mlu_emptyCache()
        before = stats()["reserved_bytes"]
        a = torch.empty(3 << 20, dtype=torch.uint8, device="mlu")   # 3 MiB: a 20 MiB segment
        after_a = stats()["reserved_bytes"]
        assert after_a["large_pool"]["current"] - before["large_pool"]["current"] == 20 << 20
        b = torch.empty(25 << 20, dtype=torch.uint8, device="mlu")  # 25 MiB: its own segment, rounded to 26 MiB
        after_b = stats()["reserved_bytes"]
        assert after_b["large_pool"]["current"] - after_a["large_pool"]["current"] == 26 << 20
        d = torch.empty(11 << 20, dtype=torch.uint8, device="mlu")  # fits in the rest of a's segment
        assert stats()["reserved_bytes"]["large_pool"]["current"] == after_b["large_pool"]["current"]
        c = torch.empty(100, dtype=torch.uint8, device="mlu")       # small: a 2 MiB segment
        after_c = stats()["reserved_bytes"]
        assert after_c["small_pool"]["current"] - before["small_pool"]["current"] == 2 << 20, after_c
        del a, b, c, d
        torch_mlu._C._mlu_emptyCache()
        assert stats()["reserved_bytes"]["all"]["current"] == before["all"]["current"]
    """)


@fixed_segments_only
def test_split_blocks_merge_back(python):
    _in_fresh_interpreter(python, """
        a = torch.empty(3 << 20, dtype=torch.uint8, device="mlu")
        b = torch.empty(3 << 20, dtype=torch.uint8, device="mlu")  # from the rest of a's segment
        assert b.data_ptr() == a.data_ptr() + (3 << 20)
        assert stats()["segment"]["large_pool"]["current"] == 1
        del a, b
        assert stats()["inactive_split"]["all"]["current"] == 0  # merged into one free segment again
        c = torch.empty(18 << 20, dtype=torch.uint8, device="mlu")
        assert stats()["segment"]["large_pool"]["current"] == 1
    """)


@pytest.mark.slow  # its interpreter sets the allocator's mode itself
@pytest.mark.parametrize("conf, message", [
    ("max_split_size_mb:abc", "max_split_size_mb expects a number"),
    ("max_split_size_mb:4", "max_split_size_mb must be greater than 20"),
    ("bogus_key:1", "unknown setting 'bogus_key'"),
    ("garbage_collection_threshold:1.5", "garbage_collection_threshold must be between 0 and 1"),
    ("roundup_power2_divisions:3", "roundup_power2_divisions must be a power of 2"),
    ("expandable_segments:maybe", "expandable_segments expects True or False"),
])
def test_malformed_alloc_conf_names_the_key(python, conf, message):
    result = python(
        """
        import torch, torch_mlu
        try:
            torch.empty(10, device="mlu")
            print("no error")
        except (RuntimeError, NotImplementedError) as e:
            print(str(e).splitlines()[0])
        print(torch.zeros(1).sum().item())  # the process goes on
        """,
        env={"PYTORCH_MLU_ALLOC_CONF": conf},
    )
    assert result.returncode == 0, result.stderr
    assert message in result.stdout
    assert "PYTORCH_MLU_ALLOC_CONF" in result.stdout


@fixed_segments_only  # PYTORCH_MLU_ALLOC_CONF, set, would win
def test_cuda_alloc_conf_is_the_fallback(python):
    result = python(
        "import torch, torch_mlu\n"
        "torch.empty(10, device='mlu')\n"
        "print(torch_mlu._C._mlu_memoryStats(0)['max_split_size'])",
        env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(64 << 20)


@pytest.mark.slow  # its interpreter sets the allocator's mode itself
def test_max_split_size_and_roundup(python):
    result = python(
        """
        import torch, torch_mlu
        s = lambda: torch_mlu._C._mlu_memoryStats(0)
        x = torch.empty(40 << 20, dtype=torch.uint8, device="mlu")   # oversize (>= 32 MiB)
        print(s()["oversize_allocations"]["current"], s()["oversize_segments"]["current"])
        y = torch.empty(4200, dtype=torch.uint8, device="mlu")       # 4200 -> 5120 with 4 divisions (4608 without)
        print(s()["allocated_bytes"]["all"]["current"] - (40 << 20))
        """,
        env={"PYTORCH_MLU_ALLOC_CONF": "max_split_size_mb:32,roundup_power2_divisions:4"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1", "5120"]


def test_no_caching_returns_memory_at_once(python):
    result = python(
        """
        import torch, torch_mlu
        s = lambda: torch_mlu._C._mlu_memoryStats(0)["reserved_bytes"]["all"]["current"]
        x = torch.empty(1000, dtype=torch.uint8, device="mlu")
        print(s())
        del x
        print(s())
        """,
        env={"PYTORCH_NO_MLU_MEMORY_CACHING": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1024", "0"]


@pytest.mark.slow  # its interpreter sets the allocator's mode itself
def test_garbage_collection_threshold_reclaims_cache(python):
    result = python(
        """
        import torch, torch_mlu
        s = lambda: torch_mlu._C._mlu_memoryStats(0)
        for i in range(20):  # each step caches a differently sized 20+ MiB segment
            t = torch.empty((20 + 2 * i) << 20, dtype=torch.uint8, device="mlu")
            del t
        print(s()["reserved_bytes"]["all"]["current"] <= 0.5 * (256 << 20) + (60 << 20))
        """,
        env={"PYTORCH_MLU_ALLOC_CONF": "garbage_collection_threshold:0.5", "TORCH_MLU_DEVICE_MEMORY": "256M"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_pinned_block_not_reused_before_async_copy_finished():
    src = torch.full((1 << 16,), 3.0).pin_memory()
    ptr = src.data_ptr()
    dst = torch.empty(1 << 16, device="mlu")
    gate = torch_mlu._C._StreamGate()
    dst.copy_(src, non_blocking=True)  # queued behind the gate
    del src
    other = torch.empty(1 << 16).pin_memory()
    assert other.data_ptr() != ptr  # the cached block waits for the copy's event
    other.fill_(-1.0)
    gate.open()
    torch.mlu.synchronize()
    assert torch.equal(dst.cpu(), torch.full((1 << 16,), 3.0))


def test_pinned_memory_factories_and_stats():
    torch_mlu._C._mlu_hostEmptyCache()
    x = torch.empty(1000, pin_memory=True)
    assert x.is_pinned()
    h = torch_mlu._C._mlu_hostMemoryStats()
    assert h["active_requests"]["current"] >= 1
    del x
    torch_mlu._C._mlu_hostEmptyCache()
    assert torch_mlu._C._mlu_hostMemoryStats()["allocations"]["current"] == 0


def test_dataloader_pin_memory():
    data = torch.utils.data.TensorDataset(torch.arange(64.0).view(16, 4), torch.arange(16))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    seen = 0
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        xd = x.to("mlu", non_blocking=True)
        assert torch.equal(xd.cpu(), x)
        seen += x.shape[0]
    assert seen == 16
