"""DeepSpeed with its own MLU accelerator (clients.md): ZeRO-2 in fp32 and ZeRO-3 in bf16 on 2 ranks over cncl,
FusedAdam through torch.ops.torch_mlu.fused_adam, and ZeRO-Offload (DeepSpeedCPUAdam, built by DeepSpeed's op
builder on first use: ~40 s of one core), against the same script on DeepSpeed's CPU accelerator."""

import json
import os
import subprocess
import sys

import pytest
import torch

pytest.importorskip("deepspeed", reason="deepspeed is in requirements-test.txt")

pytestmark = pytest.mark.training

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepspeed_train.py")
# (mlu configuration, the CPU one it must equal)
CONFIGS = [("2:fp32", "2:fp32"), ("3:bf16", "3:bf16"), ("2:fp32:offload", "2:fp32")]


def run(accelerator, configs, tmp_path):
    env = dict(os.environ, DS_ACCELERATOR=accelerator, TORCH_MLU_DEVICE_COUNT="2")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           SCRIPT, *configs], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


@pytest.mark.slow
def test_zero2_and_zero3_match_deepspeed_on_the_cpu(tmp_path):
    mlu = run("mlu", [m for m, _ in CONFIGS], tmp_path)
    references = list(dict.fromkeys(c for _, c in CONFIGS))
    cpu = dict(zip(references, run("cpu", references, tmp_path)))
    assert len(mlu) == len(CONFIGS), mlu
    for got, (_, reference) in zip(mlu, CONFIGS):
        want = cpu[reference]
        what = f"ZeRO-{got['stage']} {got['dtype']}{' offload' if got['offload'] else ''}"
        optimizer = "DeepSpeedCPUAdam" if got["offload"] else "FusedAdam"
        assert got["device"] == "mlu:0" and got["backend"] == "cncl" and got["optimizer"] == optimizer, got
        assert want["device"] == "cpu", want
        tol = {"rtol": 1e-5, "atol": 1e-6} if got["dtype"] == "fp32" else {"rtol": 1.6e-2, "atol": 1e-3}
        for g, w in zip(got["params"], want["params"]):
            torch.testing.assert_close(torch.tensor(g), torch.tensor(w), msg=lambda m: f"{what}: {m}", **tol)
