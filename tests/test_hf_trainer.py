"""The Hugging Face Trainer under torchrun on mlu with no change to the script: plain data parallelism over cncl,
and FSDP2 through accelerate's FSDP plugin, each equal to the Trainer's own run on the CPU (Gloo)."""

import json
import os
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.training

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_trainer_train.py")


def run(device, modes, tmp_path):
    env = dict(os.environ, TORCH_MLU_DEVICE_COUNT="2")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           SCRIPT, device, str(tmp_path / device), *modes], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {r["mode"]: r for r in (json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
                                   if line.startswith("RESULT "))}


@pytest.mark.slow
def test_ddp_and_fsdp2_match_the_trainer_on_the_cpu(tmp_path):
    mlu, cpu = run("mlu", ["ddp", "fsdp"], tmp_path), run("cpu", ["ddp"], tmp_path)["ddp"]
    assert cpu["device"] == "cpu:0" and cpu["backend"] == "gloo", cpu
    assert mlu["fsdp"]["model"].startswith("FSDP"), mlu["fsdp"]["model"]  # fully_shard's class
    for mode, got in mlu.items():
        assert got["device"] == "mlu:0" and got["backend"] == "cncl" and got["world"] == 2, got
        torch.testing.assert_close(torch.tensor(got["losses"]), torch.tensor(cpu["losses"]), msg=mode)
        # AdamW moves a weight by ~lr whatever its gradient's size, so a gradient near 0 amplifies rounding.
        torch.testing.assert_close(torch.tensor(got["params"]), torch.tensor(cpu["params"]), rtol=1e-4, atol=1e-5,
                                   msg=lambda m, mode=mode: f"{mode}: {m}")
