"""Attention under DTensor: mlu's SDPA op sharded by heads, batch or queries (Note [Sharding mlu's attention]),
tensor parallelism of a Llama model with FSDP2 x TP against one device, and pytorch/examples' 2-D example as
its README runs it on 4 devices.

Ranks are spawned processes (workers in dtensor_workers.py).
"""

import os
import subprocess
import sys

import pytest
import torch.multiprocessing as mp

import dtensor_workers


def spawn(worker, world, tmp_path, devices, *args):
    """The ranks' devices and a compile cache of their own (which check_compiled fills in a set order)."""
    env = {"TORCH_MLU_DEVICE_COUNT": str(devices), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        mp.spawn(worker, args=(world, str(tmp_path / "store"), *args), nprocs=world, join=True)
    finally:
        for key, value in saved.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value


def test_strategies_are_registered_once_dtensor_loads():
    import torch.distributed.tensor  # noqa: F401
    from torch.distributed.tensor import DTensor
    import torch_mlu
    aten = torch.ops.aten
    propagator = DTensor._op_dispatcher.sharding_propagator
    recorded = {(id(e.target), e.key) for e in torch_mlu.patches.applied()}
    for table, ops in (("op_strategy_funcs", [aten._scaled_dot_product_fused_attention_overrideable.default,
                                              aten._scaled_dot_product_fused_attention_overrideable_backward.default]),
                       ("op_single_dim_strategy_funcs", [aten._fused_sgd_.default, aten._fused_sgd_.tensor_lr,
                                                         aten._fused_adagrad_.default, aten._fused_adagrad_.tensor_lr,
                                                         aten._foreach_copy_.default])):
        strategies = getattr(propagator, table)
        for op in ops:
            assert op in strategies and (id(strategies), op) in recorded, (table, op)


def test_sdpa_sharded_by_heads_batch_and_queries_matches_one_device(tmp_path):
    spawn(dtensor_workers.sdpa_sharding_worker, 2, tmp_path, devices=2)


def test_llama_fsdp2_x_tp_matches_one_device(tmp_path):
    spawn(dtensor_workers.llama_2d_worker, 4, tmp_path, devices=4)


@pytest.mark.slow
@pytest.mark.training
def test_pytorch_examples_fsdp_tp_trains_on_4_devices(tmp_path):
    """The example unmodified, launched as its run_example.sh launches it (10 steps of a 2-layer Llama 2)."""
    env = dict(os.environ, TORCH_MLU_DEVICE_COUNT="4")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4",
                           "fsdp_tp_example.py"], cwd=dtensor_workers.TP_EXAMPLE, env=env, capture_output=True,
                          text=True, timeout=280)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "2D iter 9 complete" in out and "2D training successfully completed!" in out, out
    assert "does not have a sharding strategy" not in out, out
