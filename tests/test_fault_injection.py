"""Fault injection (torch.mlu.fault_injection, TORCH_MLU_FAULT_INJECT): every error path of the runtime, the
allocator, the copies, graph capture and the collectives, each driven by an injected fault. After each one the
process keeps working and device memory is back where it was.
"""
import time

import pytest
import torch

import torch_mlu  # noqa: F401
from torch_mlu.mlu import fault_injection

import dist_workers
from test_distributed import spawn


@pytest.fixture(autouse=True)
def at_baseline():
    """Every test starts without rules and must leave allocated memory and the device's free memory as found."""
    fault_injection.clear()
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    allocated, free = torch.mlu.memory_allocated(), torch.mlu.mem_get_info()[0]
    yield
    fault_injection.clear()
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    assert torch.mlu.memory_allocated() == allocated
    assert torch.mlu.mem_get_info()[0] == free


def still_works():
    x = torch.arange(6, dtype=torch.float32, device="mlu")
    assert (x * 2 + 1).cpu().tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]


def test_grammar_errors_name_the_rule_and_keep_the_old_rules():
    fault_injection.set_rules("delay:1")
    for bad, problem in [("kernal:3", "'kernal' is not a rule"), ("alloc:0", "needs a positive count"),
                         ("kernel:add@x", "after '@' must be a positive integer"), ("delay", "has no ':'"),
                         ("capacity:lots", "size must be like 512M"), ("corrupt:", "'corrupt:' needs a name"),
                         ("corrupt:aten::mm@0", "after '@' must be a positive integer")]:
        with pytest.raises(ValueError, match=problem) as caught:
            fault_injection.set_rules(bad)
        assert "alloc:N[+], host_alloc:N[+], kernel:N[+], kernel:NAME[@N]" in str(caught.value)
        assert "corrupt:NAME[@N]" in str(caught.value)
    assert fault_injection.spec() == "delay:1"


def test_malformed_variable_fails_device_calls_clearly(python):
    result = python("import torch, torch_mlu\ntorch.ones(1, device='mlu')", env={"TORCH_MLU_FAULT_INJECT": "oops"})
    assert result.returncode != 0 and "TORCH_MLU_FAULT_INJECT: 'oops' has no ':'" in result.stderr


