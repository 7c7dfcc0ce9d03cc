"""torch.compile meets data parallelism: FSDP2 (with activation checkpointing and bf16 parameters) and DDP
(with Dynamo's DDPOptimizer, replayed as mlu graphs) compiled on 2 ranks, against eager / single-process
training.

Ranks are spawned processes (workers in compiled_dist_workers.py).
"""

import pytest

import compiled_dist_workers
from test_distributed_attention import spawn

pytestmark = pytest.mark.training


def test_compiled_fsdp2_with_checkpointing_and_bf16_matches_eager(tmp_path):
    spawn(compiled_dist_workers.compiled_fsdp2_worker, 2, tmp_path, devices=2)


def test_compiled_ddp_with_ddp_optimizer_and_graphs_matches_single_process(tmp_path):
    spawn(compiled_dist_workers.compiled_ddp_worker, 2, tmp_path, devices=2)
