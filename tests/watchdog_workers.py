"""Workers of tests/test_distributed_watchdog.py: ranks that skip, change or stall a collective."""
import os
import pickle
import time

import torch
import torch.distributed as dist

import torch_mlu.distributed as mlu_dist
from dist_workers import init


def wait_for_file(path, limit=60):
    deadline = time.monotonic() + limit
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.path.exists(path), f"{path} was never written"


def skipped_collective_worker(rank, world, store, prefix):
    """Rank 1 skips the fourth all_reduce: rank 0 times out, both ranks dump, rank 0's process ends (mode 3)."""
    device = init(rank, world, store, backend="cncl", timeout=4)
    for _ in range(3):
        dist.all_reduce(torch.ones(8, device=device))
    torch.mlu.synchronize()
    if rank == 1:
        wait_for_file(f"{prefix}1")  # written by this rank's watchdog when rank 0 asks
        os._exit(0)
    t = torch.ones(16, device=device)
    dist.all_reduce(t)
    t.cpu()
    time.sleep(60)  # not reached: the watchdog ends the process


def different_collective_worker(rank, world, store, prefix):
    """Rank 1 broadcasts where rank 0 all-reduces: both raise, the group goes on, the dumps name the mismatch."""
    import pytest
    device = init(rank, world, store, backend="cncl", timeout=30)
    dist.all_reduce(torch.ones(8, device=device))
    with pytest.raises((dist.DistBackendError, torch.AcceleratorError), match="collectives differ across ranks"):
        t = torch.ones(8, device=device)
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
        t.cpu()
    dist.all_reduce(torch.ones(4, device=device))
    torch.mlu.synchronize()
    assert mlu_dist.write_cncl_trace() == f"{prefix}{rank}"
    dist.barrier()
    dist.destroy_process_group()


def trace_contents_worker(rank, world, store):
    """What the recorder keeps: NCCL's names, sequence numbers, sizes, states and the caller's stack; the last N."""
    device = init(rank, world, store, backend="cncl", timeout=30)
    peer = 1 - rank
    x = torch.ones(6, 2, device=device)
    dist.all_reduce(x)
    dist.all_gather_into_tensor(torch.empty(12, 2, device=device), x)
    if rank == 0:
        dist.send(torch.ones(3, device=device), peer)
    else:
        dist.recv(torch.empty(3, device=device), peer)
    dist.broadcast(torch.ones(5, dtype=torch.int64, device=device), src=0)
    torch.mlu.synchronize()
    dump = pickle.loads(mlu_dist.dump_cncl_trace())
    assert dump["version"] == "2.10"
    assert dump["pg_config"]["0"] == {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}, dump["pg_config"]
    entries = dump["entries"]
    names = [e["profiling_name"] for e in entries]
    p2p = f"nccl:send {rank}->{peer}" if rank == 0 else f"nccl:recv {rank}<-{peer}"
    assert names == ["nccl:all_reduce", "nccl:_all_gather_base", p2p, "nccl:broadcast"], names
    assert [e["collective_seq_id"] for e in entries] == [1, 2, 2, 3]
    assert [e["p2p_seq_id"] for e in entries] == [0, 0, 1, 1]
    assert [e["is_p2p"] for e in entries] == [False, False, True, False]
    assert entries[1]["input_sizes"] == [[6, 2]] and entries[1]["output_sizes"] == [[12, 2]]
    assert entries[3]["input_dtypes"] == ["Long"]
    assert all(e["state"] == "completed" and e["retired"] for e in entries), entries
    assert all(e["time_discovered_completed_ns"] >= e["time_discovered_started_ns"] >= e["time_created_ns"]
               for e in entries)
    assert any(f["name"] == "trace_contents_worker" for f in entries[0]["frames"]), entries[0]["frames"]
    assert dump["pg_status"]["0"]["last_completed_collective"] == 3
    # Only the last TORCH_CNCL_TRACE_BUFFER_SIZE (4) entries are kept.
    for _ in range(3):
        dist.all_reduce(x)
    torch.mlu.synchronize()
    entries = pickle.loads(mlu_dist.dump_cncl_trace(include_stack_traces=False))["entries"]
    assert [e["collective_seq_id"] for e in entries] == [3, 4, 5, 6], entries
    assert all(e["frames"] == [] for e in entries)
    dist.destroy_process_group()


