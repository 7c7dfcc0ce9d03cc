"""Recovering from a lost rank: ProcessGroup.abort() and a new group in the same process (Note [Aborting a cncl
group]); torchrun --max-restarts restarting the group, which resumes from its last DCP checkpoint and continues the
loss curve of an uninterrupted run (tests/elastic_train.py)."""
import os

import pytest

import watchdog_workers
from test_distributed import finish, spawn, torchrun

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elastic_train.py")


# With the agreement exchange off, the pending all_reduce waits inside the shared-memory transfer, not in Gloo
# (Note [cncl shared-memory all-reduce]).
@pytest.mark.parametrize("check_collectives", ["1", "0"])
def test_abort_fails_pending_collectives_at_once_and_a_new_group_works(check_collectives, tmp_path):
    spawn(watchdog_workers.abort_worker, 2, tmp_path,
          env={"TORCH_CNCL_ASYNC_ERROR_HANDLING": "0", "TORCH_CNCL_CHECK_COLLECTIVES": check_collectives})


def losses(path):
    """{step: (attempt, loss)} from the log, the last attempt's line winning."""
    curve = {}
    for line in path.read_text().split("\n"):
        if line:
            attempt, step, loss = line.split()
            curve[int(step)] = (int(attempt), float(loss))
    return curve


@pytest.mark.training  # two torchrun jobs: the training stage (docs/testing.md)
def test_a_killed_rank_restarts_the_group_from_the_last_checkpoint(tmp_path):
    runs = {}
    for name, kill in (("uninterrupted", -1), ("killed", 7)):
        folder = tmp_path / name
        folder.mkdir()
        out = finish(torchrun("--standalone", "--nproc_per_node", "2", "--max-restarts", "1", "--monitor-interval",
                              "0.5", SCRIPT, "--ckpt", str(folder / "ckpt"), "--losses", str(folder / "loss.txt"),
                              "--kill-at", str(kill), cwd=folder), timeout=400)
        runs[name] = (out, losses(folder / "loss.txt"), (folder / "loss.txt").read_text())
    out, killed, log = runs["killed"]
    assert "attempt 1: resumed from step 5" in out, out
    # The first attempt got through step 7; the second redid steps 6 and 7 from the step-5 checkpoint, then went on.
    assert "0 7 " in log and "1 6 " in log and "1 5 " not in log, log
    assert sorted(killed) == list(range(10))
    assert [a for a, _ in killed.values()] == [0] * 6 + [1] * 4
    _, uninterrupted, _ = runs["uninterrupted"]
    for step in range(10):
        assert abs(killed[step][1] - uninterrupted[step][1]) <= 1e-6 * max(1.0, abs(uninterrupted[step][1])), (
            step, killed[step], uninterrupted[step])
