"""The cncl watchdog and flight recorder (Notes [cncl watchdog] and [cncl flight recorder]): a hung or mismatched
collective is reported, naming the collective and the ranks at fault, every rank's dump is written, and PyTorch's
own analyser (torch.distributed.flight_recorder.fr_trace) reads the dumps and names the culprit.

Ranks are spawned processes (workers in watchdog_workers.py).
"""
import pickle
import subprocess
import sys

import pytest
import torch.multiprocessing as mp

import watchdog_workers
from test_distributed import spawn

pytestmark = pytest.mark.training  # rank processes that time out on purpose: the training stage (docs/testing.md)


def fr_trace(folder, prefix):
    r = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(folder), "-p", prefix],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout + r.stderr


def test_a_skipped_collective_times_out_and_the_analyser_names_the_missing_rank(tmp_path, capfd):
    prefix = str(tmp_path / "dumps" / "rank_")
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGABRT"):
        spawn(watchdog_workers.skipped_collective_worker, 2, tmp_path, prefix,
              env={"TORCH_CNCL_DEBUG_INFO_TEMP_FILE": prefix, "TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC": "20000"})
    err = capfd.readouterr().err
    assert ("[Rank 0] Watchdog caught collective operation timeout: WorkCNCL(SeqNum=4, OpType=ALLREDUCE, "
            "NumelIn=16, NumelOut=16, Timeout(ms)=4000) ran for") in err, err
    assert "Ranks [1] of the group had not entered collective #4 (ALLREDUCE)" in err, err
    assert "terminating the process (TORCH_CNCL_ASYNC_ERROR_HANDLING=3)" in err, err
    dumps = [pickle.loads((tmp_path / "dumps" / f"rank_{r}").read_bytes()) for r in range(2)]
    assert [e["state"] for e in dumps[0]["entries"]][-1] == "started"
    assert len(dumps[1]["entries"]) == 3
    report = fr_trace(tmp_path / "dumps", "rank_")
    assert "Not all ranks joining collective, sequence number: 4" in report, report
    assert "missing ranks: {1}" in report, report
    assert "collective: nccl:all_reduce" in report, report


def test_a_different_collective_is_an_error_and_the_analyser_names_it(tmp_path):
    prefix = str(tmp_path / "dumps" / "rank_")
    spawn(watchdog_workers.different_collective_worker, 2, tmp_path, prefix,
          env={"TORCH_CNCL_DEBUG_INFO_TEMP_FILE": prefix})
    report = fr_trace(tmp_path / "dumps", "rank_")
    assert "Collective sequence number: 2 has errors" in report, report
    assert "Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH" in report, report
    assert "Expected collective type: 'all_reduce' does not match found collective type: 'broadcast'" in report


def test_the_recorder_keeps_the_last_collectives_with_names_sizes_states_and_stacks(tmp_path):
    spawn(watchdog_workers.trace_contents_worker, 2, tmp_path, env={"TORCH_CNCL_TRACE_BUFFER_SIZE": "4"})


def test_desync_debug_names_the_rank_that_never_joined(tmp_path, capfd):
    spawn(watchdog_workers.desync_worker, 2, tmp_path,
          env={"TORCH_CNCL_DESYNC_DEBUG": "1", "TORCH_CNCL_ASYNC_ERROR_HANDLING": "0"})
    err = capfd.readouterr().err
    assert "[Rank 0] Watchdog caught collective operation timeout" in err or "failure detected by watchdog" in err
    assert "Desync report (TORCH_CNCL_DESYNC_DEBUG):" in err, err
    assert "[1] finished collective #2, but didn't join collective #3 (count from 1)" in err, err


def test_heartbeat_monitor_ends_a_process_whose_watchdog_is_stuck(tmp_path, capfd):
    import os
    import signal
    import time
    server = subprocess.Popen(
        [sys.executable, "-c", "import time, torch.distributed as d\n"
         "s = d.TCPStore('127.0.0.1', 0, is_master=True, wait_for_workers=False)\n"
         "print(s.port, flush=True)\ntime.sleep(300)"], stdout=subprocess.PIPE, text=True)
    os.environ["TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC"] = "2"
    try:
        port = int(server.stdout.readline())
        ranks = mp.start_processes(watchdog_workers.stuck_store_worker, args=(2, str(tmp_path), port), nprocs=2,
                                   join=False, start_method="spawn")
        for rank in range(2):
            watchdog_workers.wait_for_file(str(tmp_path / f"ready{rank}"))
        server.send_signal(signal.SIGSTOP)
        (tmp_path / "stopped").touch()
        start = time.monotonic()
        with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGABRT"):
            while not ranks.join(timeout=1):
                assert time.monotonic() - start < 40, "the heartbeat monitor did not end the stuck ranks"
    finally:
        os.environ.pop("TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC")
        server.send_signal(signal.SIGCONT)
        server.kill()
        server.wait()
    err = capfd.readouterr().err
    assert "the cncl watchdog got stuck for 2 seconds without making progress" in err, err
    assert "flight recorder dumped to" in err and "(the watchdog is stuck)" in err, err