def test_variable_injects_for_the_whole_program(python):
    result = python("""
        import torch, torch_mlu
        x = torch.ones(4, device="mlu")
        try:
            (x + 1).cpu()
        except torch.AcceleratorError as e:
            print("caught", "injected fault (TORCH_MLU_FAULT_INJECT 'kernel:Add')" in str(e))
        print(torch.mlu.fault_injection.spec(), torch.mlu.fault_injection.count())
        """, env={"TORCH_MLU_FAULT_INJECT": "kernel:Add"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["caught", "True", "kernel:Add", "1"]


def test_kernel_fault_by_count_surfaces_at_the_next_synchronization():
    x = torch.ones(1000, device="mlu")
    with fault_injection.inject("kernel:2"):
        a = x * 2          # kernel 1 runs
        b = x + 5          # kernel 2 fails on the device
        c = x - 1          # kernel 3 runs: later work on the stream goes on
        with pytest.raises(torch.AcceleratorError, match=r"device 0: \w+: injected fault \(TORCH_MLU_FAULT_INJECT "
                                                         r"'kernel:2'\)"):
            torch.mlu.synchronize()
        assert fault_injection.count() == 1
    assert a.cpu().eq(2).all() and c.cpu().eq(0).all()
    del b
    still_works()


def test_kernel_fault_by_name_and_occurrence():
    x = torch.ones(64, device="mlu")
    with fault_injection.inject("kernel:Mul@2"):
        first = x * 3
        torch.mlu.synchronize()
        second = x * 4
        with pytest.raises(torch.AcceleratorError, match="Mul: injected fault"):
            second.cpu()
        third = x * 5
        assert third.cpu().eq(5).all() and first.cpu().eq(3).all()
    still_works()


def test_launch_blocking_reports_the_fault_at_the_op(python):
    result = python("""
        import torch, torch_mlu
        x = torch.ones(4, device="mlu")
        with torch.mlu.fault_injection.inject("kernel:Sin"):
            try:
                x.sin()
                print("not at the op")
            except torch.AcceleratorError as e:
                print("at the op:", "Sin: injected fault" in str(e))
        """, env={"MLU_LAUNCH_BLOCKING": "1"})
    assert result.returncode == 0, result.stderr
    assert "at the op: True" in result.stdout


def test_one_failed_allocation_is_absorbed_by_the_cache_retry():
    keep = torch.empty(3 << 20, dtype=torch.uint8, device="mlu")
    del keep  # a cached segment the allocator can give back
    retries = torch.mlu.memory_stats()["num_alloc_retries"]
    with fault_injection.inject("alloc:1"):
        x = torch.empty(25 << 20, dtype=torch.uint8, device="mlu")  # fails once, frees the cache, succeeds
        assert fault_injection.count() == 1
    assert torch.mlu.memory_stats()["num_alloc_retries"] == retries + 1
    del x
    still_works()


def test_persistent_allocation_failure_is_out_of_memory():
    ooms = torch.mlu.memory_stats()["num_ooms"]
    with fault_injection.inject("alloc:1+"):
        with pytest.raises(torch.OutOfMemoryError, match=r"injected fault \(TORCH_MLU_FAULT_INJECT 'alloc:1\+'\)"):
            torch.empty(30 << 20, dtype=torch.uint8, device="mlu")
        assert fault_injection.count() == 2  # the attempt, and the retry after the cache was emptied
    assert torch.mlu.memory_stats()["num_ooms"] == ooms + 1
    still_works()


def test_pinned_host_allocation_failure():
    with fault_injection.inject("host_alloc:1"):
        with pytest.raises(RuntimeError, match="cannot pin .* injected fault"):
            torch.empty(1 << 20).pin_memory()
    assert torch.empty(1 << 20).pin_memory().is_pinned()


@pytest.mark.parametrize("direction", ["to_device", "to_host", "device_to_device", "pinned_non_blocking"])
def test_failed_copy(direction):
    data = torch.arange(1 << 12, dtype=torch.float32)
    on_device = data.to("mlu")
    torch.mlu.synchronize()
    with fault_injection.inject("copy:1"):
        with pytest.raises(torch.AcceleratorError, match="injected fault"):
            if direction == "to_device":
                data.to("mlu")
            elif direction == "to_host":
                on_device.cpu()
            elif direction == "device_to_device":
                on_device.to("mlu:1")
                torch.mlu.synchronize(0)
                torch.mlu.synchronize(1)
            else:
                pinned = torch.empty_like(data).pin_memory()
                pinned.copy_(on_device, non_blocking=True)
                torch.mlu.synchronize()
    assert torch.equal(on_device.cpu(), data) and torch.equal(data.to("mlu:1").cpu(), data)
    still_works()


def test_delay_holds_the_queue_and_keeps_order():
    x = torch.zeros(16, device="mlu")
    with fault_injection.inject("delay:150"):
        start = time.monotonic()
        x.add_(1)
        x.mul_(3)
        assert not torch.mlu.current_stream().query()
        assert x.cpu().tolist() == [3.0] * 16  # in order, just later
        assert time.monotonic() - start >= 0.3
    still_works()


def test_capacity_drop():
    total = torch.mlu.mem_get_info()[1]
    with fault_injection.inject("capacity:64M"):
        free, limited = torch.mlu.mem_get_info()
        assert limited == 64 << 20 and free <= limited
        with pytest.raises(torch.OutOfMemoryError, match="total capacity of 64.00 MiB"):
            torch.empty(100 << 20, dtype=torch.uint8, device="mlu")
        ok = torch.empty(8 << 20, dtype=torch.uint8, device="mlu")
        del ok
    assert torch.mlu.mem_get_info()[1] == total
    still_works()


def test_graph_replay_with_a_failing_kernel_and_a_clean_replay_after():
    static = torch.ones(256, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        out = torch.cos(static) * 2
    with fault_injection.inject("kernel:Cos"):
        g.replay()
        with pytest.raises(torch.AcceleratorError, match="graph replay: Cos: injected fault"):
            torch.mlu.synchronize()
    static.fill_(0.5)
    g.replay()
    torch.testing.assert_close(out.cpu(), torch.cos(torch.full((256,), 0.5)) * 2)
    del out, g
    still_works()


def test_allocation_failure_during_capture_ends_it_cleanly():
    static = torch.ones(1 << 20, device="mlu")
    g = torch.mlu.MLUGraph()
    with fault_injection.inject("alloc:1+"):
        with pytest.raises(torch.OutOfMemoryError, match="injected fault"):
            with torch.mlu.graph(g):
                static.repeat(16)  # needs a new segment of the graph's pool
    assert not torch.mlu.is_current_stream_capturing()
    with torch.mlu.graph(g):
        out = static * 2
    g.replay()
    assert out.cpu().eq(2).all()
    del out, g
    still_works()


def test_collective_fault_fails_both_ranks_within_the_timeout(tmp_path):
    spawn(dist_workers.injected_collective_worker, 2, tmp_path, env={"TORCH_CNCL_ASYNC_ERROR_HANDLING": "0"})
