"""torch.mlu memory API (mirrors torch.cuda.memory) against the caching allocator's exact numbers.

The allocator follows CUDA's rules: a request is rounded up to a multiple of 512 bytes (at least 512);
blocks of at most 1 MiB come from the small pool, carved out of 2 MiB segments; larger blocks come from
the large pool, whose segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB
otherwise. Expected values below are computed from these rules and the tensor sizes.
"""
import gc
import warnings

import pytest
import torch

try:
    from conftest import EXPANDABLE_SEGMENTS, fixed_segments_only
except ImportError:  # imported by a test's subprocess, as tests.test_memory_api
    from tests.conftest import EXPANDABLE_SEGMENTS, fixed_segments_only

KiB = 1024
MiB = 1024 * KiB
MIN_BLOCK = 512
SMALL_SIZE = 1 * MiB       # largest block of the small pool
SMALL_BUFFER = 2 * MiB     # segment of the small pool
MIN_LARGE_ALLOC = 10 * MiB
LARGE_BUFFER = 20 * MiB    # segment for large requests under MIN_LARGE_ALLOC
ROUND_LARGE = 2 * MiB

# (form passed to the API, device index it means); conftest makes device 0 current
DEVICE_FORMS = [
    pytest.param(None, 0, id="none"),
    pytest.param(0, 0, id="0"),
    pytest.param(1, 1, id="1"),
    pytest.param("mlu:1", 1, id="str-mlu:1"),
    pytest.param(torch.device("mlu", 1), 1, id="device-mlu-1"),
]

STAT_NAMES = [
    "allocation", "segment", "active", "inactive_split",
    "allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
]
POOLS = ["all", "small_pool", "large_pool"]
METRICS = ["current", "peak", "allocated", "freed"]


