"""PyTorch Lightning on mlu (Note [Lightning's mlu accelerator]): unmodified Lightning scripts with
`Trainer(accelerator="mlu")` on one device (fp32, bf16-mixed, 16-mixed) and under DDP on two, against the same
training written in plain PyTorch on the CPU."""

import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

lightning = pytest.importorskip("lightning", reason="lightning is in requirements-test.txt")

pytestmark = pytest.mark.training

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lightning_train  # noqa: E402


def run(*args):
    env = dict(os.environ, TORCH_MLU_DEVICE_COUNT="2")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "lightning_train.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=280)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return {r["precision"]: r for r in (json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
                                        if line.startswith("RESULT "))}


def reference(global_batch, dtype=None, shuffled=False):
    """Lightning's loop in plain PyTorch on the CPU: 2 epochs of SGD over batches of `global_batch` rows. Under
    DDP, Lightning's DistributedSampler shuffles training data (seed 0 + the epoch) and deals each rank every
    other row of that order, so a step sees the next `global_batch` rows of it, gradients averaged. fp16 steps go
    through a GradScaler as Lightning's 16-mixed does (it skips the steps whose scaled gradients overflow)."""
    model = lightning_train.Regression()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", enabled=dtype == torch.float16)
    x, y = lightning_train.data()
    for epoch in range(2):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch)) if shuffled else \
            torch.arange(len(x))
        for start in range(0, len(x), global_batch):
            rows = order[start:start + global_batch]
            with torch.autocast("cpu", dtype or torch.bfloat16, enabled=dtype is not None):
                loss = F.mse_loss(model.net(x[rows]), y[rows])
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    return [p.detach() for p in model.parameters()]


def check_params(result, want, **tol):
    for got, w in zip(result["params"], want):
        torch.testing.assert_close(torch.tensor(got), w, **tol)


@pytest.mark.slow
def test_one_device_fp32_bf16_and_fp16():
    results = run("mlu", 1, "auto", "32-true", "bf16-mixed", "16-mixed")
    for result in results.values():
        assert result["device"] == "mlu:0" and result["strategy"] == "SingleDeviceStrategy", result
    check_params(results["32-true"], reference(8))
    assert results["bf16-mixed"]["autocast"] == "mlu", results["bf16-mixed"]
    check_params(results["bf16-mixed"], reference(8, torch.bfloat16))
    assert results["16-mixed"]["autocast"] == "mlu" and results["16-mixed"]["scaler"] == "mlu", results["16-mixed"]
    check_params(results["16-mixed"], reference(8, torch.float16), rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_ddp_on_two_devices_over_cncl():
    result = run("mlu", 2, "ddp", "32-true")["32-true"]
    assert result["strategy"] == "DDPStrategy" and result["world"] == 2 and result["device"] == "mlu:0", result
    assert result["process_group"] == "cncl", result
    check_params(result, reference(16, shuffled=True), rtol=1e-5, atol=1e-6)


def test_registered_and_devices_parsed_as_lightning_parses_gpus():
    from lightning.pytorch.accelerators import AcceleratorRegistry
    from torch_mlu.lightning import MLUAccelerator
    assert AcceleratorRegistry["mlu"]["accelerator"] is MLUAccelerator
    count = torch.mlu.device_count()
    assert MLUAccelerator.parse_devices(-1) == list(range(count))
    assert MLUAccelerator.parse_devices("1") == [0] and MLUAccelerator.parse_devices([0]) == [0]
    assert MLUAccelerator.get_parallel_devices([0]) == [torch.device("mlu", 0)]
    with pytest.raises(ValueError, match=f"this process sees {count}"):
        MLUAccelerator.parse_devices(count + 1)
    with pytest.raises(ValueError, match="do not exist"):
        MLUAccelerator.parse_devices([count])
