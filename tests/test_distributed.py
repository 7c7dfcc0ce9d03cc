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


def test_async_error_handling_tears_the_process_down(tmp_path, capfd):
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGABRT"):
        spawn(dist_workers.teardown_worker, 2, tmp_path, env={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"})
    err = capfd.readouterr().err
    assert "[cncl] [Rank 0] failure detected by watchdog at work sequence id: 2" in err, err
    assert "cncl all_reduce failed on rank 0" in err, err
    assert "failed; terminating the process (TORCH_CNCL_ASYNC_ERROR_HANDLING=1)" in err, err


def test_misuse_is_a_clear_error_and_the_group_survives(tmp_path):
    spawn(dist_workers.misuse_worker, 2, tmp_path)


def test_collectives_on_a_non_current_device(tmp_path):
    spawn(dist_workers.non_current_device_worker, 2, tmp_path)


@pytest.mark.parametrize("how", ["dies", "hangs", "exits in shared memory"])
def test_lost_rank_fails_the_others_within_the_timeout(how, tmp_path):
    env = {"TORCH_CNCL_ASYNC_ERROR_HANDLING": "0"}
    if how == "exits in shared memory":
        env["TORCH_CNCL_CHECK_COLLECTIVES"] = "0"
    spawn(dist_workers.lost_rank_worker, 2, tmp_path, how, env=env)


# ---- torchrun: the example, two "nodes", and a CUDA script with two words changed ----

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "distributed_gpt.py")
SMALL = ["--steps", "3", "--batch-size", "2", "--block-size", "16", "--embd", "32", "--layers", "1"]


def torchrun(*args, env=None, cwd=None):
    import subprocess
    import sys
    full_env = dict(os.environ, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *args], env=full_env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc, timeout=240):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return out


@pytest.mark.parametrize("mode", ["ddp", "fsdp2"])
def test_torchrun_example(mode, tmp_path):
    out = finish(torchrun("--standalone", "--nproc_per_node", "2", EXAMPLE, "--mode", mode, *SMALL, cwd=tmp_path,
                          env={"TORCH_CNCL_DEBUG": "INFO"}))
    assert f"{mode}: 2 ranks on mlu (cncl)" in out, out
    assert "[cncl] rank 1/2: process group over Gloo" in out, out  # TORCH_CNCL_DEBUG=INFO logs group creation


def test_two_nodes_each_owning_its_devices(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    nodes = [torchrun("--nnodes", "2", "--node_rank", str(n), "--nproc_per_node", "1", "--master_addr", "127.0.0.1",
                      "--master_port", port, EXAMPLE, *SMALL, env={"MLU_VISIBLE_DEVICES": str(n)}, cwd=tmp_path)
             for n in (0, 1)]
    outs = [finish(p) for p in nodes]
    assert "ddp: 2 ranks on mlu (cncl)" in outs[0], outs


CUDA_SCRIPT = '''
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
device = torch.device("cuda", local_rank)
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 4).to(device), device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(16, 8, device=device)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
weights = [torch.empty_like(model.module.weight) for _ in range(dist.get_world_size())]
dist.all_gather(weights, model.module.weight.detach())
assert all(torch.equal(w, weights[0]) for w in weights), "replicas diverged"
t = torch.ones(4, device=device) * (dist.get_rank() + 1)
dist.all_reduce(t)
assert t.tolist() == [3.0] * 4, t
objs = [None] * dist.get_world_size()
dist.all_gather_object(objs, dist.get_rank())
dist.barrier()
with open(f"ok_{dist.get_rank()}.txt", "w") as f:
    f.write(f"{dist.get_backend()} {device}")
dist.destroy_process_group()
'''


def test_cuda_nccl_script_runs_with_two_words_changed(tmp_path):
    script = CUDA_SCRIPT.replace("cuda", "mlu").replace("nccl", "cncl")
    path = tmp_path / "train.py"
    path.write_text(script)
    finish(torchrun("--standalone", "--nproc_per_node", "2", str(path), cwd=tmp_path))
    assert [(tmp_path / f"ok_{r}.txt").read_text() for r in (0, 1)] == ["cncl mlu:0", "cncl mlu:1"]


def test_default_backend_and_blocking_wait(tmp_path):
    spawn(dist_workers.default_backend_worker, 2, tmp_path,
          env={"TORCH_CNCL_BLOCKING_WAIT": "1", "TORCH_NCCL_AVOID_RECORD_STREAMS": "1"})


def test_cncl_settings_accept_nccl_names(python):
    import json
    code = "import torch_mlu, json; print(json.dumps(torch_mlu._C._cncl_config()))"

    def config(env):
        proc = python(code, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    defaults = {"blocking_wait": False, "avoid_record_streams": False, "async_error_handling": 3,
                "check_collectives": True, "debug": 0, "trace_buffer_size": 2000, "dump_on_timeout": True,
                "wait_timeout_dump_ms": 15000, "desync_debug": False, "enable_monitoring": True,
                "heartbeat_timeout_sec": 480, "shm_disable": False, "transfer_timeout_margin_s": 10}
    unset = {name: "" for name in ("TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC", "TORCH_CNCL_DEBUG_INFO_TEMP_FILE")}
    assert config(unset) == defaults  # (conftest sets the dump wait for the suite)
    got = config({**unset, "TORCH_NCCL_BLOCKING_WAIT": "1", "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
                  "NCCL_ASYNC_ERROR_HANDLING": "2", "NCCL_DEBUG": "INFO", "TORCH_CNCL_CHECK_COLLECTIVES": "0",
                  "TORCH_FR_BUFFER_SIZE": "7", "TORCH_NCCL_DUMP_ON_TIMEOUT": "0",
                  "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "5", "NCCL_DESYNC_DEBUG": "1",
                  "TORCH_NCCL_ENABLE_MONITORING": "0", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "9",
                  "NCCL_SHM_DISABLE": "1"})
    assert got == {"blocking_wait": True, "avoid_record_streams": True, "async_error_handling": 2,
                   "check_collectives": False, "debug": 1, "trace_buffer_size": 7, "dump_on_timeout": False,
                   "wait_timeout_dump_ms": 5, "desync_debug": True, "enable_monitoring": False,
                   "heartbeat_timeout_sec": 9, "shm_disable": True, "transfer_timeout_margin_s": 10}
    # The cncl name wins over the NCCL one.
    assert config({"TORCH_CNCL_BLOCKING_WAIT": "0", "TORCH_NCCL_BLOCKING_WAIT": "1"})["blocking_wait"] is False
    assert config({"TORCH_CNCL_TRACE_BUFFER_SIZE": "3", "TORCH_NCCL_TRACE_BUFFER_SIZE": "5"})["trace_buffer_size"] == 3


# ---- all_reduce through shared memory between the ranks of one host (Note [cncl shared-memory all-reduce]) ----

@pytest.mark.parametrize("world,disable", [(2, None), (3, None), (2, "1")])
def test_all_reduce_through_shared_memory_is_exact(world, disable, tmp_path):
    env = {"TORCH_MLU_DEVICE_COUNT": "3"}
    if disable:
        env["NCCL_SHM_DISABLE"] = disable  # NCCL's name: the same switch
    spawn(dist_workers.shared_memory_worker, world, tmp_path, "gloo" if disable else "shared memory", env=env)

