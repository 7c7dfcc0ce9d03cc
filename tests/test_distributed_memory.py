"""A model bigger than a device, trained: FSDP2 with CPU offload and activation checkpointing or offloading, on
2 ranks whose devices are made small, with and without expandable segments; the same model without them runs
out of memory with a clear error (workers in big_model_workers.py)."""

import json

import pytest

import big_model_workers
from test_distributed_attention import spawn

pytestmark = pytest.mark.training

CAPACITY = "48M"


@pytest.mark.parametrize("activations", ["checkpoint", "offload"])
def test_fsdp2_offload_trains_a_model_at_80_percent_of_a_device(activations, tmp_path, monkeypatch):
    """With expandable segments: fixed ones (20 MiB each for blocks of 1-10 MiB, as CUDA's) leave a device this
    small fragmented (32 of its 48 MiB reserved and unused when the next block's all-gather asks for 1 MiB)."""
    monkeypatch.setenv("TORCH_MLU_DEVICE_MEMORY", CAPACITY)
    monkeypatch.setenv("PYTORCH_MLU_ALLOC_CONF", "expandable_segments:True")
    spawn(big_model_workers.offloaded_training_worker, 2, tmp_path, 2, activations, str(tmp_path))
    report = json.loads((tmp_path / f"{activations}.json").read_text())
    assert report["num_ooms"] == 0 and report["expandable"], report
    print(report)


def test_the_same_model_runs_out_of_memory_on_one_device(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_MLU_DEVICE_MEMORY", CAPACITY)
    spawn(big_model_workers.one_device_runs_out_worker, 1, tmp_path, 1)
