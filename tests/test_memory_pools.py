"""Memory pools (torch.mlu.MemPool, use_mem_pool), pluggable allocators, allocator settings and
out-of-memory snapshots, each against torch.cuda's documented behaviour."""
import pickle
import subprocess
import threading
import warnings

import pytest
import torch
from torch.cuda import _memory_viz

import torch_mlu
from torch_mlu.mlu import memory
from torch_mlu.utils import cpp_extension

MiB = 1 << 20


def pool_segments(pool_id):
    return [s for s in memory._snapshot()["segments"] if tuple(s["segment_pool_id"]) == tuple(pool_id)]


def owner(tensor):
    found = [s for s in memory._snapshot()["segments"]
             if s["address"] <= tensor.data_ptr() < s["address"] + s["total_size"]]
    assert len(found) == 1
    return tuple(found[0]["segment_pool_id"])


# --- MemPool and use_mem_pool ---------------------------------------------------------------------

def test_mem_pool_routes_this_threads_allocations_and_counts_uses():
    pool = torch.mlu.MemPool()
    assert isinstance(pool.id, tuple) and len(pool.id) == 2 and pool.id != (0, 0)
    assert pool.allocator is None
    assert pool.use_count() == 1
    with torch.mlu.use_mem_pool(pool):
        assert pool.use_count() == 2
        inside = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
        small = torch.empty(100, device="mlu")
    assert pool.use_count() == 1
    outside = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    assert owner(inside) == pool.id and owner(small) == pool.id
    assert owner(outside) == (0, 0)
    snapshot = pool.snapshot()
    assert snapshot and all(tuple(s["segment_pool_id"]) == pool.id for s in snapshot)
    assert {b["address"] for s in snapshot for b in s["blocks"] if b["state"] == "active_allocated"} >= {
        inside.data_ptr(), small.data_ptr()}
    del inside, small, outside, pool


def test_other_threads_allocate_outside_the_pool():
    pool = torch.mlu.MemPool()
    result = {}

    def other():
        result["tensor"] = torch.empty(MiB, dtype=torch.uint8, device="mlu")  # noqa: F821  (ruff misreads the del)

    with torch.mlu.use_mem_pool(pool):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        mine = torch.empty(MiB, dtype=torch.uint8, device="mlu")
    assert owner(result["tensor"]) == (0, 0) and owner(mine) == pool.id
    del mine, result, pool


def test_freed_pool_blocks_stay_in_the_pool():
    pool = torch.mlu.MemPool()
    with torch.mlu.use_mem_pool(pool):
        x = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    address = x.data_ptr()
    del x
    y = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")  # outside: never the pool's block
    assert y.data_ptr() != address
    with torch.mlu.use_mem_pool(pool):
        z = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
    assert z.data_ptr() == address
    del y, z, pool


def test_dropping_the_pool_gives_its_memory_back():
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    before = torch.mlu.memory_reserved()
    pool = torch.mlu.MemPool()
    with torch.mlu.use_mem_pool(pool):
        x = torch.empty(30 * MiB, dtype=torch.uint8, device="mlu")
    pool_id = pool.id
    assert torch.mlu.memory_reserved() > before
    del pool
    assert pool_segments(pool_id)  # x still lives in it
    del x
    torch.mlu.empty_cache()
    assert not pool_segments(pool_id)
    assert torch.mlu.memory_reserved() == before


def test_nested_pools_route_to_the_innermost():
    outer, inner = torch.mlu.MemPool(), torch.mlu.MemPool()
    with torch.mlu.use_mem_pool(outer):
        a = torch.empty(MiB, dtype=torch.uint8, device="mlu")
        with torch.mlu.use_mem_pool(inner):
            b = torch.empty(MiB, dtype=torch.uint8, device="mlu")
        c = torch.empty(MiB, dtype=torch.uint8, device="mlu")
    assert (owner(a), owner(b), owner(c)) == (outer.id, inner.id, outer.id)
    del a, b, c, outer, inner