def round_up(n, m):
    return -(-n // m) * m


def block_size(n):
    """Bytes the allocator hands out (and counts as allocated) for a request of n bytes."""
    return MIN_BLOCK if n < MIN_BLOCK else round_up(n, MIN_BLOCK)


def segment_size(n):
    """Size of the segment a request of n bytes gets when no cached block fits."""
    size = block_size(n)
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return round_up(size, ROUND_LARGE)


def pool_of(n):
    """The pool a request is served from: one per stream with expandable segments (Note [Expandable segments])."""
    return "small_pool" if block_size(n) <= SMALL_SIZE and not EXPANDABLE_SEGMENTS else "large_pool"


def cuda_format_size(size):
    """CUDA's format_size, as used in the out-of-memory message."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


@pytest.fixture(scope="module", autouse=True)
def _only_this_modules_objects_collected():
    """settle() collects garbage before each reading, and behind the objects earlier modules left in the worker
    (half a million after three compiles) each collect took 0.3-1 s, most of this module's time in CI. They are
    collected once, then frozen out of the collector while the module runs (gc.freeze): a collect scans only
    what this module made. Nothing unreachable is frozen, so no memory is held that a collect would free."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def settle(index):
    """Lets pending frees of `index` complete so the stats can be read."""
    gc.collect()
    torch.mlu.synchronize(index)


def new_bytes(n, index):
    return torch.empty(n, dtype=torch.uint8, device=f"mlu:{index}")


def large_request_beyond_cache(index):
    """A size, > 10 MiB and a multiple of 2 MiB, that no free block cached on `index` can hold.

    Whatever is free inside the reserved segments adds up to reserved - allocated at most, so a
    request above that takes a new segment of exactly its own size.
    """
    free_in_segments = torch.mlu.memory_reserved(index) - torch.mlu.memory_allocated(index)
    return round_up(max(MIN_LARGE_ALLOC + 1, free_in_segments + 1), ROUND_LARGE)


# ---------------------------------------------------------------- names


def test_namespace_mirrors_torch_cuda():
    names = [
        "memory_stats", "memory_stats_as_nested_dict", "reset_accumulated_memory_stats",
        "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "memory_cached", "max_memory_cached", "memory_summary", "empty_cache", "mem_get_info",
        "set_per_process_memory_fraction", "get_per_process_memory_fraction",
        "caching_allocator_alloc", "caching_allocator_delete",
        "host_memory_stats", "host_memory_stats_as_nested_dict",
        "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats",
    ]
    for name in names:
        assert hasattr(torch.cuda.memory, name), name  # the twin exists in torch.cuda
        assert getattr(torch.mlu, name) is getattr(torch.mlu.memory, name), name
        assert name in torch.mlu.__all__ and name in torch.mlu.memory.__all__, name
    assert "memory" in torch.mlu.__all__
    import torch_mlu.mlu.memory

    assert torch.mlu.memory is torch_mlu.mlu.memory


# ---------------------------------------------------------------- allocated / reserved


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
@pytest.mark.parametrize("n", [1, 511, 512, 1000, 4096 + 1, SMALL_SIZE, SMALL_SIZE + 1, 3 * MiB + 7, 12 * MiB + 1])
def test_memory_allocated_grows_by_the_rounded_size(form, index, n):
    settle(index)
    before = torch.mlu.memory_stats(form)
    other = 1 - index
    other_before = torch.mlu.memory_allocated(other)
    t = new_bytes(n, index)
    after = torch.mlu.memory_stats(form)
    pool = pool_of(n)
    assert torch.mlu.memory_allocated(form) == before["allocated_bytes.all.current"] + block_size(n)
    assert after[f"allocated_bytes.{pool}.current"] == before[f"allocated_bytes.{pool}.current"] + block_size(n)
    assert after["requested_bytes.all.current"] == before["requested_bytes.all.current"] + n
    assert after["allocation.all.current"] == before["allocation.all.current"] + 1
    assert after[f"allocation.{pool}.current"] == before[f"allocation.{pool}.current"] + 1
    assert torch.mlu.memory_allocated(other) == other_before  # the other device is untouched
    assert torch.mlu.memory_reserved(form) >= torch.mlu.memory_allocated(form)
    del t
    settle(index)
    assert torch.mlu.memory_allocated(form) == before["allocated_bytes.all.current"]
    assert torch.mlu.memory_stats(form)["requested_bytes.all.current"] == before["requested_bytes.all.current"]


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_memory_reserved_and_empty_cache(form, index):
    settle(index)
    torch.mlu.empty_cache()
    reserved0 = torch.mlu.memory_reserved(form)
    allocated0 = torch.mlu.memory_allocated(form)
    stats0 = torch.mlu.memory_stats(form)
    assert reserved0 >= allocated0
    size = large_request_beyond_cache(index)
    assert segment_size(size) == size

    t = new_bytes(size, index)
    stats = torch.mlu.memory_stats(form)
    assert torch.mlu.memory_reserved(form) == reserved0 + size
    assert torch.mlu.memory_allocated(form) == allocated0 + size
    assert stats["reserved_bytes.large_pool.current"] == stats0["reserved_bytes.large_pool.current"] + size
    assert stats["segment.large_pool.current"] == stats0["segment.large_pool.current"] + 1
    assert stats["num_device_alloc"] == stats0["num_device_alloc"] + 1

    del t
    settle(index)
    assert torch.mlu.memory_allocated(form) == allocated0
    assert torch.mlu.memory_reserved(form) == reserved0 + size  # the segment stays cached

    t = new_bytes(size, index)  # served from the cache: nothing new reserved
    assert torch.mlu.memory_reserved(form) == reserved0 + size
    assert torch.mlu.memory_stats(form)["num_device_alloc"] == stats0["num_device_alloc"] + 1
    del t
    settle(index)

    torch.mlu.empty_cache()
    stats = torch.mlu.memory_stats(form)
    assert torch.mlu.memory_reserved(form) == reserved0
    assert stats["segment.large_pool.current"] == stats0["segment.large_pool.current"]
    assert stats["num_device_free"] == stats0["num_device_free"] + 1


@fixed_segments_only
@pytest.mark.parametrize("index", [0, 1])
def test_exact_pool_and_segment_accounting_in_a_fresh_process(python, index):
    """From an empty device: every counter of every pool, computed from the sizes."""
    result = python(
        f"""
        import torch, torch_mlu
        from tests.test_memory_api import MiB, block_size, segment_size, SMALL_BUFFER, LARGE_BUFFER

        d = {index}
        dev = f"mlu:{{d}}"
        assert torch.mlu.memory_allocated(d) == 0 and torch.mlu.memory_reserved(d) == 0
        assert not torch.mlu.is_initialized()

        def check(**expected):
            s = torch.mlu.memory_stats(d)
            for key, value in expected.items():
                key = key.replace("__", ".")
                assert s[key] == value, (key, "expected", value, "got", s[key])
            return s

        def empty(n):
            return torch.empty(n, dtype=torch.uint8, device=dev)

        total = torch.mlu.get_device_properties(d).total_memory
        A, C, E = 1000, 12 * MiB + 1, 3 * MiB
        assert segment_size(A) == SMALL_BUFFER and segment_size(E) == LARGE_BUFFER
        C_SEG = segment_size(C)
        assert C_SEG == 14 * MiB and C_SEG - block_size(C) < E  # E cannot fit beside C

        a = empty(A)
        check(allocated_bytes__all__current=block_size(A), reserved_bytes__all__current=SMALL_BUFFER,
              reserved_bytes__small_pool__current=SMALL_BUFFER, reserved_bytes__large_pool__current=0,
              segment__small_pool__current=1, segment__large_pool__current=0, allocation__all__current=1,
              requested_bytes__all__current=A, num_device_alloc=1)
        b = empty(A)  # same small segment
        check(allocated_bytes__small_pool__current=2 * block_size(A), reserved_bytes__all__current=SMALL_BUFFER,
              segment__all__current=1, allocation__small_pool__current=2, active__all__current=2)
        c = empty(C)
        check(allocated_bytes__large_pool__current=block_size(C), reserved_bytes__large_pool__current=C_SEG,
              reserved_bytes__all__current=SMALL_BUFFER + C_SEG, segment__large_pool__current=1, num_device_alloc=2)
        e = empty(E)
        live = 2 * block_size(A) + block_size(C) + block_size(E)
        reserved = SMALL_BUFFER + C_SEG + LARGE_BUFFER
        check(allocated_bytes__all__current=live, active_bytes__all__current=live,
              reserved_bytes__all__current=reserved, reserved_bytes__large_pool__current=C_SEG + LARGE_BUFFER,
              segment__large_pool__current=2, segment__all__current=3, num_device_alloc=3,
              requested_bytes__all__current=2 * A + C + E,
              # the free tail of each of the three segments is an inactive split block
              inactive_split__all__current=3,
              inactive_split_bytes__all__current=reserved - live,
              oversize_allocations__current=0, oversize_segments__current=0)
        free, tot = torch.mlu.mem_get_info(d)
        assert (free, tot) == (total - reserved, total), (free, tot, total, reserved)
        peak = live

        del c
        torch.mlu.synchronize(d)
        check(allocated_bytes__all__current=live - block_size(C), reserved_bytes__all__current=reserved,
              allocated_bytes__all__freed=block_size(C), allocation__all__freed=1)
        c = empty(C)  # the cached segment is reused
        check(reserved_bytes__all__current=reserved, num_device_alloc=3)
        del c
        torch.mlu.synchronize(d)
        torch.mlu.empty_cache()  # releases the whole-free segment of C only
        reserved -= C_SEG
        check(reserved_bytes__all__current=reserved, segment__all__current=2, num_device_free=1)
        del a, b
        torch.mlu.synchronize(d)
        torch.mlu.empty_cache()
        reserved -= SMALL_BUFFER
        check(reserved_bytes__all__current=LARGE_BUFFER, reserved_bytes__small_pool__current=0,
              segment__small_pool__current=0, allocated_bytes__all__current=block_size(E))
        del e
        torch.mlu.synchronize(d)
        check(allocated_bytes__all__current=0, reserved_bytes__all__current=LARGE_BUFFER)
        torch.mlu.empty_cache()
        check(allocated_bytes__all__current=0, reserved_bytes__all__current=0, segment__all__current=0,
              allocation__all__current=0, active_bytes__all__current=0, requested_bytes__all__current=0,
              inactive_split_bytes__all__current=0, num_device_alloc=3, num_device_free=3,
              allocated_bytes__all__peak=peak, reserved_bytes__all__peak=SMALL_BUFFER + C_SEG + LARGE_BUFFER,
              allocation__all__allocated=5, allocation__all__freed=5,
              allocated_bytes__all__allocated=2 * block_size(A) + 2 * block_size(C) + block_size(E))
        assert torch.mlu.max_memory_allocated(d) == peak
        assert torch.mlu.max_memory_reserved(d) == SMALL_BUFFER + C_SEG + LARGE_BUFFER
        assert torch.mlu.mem_get_info(d) == (total, total)
        torch.mlu.reset_peak_memory_stats(d)
        assert torch.mlu.max_memory_allocated(d) == 0 and torch.mlu.max_memory_reserved(d) == 0
        assert torch.mlu.memory_allocated(1 - d) == 0 and torch.mlu.memory_reserved(1 - d) == 0
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------- peaks and accumulated stats


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_max_memory_allocated_and_reset_peak(form, index):
    settle(index)
    torch.mlu.reset_peak_memory_stats(form)
    base = torch.mlu.memory_allocated(form)
    assert torch.mlu.max_memory_allocated(form) == base
    assert torch.mlu.max_memory_reserved(form) == torch.mlu.memory_reserved(form)

    t1 = new_bytes(4 * MiB, index)
    t2 = new_bytes(6 * MiB + 100, index)
    peak = base + block_size(4 * MiB) + block_size(6 * MiB + 100)
    peak_reserved = torch.mlu.memory_reserved(form)
    del t1, t2
    settle(index)
    t3 = new_bytes(1000, index)  # below the peak: the peak stays
    assert torch.mlu.max_memory_allocated(form) == peak
    assert torch.mlu.memory_stats(form)["allocated_bytes.all.peak"] == peak
    assert torch.mlu.max_memory_reserved(form) >= peak_reserved
    assert torch.mlu.memory_allocated(form) == base + block_size(1000)

    torch.mlu.reset_peak_memory_stats(form)
    assert torch.mlu.max_memory_allocated(form) == base + block_size(1000)
    assert torch.mlu.max_memory_reserved(form) == torch.mlu.memory_reserved(form)
    del t3
    settle(index)
    assert torch.mlu.max_memory_allocated(form) == base + block_size(1000)


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_reset_accumulated_memory_stats(form, index):
    settle(index)
    new_bytes(5000, index)  # something accumulated
    settle(index)
    current_before = {k: v for k, v in torch.mlu.memory_stats(form).items() if k.endswith(".current")}
    torch.mlu.reset_accumulated_memory_stats(form)
    stats = torch.mlu.memory_stats(form)
    accumulated = [k for k in stats if k.endswith(".allocated") or k.endswith(".freed")]
    assert len(accumulated) == 2 * (len(STAT_NAMES) * len(POOLS) + 2)
    for key in accumulated:
        assert stats[key] == 0, key
    for key in ("num_alloc_retries", "num_ooms"):
        assert stats[key] == 0, key
    assert {k: v for k, v in stats.items() if k.endswith(".current")} == current_before

    n = 3000
    t = new_bytes(n, index)
    del t
    settle(index)
    stats = torch.mlu.memory_stats(form)
    pool = pool_of(n)
    for scope in ("all", pool):
        assert stats[f"allocation.{scope}.allocated"] == 1
        assert stats[f"allocation.{scope}.freed"] == 1
        assert stats[f"allocated_bytes.{scope}.allocated"] == block_size(n)
        assert stats[f"allocated_bytes.{scope}.freed"] == block_size(n)
        assert stats[f"requested_bytes.{scope}.allocated"] == n
        assert stats[f"requested_bytes.{scope}.freed"] == n
    other = "large_pool" if pool == "small_pool" else "small_pool"
    assert stats[f"allocation.{other}.allocated"] == 0


# ---------------------------------------------------------------- memory_stats structure


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_memory_stats_keys_follow_cuda_naming(form, index):
    t = new_bytes(1 << 16, index)
    stats = torch.mlu.memory_stats(form)
    expected = {f"{s}.{p}.{m}" for s in STAT_NAMES for p in POOLS for m in METRICS}
    expected |= {f"{s}.{m}" for s in ("oversize_allocations", "oversize_segments") for m in METRICS}
    expected |= {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                 "num_device_free", "max_split_size"}
    assert expected <= set(stats), sorted(expected - set(stats))
    assert list(stats) == sorted(stats)
    for key in ("allocated_bytes.all.current", "reserved_bytes.large_pool.peak", "num_ooms"):
        assert key in stats
    for key, value in stats.items():
        assert isinstance(value, int), key
        if key != "max_split_size":
            assert value >= 0, key
    for s in STAT_NAMES:
        for m in METRICS:
            assert stats[f"{s}.all.{m}"] >= 0
            if m in ("current", "allocated", "freed"):
                assert stats[f"{s}.all.{m}"] == stats[f"{s}.small_pool.{m}"] + stats[f"{s}.large_pool.{m}"], (s, m)

    nested = torch.mlu.memory_stats_as_nested_dict(form)
    assert set(nested) >= set(STAT_NAMES) | {"num_ooms", "oversize_allocations", "oversize_segments"}
    assert set(nested["allocated_bytes"]) == set(POOLS)
    assert set(nested["allocated_bytes"]["all"]) == set(METRICS)
    assert nested["allocated_bytes"]["all"]["current"] == torch.mlu.memory_allocated(form)
    assert nested["reserved_bytes"]["large_pool"]["peak"] == stats["reserved_bytes.large_pool.peak"]
    assert nested["num_ooms"] == stats["num_ooms"]
    del t


def test_memory_stats_default_to_the_current_device():
    t = new_bytes(3 * MiB, 1)
    with torch.mlu.device(1):
        assert torch.mlu.memory_allocated() == torch.mlu.memory_allocated(1)
        assert torch.mlu.memory_stats() == torch.mlu.memory_stats(1)
        assert torch.mlu.memory_reserved(torch.device("mlu")) == torch.mlu.memory_reserved(1)
    assert torch.mlu.memory_allocated() == torch.mlu.memory_allocated(0)
    del t


def test_functions_before_initialisation(python):
    result = python(
        """
        import torch, torch_mlu
        assert torch.mlu.memory_stats() == {} and torch.mlu.memory_stats(1) == {}
        assert torch.mlu.memory_stats_as_nested_dict() == {}
        assert torch.mlu.memory_allocated() == 0 and torch.mlu.max_memory_allocated(1) == 0
        assert torch.mlu.memory_reserved("mlu:1") == 0 and torch.mlu.max_memory_reserved() == 0
        assert torch.mlu.host_memory_stats()["allocations.current"] == 0  # host stats need no device
        torch.mlu.empty_cache()
        assert not torch.mlu.is_initialized()
        free, total = torch.mlu.mem_get_info()  # initialises, like cudaMemGetInfo
        assert torch.mlu.is_initialized()
        assert (free, total) == (torch.mlu.get_device_properties(0).total_memory,) * 2, (free, total)
        assert torch.mlu.memory_stats()["allocated_bytes.all.current"] == 0
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------- summary


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_memory_summary(form, index):
    t = new_bytes(3 * MiB, index)
    summary = torch.mlu.memory_summary(form)
    assert isinstance(summary, str)
    assert "PyTorch MLU memory summary, device ID " + str(index) in summary
    assert "MLU OOMs" in summary and "MLU reserved memory" in summary and "MLU reserved segments" in summary
    assert "CUDA" not in summary and "GPU" not in summary
    lines = summary.rstrip("\n").split("\n")
    assert lines[0] == "|" + "=" * 75 + "|" and lines[-1] == lines[0]
    assert all(line.startswith("|") and line.endswith("|") for line in lines)
    assert all(len(line) == 77 for line in lines), [line for line in lines if len(line) != 77]  # as CUDA's
    cuda_oom_line = "  {_:9} CUDA OOMs: {n:<12d} | {_:6} cudaMalloc retries: {n:<8d}  ".format(_="", n=0)
    assert lines[3].index("|", 1) == 1 + cuda_oom_line.index("|")  # the OOM/retries separator sits where CUDA's does
    assert "from large pool" in summary and "from small pool" in summary
    # the current allocated bytes, in the unit CUDA's table picks (the next one up from 768 of a unit)
    allocated, unit = torch.mlu.memory_allocated(form), 0
    while allocated >= 768 * KiB and unit < 5:
        allocated, unit = allocated // KiB, unit + 1
    cell = f"{allocated:6d} {['B  ', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'][unit]}"
    assert any(line.startswith(f"| Allocated memory      | {cell} | ") for line in lines), (cell, summary)

    short = torch.mlu.memory_summary(form, abbreviated=True)
    assert "from large pool" not in short and len(short) < len(summary)
    assert "PyTorch MLU memory summary, device ID " + str(index) in short
    del t


# ---------------------------------------------------------------- mem_get_info


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_mem_get_info(form, index):
    settle(index)
    torch.mlu.empty_cache()
    free, total = torch.mlu.mem_get_info(form)
    assert type(free) is int and type(total) is int
    assert total == torch.mlu.get_device_properties(index).total_memory
    assert free == total - torch.mlu.memory_reserved(index)

    size = large_request_beyond_cache(index)
    t = new_bytes(size, index)
    free2, total2 = torch.mlu.mem_get_info(form)
    assert total2 == total
    assert free2 == free - size
    del t
    settle(index)
    assert torch.mlu.mem_get_info(form) == (free - size, total)  # still cached
    torch.mlu.empty_cache()
    assert torch.mlu.mem_get_info(form) == (free, total)


def test_mem_get_info_of_unindexed_device_is_the_current_one():
    with torch.mlu.device(1):
        assert torch.mlu.mem_get_info(torch.device("mlu")) == torch.mlu.mem_get_info(1)
        assert torch.mlu.mem_get_info() == torch.mlu.mem_get_info(1)


# ---------------------------------------------------------------- memory fraction


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_per_process_memory_fraction_limits_allocations(form, index):
    total = torch.mlu.get_device_properties(index).total_memory
    previous = torch.mlu.get_per_process_memory_fraction(form)
    assert previous == 1.0
    size = round_up(int(total * 0.1) + 1, ROUND_LARGE)  # just above 10 % of the capacity
    settle(index)
    try:
        torch.mlu.set_per_process_memory_fraction(0.1, form)
        assert torch.mlu.get_per_process_memory_fraction(form) == pytest.approx(0.1)
        assert torch.mlu.get_per_process_memory_fraction(1 - index) == 1.0  # per device
        allocated = torch.mlu.memory_allocated(index)
        ooms = torch.mlu.memory_stats(index)["num_ooms"]
        with pytest.raises(torch.OutOfMemoryError, match="MLU out of memory"):
            new_bytes(size, index)
        assert torch.mlu.memory_allocated(index) == allocated
        assert torch.mlu.memory_stats(index)["num_ooms"] == ooms + 1
        small = new_bytes(1 * MiB, index)  # well under the limit: fine
        del small

        torch.mlu.set_per_process_memory_fraction(1.0, form)
        assert torch.mlu.get_per_process_memory_fraction(form) == 1.0
        t = new_bytes(size, index)
        assert torch.mlu.memory_allocated(index) == allocated + size
        del t
    finally:
        torch.mlu.set_per_process_memory_fraction(previous, index)
        settle(index)
        torch.mlu.empty_cache()


def test_per_process_memory_fraction_validation():
    previous = torch.mlu.get_per_process_memory_fraction()
    with pytest.raises(TypeError, match=r"Invalid type for fraction argument, must be `float`"):
        torch.mlu.set_per_process_memory_fraction(1)
    with pytest.raises(TypeError, match=r"Invalid type for fraction argument"):
        torch.mlu.set_per_process_memory_fraction("0.5", 1)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        torch.mlu.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match=r"Invalid fraction value: -0.1. Allowed range: 0~1"):
        torch.mlu.set_per_process_memory_fraction(-0.1, "mlu:1")
    assert torch.mlu.get_per_process_memory_fraction() == previous
    assert torch.mlu.get_per_process_memory_fraction(1) == 1.0


# ---------------------------------------------------------------- raw allocations


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_caching_allocator_alloc_and_delete(form, index):
    settle(index)
    before = torch.mlu.memory_allocated(index)
    other_before = torch.mlu.memory_allocated(1 - index)
    ptrs = []
    streams = [None, 0, torch.accelerator.current_stream(index)]
    for size, stream in zip((1000, 3 * MiB + 1, 100), streams):
        ptr = torch.mlu.caching_allocator_alloc(size, form, stream)
        assert isinstance(ptr, int) and ptr != 0
        ptrs.append(ptr)
    assert torch.mlu.current_device() == 0  # the device is restored
    assert len(set(ptrs)) == 3
    expected = before + block_size(1000) + block_size(3 * MiB + 1) + block_size(100)
    assert torch.mlu.memory_allocated(index) == expected
    assert torch.mlu.memory_allocated(1 - index) == other_before
    for ptr in ptrs:
        torch.mlu.caching_allocator_delete(ptr)
    settle(index)
    assert torch.mlu.memory_allocated(index) == before


def test_caching_allocator_alloc_defaults_to_the_current_device():
    settle(1)
    before = torch.mlu.memory_allocated(1)
    with torch.mlu.device(1):
        ptr = torch.mlu.caching_allocator_alloc(4096)
    assert torch.mlu.memory_allocated(1) == before + block_size(4096)
    torch.mlu.caching_allocator_delete(ptr)
    settle(1)
    assert torch.mlu.memory_allocated(1) == before


def test_caching_allocator_alloc_rejects_a_bad_stream():
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        torch.mlu.caching_allocator_alloc(1000, 0, "stream")


# ---------------------------------------------------------------- deprecated aliases


@pytest.mark.parametrize("form, index", DEVICE_FORMS)
def test_deprecated_aliases_warn_and_agree(form, index):
    t = new_bytes(3 * MiB, index)
    with pytest.warns(FutureWarning, match=r"`torch\.mlu\.memory_cached` has been renamed to `torch\.mlu\.memory_reserved`"):
        cached = torch.mlu.memory_cached(form)
    assert cached == torch.mlu.memory_reserved(form)
    with pytest.warns(FutureWarning, match=r"`torch\.mlu\.max_memory_cached` has been renamed to `torch\.mlu\.max_memory_reserved`"):
        max_cached = torch.mlu.max_memory_cached(form)
    assert max_cached == torch.mlu.max_memory_reserved(form)

    del t
    settle(index)
    assert torch.mlu.max_memory_allocated(form) > torch.mlu.memory_allocated(form)
    with pytest.warns(FutureWarning, match=r"torch\.mlu\.reset_max_memory_allocated now calls torch\.mlu\.reset_peak_memory_stats"):
        assert torch.mlu.reset_max_memory_allocated(form) is None
    assert torch.mlu.max_memory_allocated(form) == torch.mlu.memory_allocated(form)

    t = new_bytes(large_request_beyond_cache(index), index)  # a new segment
    del t
    settle(index)
    torch.mlu.empty_cache()
    assert torch.mlu.max_memory_reserved(form) > torch.mlu.memory_reserved(form)
    with pytest.warns(FutureWarning, match=r"torch\.mlu\.reset_max_memory_cached now calls torch\.mlu\.reset_peak_memory_stats"):
        torch.mlu.reset_max_memory_cached(form)
    assert torch.mlu.max_memory_reserved(form) == torch.mlu.memory_reserved(form)


def test_non_deprecated_functions_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.mlu.memory_reserved()
        torch.mlu.max_memory_reserved(1)
        torch.mlu.reset_peak_memory_stats("mlu:1")


# ---------------------------------------------------------------- host (pinned) memory


def test_host_memory_stats():
    torch.mlu.init()
    # Earlier tests may have freed pinned blocks that a copy still read: like CUDA's, the host allocator counts
    # them active until the next allocation finds their copies done.
    torch.mlu.synchronize()
    torch.empty(1, dtype=torch.uint8, pin_memory=True)
    stats = torch.mlu.host_memory_stats()
    expected = {f"{s}.{m}" for s in ("allocations", "allocated_bytes", "active_requests", "active_bytes")
                for m in METRICS}
    expected |= {"num_host_alloc", "num_host_free", "host_alloc_time.count", "host_free_time.count"}
    assert expected <= set(stats), sorted(expected - set(stats))
    assert list(stats) == sorted(stats)
    nested = torch.mlu.host_memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["current"] == stats["allocated_bytes.current"]

    size = 1 * MiB  # a power of two: no rounding
    p = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    assert p.is_pinned()
    during = torch.mlu.host_memory_stats()
    assert during["active_requests.current"] == stats["active_requests.current"] + 1
    assert during["active_bytes.current"] == stats["active_bytes.current"] + size
    assert during["allocated_bytes.current"] >= during["active_bytes.current"]
    del p
    after = torch.mlu.host_memory_stats()
    assert after["active_requests.current"] == stats["active_requests.current"]
    assert after["active_bytes.current"] == stats["active_bytes.current"]
    assert after["active_bytes.peak"] >= stats["active_bytes.current"] + size

    torch.mlu.reset_peak_host_memory_stats()
    stats = torch.mlu.host_memory_stats()
    for name in ("allocations", "allocated_bytes", "active_requests", "active_bytes"):
        assert stats[f"{name}.peak"] == stats[f"{name}.current"], name
    torch.mlu.reset_accumulated_host_memory_stats()
    stats = torch.mlu.host_memory_stats()
    for name in ("allocations", "allocated_bytes", "active_requests", "active_bytes"):
        assert stats[f"{name}.allocated"] == 0 and stats[f"{name}.freed"] == 0, name
    p = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    del p
    stats = torch.mlu.host_memory_stats()
    assert stats["active_requests.allocated"] == 1 and stats["active_requests.freed"] == 1
    assert stats["active_bytes.allocated"] == size and stats["active_bytes.freed"] == size


# ---------------------------------------------------------------- out of memory


def test_out_of_memory_fills_and_recovers(python):
    result = python(
        """
        import torch, torch_mlu
        from tests.test_memory_api import MiB, cuda_format_size, segment_size

        cap = torch.mlu.get_device_properties(0).total_memory
        assert cap == 256 * MiB, cap
        start = torch.mlu.memory_allocated()
        chunk = 16 * MiB
        assert segment_size(chunk) == chunk
        keep = []
        message = None
        for _ in range(4 * cap // chunk):
            try:
                keep.append(torch.empty(chunk, dtype=torch.uint8, device="mlu"))
            except torch.OutOfMemoryError as e:
                message = str(e)
                break
        assert message is not None
        assert len(keep) == cap // chunk, (len(keep), cap // chunk)
        for text in ("MLU out of memory", "Tried to allocate " + cuda_format_size(chunk), "PYTORCH_MLU_ALLOC_CONF"):
            assert text in message, (text, message)
        stats = torch.mlu.memory_stats()
        assert stats["num_ooms"] == 1
        assert stats["allocated_bytes.all.current"] == start + len(keep) * chunk
        assert torch.mlu.mem_get_info() == (cap - len(keep) * chunk, cap)

        keep.clear()
        torch.mlu.synchronize()
        assert torch.mlu.memory_allocated() == start
        x = torch.ones(chunk // 4, device="mlu")  # works again
        assert x.sum().item() == chunk // 4
        del x
        torch.mlu.synchronize()
        assert torch.mlu.memory_allocated() == start

        # one request of twice the capacity: refused, and nothing moves but num_ooms
        torch.mlu.empty_cache()
        before = torch.mlu.memory_stats()
        try:
            torch.empty(2 * cap, dtype=torch.uint8, device="mlu")
            raise AssertionError("no OutOfMemoryError")
        except torch.OutOfMemoryError as e:
            assert "MLU out of memory" in str(e) and "Tried to allocate " + cuda_format_size(2 * cap) in str(e), str(e)
        after = torch.mlu.memory_stats()
        for key, value in before.items():
            if key.endswith(".current"):
                assert after[key] == value, (key, value, after[key])
        assert after["num_ooms"] == before["num_ooms"] + 1
        assert torch.mlu.memory_allocated() == start
        assert torch.mlu.mem_get_info() == (cap - torch.mlu.memory_reserved(), cap)
        print("ok")
        """,
        env={"TORCH_MLU_DEVICE_MEMORY": "256M"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------- leaks


def test_training_loop_does_not_leak():
    settle(0)
    start = torch.mlu.memory_allocated()
    torch.mlu.reset_peak_memory_stats()
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).to("mlu")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(8, 16).to("mlu")
    target = torch.randn(8, 4).to("mlu")
    steady = None
    for step in range(1000):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        if step == 10:
            torch.mlu.synchronize()
            steady = torch.mlu.memory_allocated()
    torch.mlu.synchronize()
    assert torch.mlu.memory_allocated() == steady  # no growth from step to step
    assert torch.isfinite(loss.detach().cpu()).item()
    assert torch.mlu.max_memory_allocated() > start
    del model, opt, x, target, loss
    settle(0)
    assert torch.mlu.memory_allocated() == start
