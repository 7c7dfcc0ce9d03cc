"""The cncl backend: every collective and p2p op against Gloo on CPU tensors,
DDP / FSDP2 / tensor parallelism against single-process training, failures.

Ranks are spawned processes sharing a file store (workers in dist_workers.py).
"""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import dist_workers


def spawn(worker, world, tmp_path, *args, env=None):
    store = tmp_path / "store"
    old = {}
    for key, value in (env or {}).items():
        old[key] = os.environ.get(key)
        os.environ[key] = value
    try:
        mp.spawn(worker, args=(world, str(store), *args), nprocs=world, join=True)
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_backend_registered_for_mlu():
    assert dist.get_default_backend_for_device("mlu") == "cncl"
    assert dist.Backend.default_device_backend_map["mlu"] == "cncl"
    assert dist.is_cncl_available() and torch.mlu.cncl.is_available()
    assert isinstance(torch.mlu.cncl.version(), tuple)
    assert issubclass(dist.ProcessGroupCNCL, torch._C._distributed_c10d.Backend)


@pytest.mark.parametrize("world", [2, 3])
def test_collectives_match_gloo(world, tmp_path):
    spawn(dist_workers.ops_worker, world, tmp_path, env={"TORCH_MLU_DEVICE_COUNT": "3"})


def test_ddp_matches_single_process(tmp_path):
    spawn(dist_workers.ddp_worker, 2, tmp_path)


def test_fsdp2_matches_single_process_and_checkpoints_across_world_sizes(tmp_path):
    checkpoint = tmp_path / "ckpt" / "sharded"
    checkpoint.parent.mkdir()
    spawn(dist_workers.fsdp_worker, 2, tmp_path, str(checkpoint))
    (tmp_path / "store").unlink(missing_ok=True)
    spawn(dist_workers.dcp_load_worker, 3, tmp_path, str(checkpoint), env={"TORCH_MLU_DEVICE_COUNT": "3"})


def test_tensor_parallel_matches_single_device(tmp_path):
    spawn(dist_workers.tp_worker, 2, tmp_path)


def test_misuse_is_a_clear_error_and_the_group_survives(tmp_path):
    spawn(dist_workers.misuse_worker, 2, tmp_path)


@pytest.mark.parametrize("how", ["dies", "hangs"])
def test_lost_rank_fails_the_others_within_the_timeout(how, tmp_path):
    spawn(dist_workers.lost_rank_worker, 2, tmp_path, how)