def test_no_split_pool_keeps_blocks_whole():
    pool = torch.mlu.MemPool(no_split=True)
    with torch.mlu.use_mem_pool(pool):
        x = torch.empty(1000, dtype=torch.uint8, device="mlu")
        y = torch.empty(1000, dtype=torch.uint8, device="mlu")
    blocks = [b for s in pool_segments(pool.id) for b in s["blocks"]]
    assert sorted(b["address"] for b in blocks) == sorted([x.data_ptr(), y.data_ptr()])  # no free remainder
    assert all(b["state"] == "active_allocated" and b["size"] >= 512 << 10 for b in blocks)  # a page or segment
    del x, y, pool


def test_graph_capture_into_a_mem_pool():
    pool = torch.mlu.MemPool()
    static_in = torch.ones(1 << 16, device="mlu")
    g = torch.mlu.MLUGraph()
    s = torch.Stream(device="mlu")
    s.wait_stream(torch.accelerator.current_stream())
    with torch.mlu.stream(s):
        torch.mlu.synchronize()
        g.capture_begin(pool=pool.id)
        out = static_in * 5
        g.capture_end()
    torch.mlu.synchronize()
    assert g.pool() == pool.id and owner(out) == pool.id
    assert pool.use_count() == 2  # the pool's own use and the graph's
    static_in.fill_(3)
    g.replay()
    torch.mlu.synchronize()
    assert torch.equal(out.cpu(), torch.full((1 << 16,), 15.0))
    del g, out
    assert pool.use_count() == 1
    del pool


def test_misuse_of_pools_is_a_clear_error():
    pool = torch.mlu.MemPool()
    with pytest.raises(RuntimeError, match="no capture or use_mem_pool allocates to pool"):
        torch_mlu._C._mlu_endAllocateToPool(0, pool.id)
    with pytest.raises(RuntimeError, match="releasePool"):
        torch_mlu._C._mlu_releasePool(0, (0, 987654321))
    with pytest.raises((RuntimeError, ValueError), match="9"):
        with torch.mlu.use_mem_pool(pool, device="mlu:9"):
            pass
    del pool
    torch.mlu.empty_cache()


def test_use_on_oom_lends_the_pools_free_blocks(python):
    result = python(
        """
        import torch, torch_mlu
        MiB = 1 << 20
        fallback, plain = torch.mlu.MemPool(use_on_oom=True), torch.mlu.MemPool()
        with torch.mlu.use_mem_pool(fallback):
            x = torch.empty(24 * MiB, dtype=torch.uint8, device="mlu")
        with torch.mlu.use_mem_pool(plain):
            y = torch.empty(24 * MiB, dtype=torch.uint8, device="mlu")
        del x, y   # both pools now cache a free 24 MiB block; the device has 16 MiB left
        z = torch.empty(22 * MiB, dtype=torch.uint8, device="mlu")
        segs = [s for s in torch.mlu.memory._snapshot()["segments"]
                if s["address"] <= z.data_ptr() < s["address"] + s["total_size"]]
        print("from fallback:", tuple(segs[0]["segment_pool_id"]) == fallback.id)
        del fallback
        """,
        env={"TORCH_MLU_DEVICE_MEMORY": "64M"},
    )
    assert result.returncode == 0, result.stderr
    assert "from fallback: True" in result.stdout


# --- pluggable allocators ----------------------------------------------------------------------------

ALLOCATOR_C = r"""
#include <stdlib.h>
#include <sys/types.h>
#include <mlu_runtime/cnrt.h>

static long live_bytes = 0;
static int allocations = 0;

void* tiny_alloc(ssize_t size, int device, cnrtQueue_t queue) {
  int current = -1;
  void* ptr = NULL;
  (void)queue;
  cnrtGetDevice(&current);
  cnrtSetDevice(device);
  if (cnrtMalloc(&ptr, (size_t)size) != cnrtSuccess) ptr = NULL;
  cnrtSetDevice(current);
  if (ptr != NULL) {
    live_bytes += size;
    allocations += 1;
  }
  return ptr;
}

void tiny_free(void* ptr, ssize_t size, int device, cnrtQueue_t queue) {
  (void)device;
  cnrtQueueSync(queue);
  cnrtFree(ptr);
  live_bytes -= size;
}

void* host_alloc(ssize_t size, int device, cnrtQueue_t queue) { return malloc((size_t)size); }
void host_free(void* ptr, ssize_t size, int device, cnrtQueue_t queue) { free(ptr); }

long tiny_live_bytes(void) { return live_bytes; }
int tiny_allocations(void) { return allocations; }
"""