def desync_worker(rank, world, store):
    """TORCH_CNCL_DESYNC_DEBUG=1, TORCH_CNCL_ASYNC_ERROR_HANDLING=0: rank 0's timeout is a Python error whose
    report says rank 1 finished collective 2 but never joined 3; the group is broken, the device works."""
    import pytest
    device = init(rank, world, store, backend="cncl", timeout=3)
    for _ in range(2):
        dist.all_reduce(torch.ones(8, device=device))
    torch.mlu.synchronize()
    time.sleep(0.5)  # the watchdogs publish their progress each 100 ms
    if rank == 1:
        time.sleep(12)
        os._exit(0)
    start = time.monotonic()
    t = torch.ones(8, device=device)
    with pytest.raises((dist.DistBackendError, torch.AcceleratorError)) as raised:
        dist.all_reduce(t)
        t.cpu()
    message = str(raised.value)
    assert time.monotonic() - start < 3 + 8, "the timeout was not caught in time"
    if "Watchdog caught" in message:  # else Gloo's own timeout won the race, and the log has the report
        assert "WorkCNCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=3000)" in message, message
        assert "[1] finished collective #2, but didn't join collective #3 (count from 1)" in message, message
    with pytest.raises(dist.DistBackendError, match="broken by an earlier failure"):
        dist.all_reduce(torch.ones(2, device=device))
    assert float((torch.ones(2, device=device) * 3).sum().cpu()) == 6.0
    os._exit(0)


def abort_worker(rank, world, store):
    """Rank 0 aborts its group with an all_reduce rank 1 never joins (Note [Aborting a cncl group]): the all_reduce
    fails at once, not at the timeout; both ranks then create a new group in the same process and use it."""
    import pytest
    device = init(rank, world, store, backend="cncl", timeout=60)
    dist.all_reduce(torch.ones(4, device=device))
    torch.mlu.synchronize()
    aborted = f"{store}_rank0_aborted"
    if rank == 0:
        t = torch.ones(4, device=device)
        work = dist.all_reduce(t, async_op=True)
        time.sleep(0.5)
        start = time.monotonic()
        dist.distributed_c10d._abort_process_group()
        with pytest.raises((dist.DistBackendError, torch.AcceleratorError), match=r"was aborted \(ProcessGroup.abort"):
            work.wait()
            t.cpu()
        assert time.monotonic() - start < 10, "abort waited for the transfer"
        if os.environ.get("TORCH_CNCL_CHECK_COLLECTIVES") == "0":
            # The transfer waited in shared memory, not in Gloo: the abort ends it, and its queue drains now.
            torch.mlu.synchronize()
            assert time.monotonic() - start < 10, "the shared-memory transfer outlived the abort"
        open(aborted, "w").close()
    else:
        wait_for_file(aborted)
        dist.distributed_c10d._abort_process_group()
    assert not dist.is_initialized()
    init(rank, world, f"{store}_again", backend="cncl", timeout=60)
    t = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(t)
    assert t.cpu().tolist() == [3.0] * 4
    dist.destroy_process_group()


def stuck_store_worker(rank, world, folder, port):
    """The group's store is a TCPStore served by another process, which the test stops (SIGSTOP) after the first
    collective: the watchdog's next store call never returns, and the heartbeat monitor ends this process
    (TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC)."""
    import datetime
    store = dist.TCPStore("127.0.0.1", port, world_size=world, is_master=False,
                          timeout=datetime.timedelta(seconds=120))
    torch.mlu.set_device(rank)
    device = torch.device("mlu", rank)
    dist.init_process_group("cncl", store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    dist.all_reduce(torch.ones(2, device=device))
    torch.mlu.synchronize()
    open(os.path.join(folder, f"ready{rank}"), "w").close()
    wait_for_file(os.path.join(folder, "stopped"))
    dist.all_reduce(torch.ones(2, device=device))  # the watchdog publishes its progress: into the stopped store
    torch.mlu.synchronize()
    time.sleep(60)  # not reached: the heartbeat monitor ends the process first