@pytest.fixture(scope="module")
def allocator_library(tmp_path_factory):
    """The tiny allocator, built as a user would: cc, torch_mlu's headers, -ltorch_mlu."""
    directory = tmp_path_factory.mktemp("pluggable")
    source = directory / "tiny_alloc.c"
    source.write_text(ALLOCATOR_C)
    library = directory / "libtiny_alloc.so"
    include = [f"-I{p}" for p in cpp_extension.include_paths()]
    lib = [f"-L{p}" for p in cpp_extension.library_paths()] + [f"-Wl,-rpath,{p}" for p in cpp_extension.library_paths()]
    built = subprocess.run(["cc", "-shared", "-fPIC", "-O2", *include, str(source), *lib, "-ltorch_mlu",
                            "-o", str(library)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return str(library)


@pytest.mark.slow  # a built allocator replaces the caching one
def test_pluggable_allocator_serves_every_tensor(python, allocator_library):
    result = python(
        f"""
        import ctypes, torch, torch_mlu
        lib = ctypes.CDLL({allocator_library!r})
        allocator = torch.mlu.memory.MLUPluggableAllocator({allocator_library!r}, "tiny_alloc", "tiny_free")
        torch.mlu.memory.change_current_allocator(allocator)
        assert torch.mlu.memory._get_current_allocator().allocator() is not None
        x = torch.arange(1000, dtype=torch.float32, device="mlu")
        y = (x * 2).sum()
        print("value:", y.item(), "allocations:", lib.tiny_allocations() >= 2)
        del x, y
        torch.mlu.synchronize()
        print("live after free:", lib.tiny_live_bytes())
        try:
            torch.mlu.memory_stats()
        except RuntimeError as e:
            print("stats:", str(e).splitlines()[0])
        torch.mlu.empty_cache()  # nothing cached: a no-op
        """
    )
    assert result.returncode == 0, result.stderr
    assert "value: 999000.0 allocations: True" in result.stdout
    assert "live after free: 0" in result.stdout
    assert "stats: MLUPluggableAllocator does not yet support getDeviceStats" in result.stdout


@pytest.mark.slow  # a built allocator replaces the caching one
def test_allocator_cannot_change_after_use(python, allocator_library):
    result = python(
        f"""
        import torch, torch_mlu
        torch.ones(3, device="mlu")
        allocator = torch.mlu.memory.MLUPluggableAllocator({allocator_library!r}, "tiny_alloc", "tiny_free")
        try:
            torch.mlu.memory.change_current_allocator(allocator)
        except RuntimeError as e:
            print(str(e).splitlines()[0])
        print(torch.ones(3, device="mlu").sum().item())
        """
    )
    assert result.returncode == 0, result.stderr
    assert "Can't swap an already initialized allocator" in result.stdout
    assert "3.0" in result.stdout


@pytest.mark.slow  # a built allocator replaces the caching one
def test_pluggable_allocator_must_return_device_memory(python, allocator_library):
    result = python(
        f"""
        import torch, torch_mlu
        allocator = torch.mlu.memory.MLUPluggableAllocator({allocator_library!r}, "host_alloc", "host_free")
        torch.mlu.memory.change_current_allocator(allocator)
        try:
            torch.empty(10, device="mlu")
        except RuntimeError as e:
            print(str(e).splitlines()[0])
        """
    )
    assert result.returncode == 0, result.stderr
    assert "which is not device memory of mlu:0" in result.stdout


def test_mem_pool_with_a_pluggable_allocator(allocator_library):
    import ctypes
    lib = ctypes.CDLL(allocator_library)
    allocator = torch.mlu.memory.MLUPluggableAllocator(allocator_library, "tiny_alloc", "tiny_free")
    pool = torch.mlu.MemPool(allocator.allocator())
    assert pool.allocator is not None
    before = lib.tiny_allocations()
    with torch.mlu.use_mem_pool(pool):
        x = torch.full((MiB,), 3.0, device="mlu")
    assert lib.tiny_allocations() == before + 1 and lib.tiny_live_bytes() > 0
    assert owner(x) == pool.id
    assert torch.equal(x.cpu(), torch.full((MiB,), 3.0))
    del x, pool
    torch.mlu.synchronize()
    assert lib.tiny_live_bytes() == 0  # the pool's segments went back through tiny_free


# --- settings --------------------------------------------------------------------------------------

def test_allocator_settings_change_later_allocations():
    assert torch.mlu.get_allocator_backend() == "native"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(RuntimeError, match="unknown setting 'bogus'"):
            memory._set_allocator_settings("bogus:1")
        with pytest.raises(RuntimeError, match="max_split_size_mb must be greater than 20"):
            memory._set_allocator_settings("max_split_size_mb:4")
        memory._set_allocator_settings("max_split_size_mb:64")
        try:
            assert torch.mlu.memory_stats()["max_split_size"] == 64 * MiB
        finally:
            memory._set_allocator_settings("max_split_size_mb:18446744073709")
    assert torch.mlu.memory_stats()["max_split_size"] > 64 * MiB


def test_device_generic_settings_reach_mlu():
    import os
    previous = "expandable_segments:True" in os.environ.get("PYTORCH_MLU_ALLOC_CONF", "")
    torch.mlu.empty_cache()
    torch._C._accelerator_setAllocatorSettings("expandable_segments:True")
    try:
        x = torch.empty(3 * MiB, dtype=torch.uint8, device="mlu")
        segments = [s for s in memory._snapshot()["segments"]
                    if s["address"] <= x.data_ptr() < s["address"] + s["total_size"]]
        assert segments[0]["is_expandable"]
        del x
    finally:
        torch._C._accelerator_setAllocatorSettings(f"expandable_segments:{previous}")
        torch.mlu.empty_cache()


# --- out-of-memory diagnostics --------------------------------------------------------------------

OOM_SCRIPT = """
import pickle, torch, torch_mlu
from torch.cuda import _memory_viz
torch.mlu.memory._record_memory_history("all")
seen = []
torch.mlu.memory._attach_out_of_memory_observer(lambda *args: seen.append(args))
{setup}
keep = torch.empty(20 << 20, dtype=torch.uint8, device="mlu")
try:
    torch.empty(40 << 20, dtype=torch.uint8, device="mlu")
except torch.OutOfMemoryError as e:
    print("message:", str(e))
device, requested, total, free = seen[0]
print("observer:", device, requested == 40 << 20, total == 48 << 20, free < 40 << 20)
print("goes on:", torch.ones(4, device="mlu").sum().item())
"""


def test_out_of_memory_dumps_a_snapshot_that_memory_viz_opens(python, tmp_path):
    path = tmp_path / "oom_{pid}.pickle"
    result = python(OOM_SCRIPT.format(setup=f"torch.mlu.memory._dump_snapshot_on_oom({str(path)!r})"),
                    env={"TORCH_MLU_DEVICE_MEMORY": "48M"})
    assert result.returncode == 0, result.stderr
    written = list(tmp_path.glob("oom_*.pickle"))
    assert len(written) == 1
    assert f"A memory snapshot was written to {written[0]}" in result.stdout
    assert "observer: 0 True True True" in result.stdout and "goes on: 4.0" in result.stdout
    with open(written[0], "rb") as f:
        snapshot = pickle.load(f)
    actions = [e["action"] for e in snapshot["device_traces"][0]]
    assert "oom" in actions and "alloc" in actions
    assert any(b["size"] >= 20 << 20 and b["frames"] for s in snapshot["segments"] for b in s["blocks"])
    for plot in (_memory_viz.segment_plot(snapshot), _memory_viz.trace_plot(snapshot)):
        assert "<!DOCTYPE html>" in plot and len(plot) > 1000
    assert f"segments: {len(snapshot['segments'])}" in _memory_viz.segsum(snapshot)


def test_out_of_memory_snapshot_from_the_environment(python, tmp_path):
    path = tmp_path / "env_oom.pickle"
    result = python(OOM_SCRIPT.format(setup=""),
                    env={"TORCH_MLU_DEVICE_MEMORY": "48M", "TORCH_MLU_OOM_SNAPSHOT": str(path)})
    assert result.returncode == 0, result.stderr
    assert path.is_file() and f"A memory snapshot was written to {path}" in result.stdout
