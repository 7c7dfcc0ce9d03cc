"""An ordinary DeepSpeed script (written for tests/test_deepspeed.py), launched by torchrun on the accelerator
DeepSpeed picks (DS_ACCELERATOR=mlu: its own MLU accelerator, backend cncl, FusedAdam through
torch.ops.torch_mlu.fused_adam; DS_ACCELERATOR=cpu: the reference, Gloo and torch's AdamW).

    torchrun --nproc_per_node 2 tests/deepspeed_train.py STAGE:DTYPE[:offload] ...   (e.g. 2:fp32 3:bf16)

":offload" keeps the optimizer on the CPU (ZeRO-Offload: DeepSpeedCPUAdam, which DeepSpeed builds on first use).

Each configuration trains the same small MLP for 3 steps on every rank's slice of the same batches; rank 0 prints
RESULT <json> with the full fp32 parameters (gathered from the ZeRO shards) and the optimizer DeepSpeed built.
"""
import json
import os
import sys

import deepspeed
import torch
import torch.nn as nn
import torch.nn.functional as F
from deepspeed.accelerator import get_accelerator
from deepspeed.utils import safe_get_full_fp32_param


def train(stage, dtype, offload, rank, world):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    # torch_adam on the CPU: DeepSpeed's CPU accelerator has no FusedAdam; weight_decay set, as AdamW's and
    # FusedAdam's defaults differ.
    zero = {"stage": stage, **({"offload_optimizer": {"device": "cpu"}} if offload else {})}
    config = {"train_micro_batch_size_per_gpu": 4, "steps_per_print": 1000, "zero_optimization": zero,
              "optimizer": {"type": "Adam", "params": {"lr": 1e-2, "weight_decay": 0.0,
                                                       "torch_adam": get_accelerator().device_name() == "cpu"}}}
    if dtype == "bf16":
        config["bf16"] = {"enabled": True}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x = torch.randn(4 * world, 16, generator=g)[4 * rank:4 * rank + 4].to(engine.device)
        out = engine(x.bfloat16() if dtype == "bf16" else x).float()
        loss = F.mse_loss(out, x.flip(-1))
        engine.backward(loss)
        engine.step()
    params = [safe_get_full_fp32_param(p).detach().cpu().tolist() for p in engine.module.parameters()]
    optimizer = getattr(engine.optimizer, "optimizer", engine.optimizer)
    return {"stage": stage, "dtype": dtype, "offload": offload, "device": str(engine.device),
            "optimizer": type(optimizer).__name__, "backend": torch.distributed.get_backend(), "params": params}


if __name__ == "__main__":
    deepspeed.init_distributed()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    for spec in sys.argv[1:]:
        stage, dtype, *offload = spec.split(":")
        result = train(int(stage), dtype, offload == ["offload"], rank, world)
        if rank == 0:
            print("RESULT", json.dumps(result), flush=True)
    # Before the interpreter finalizes: a Gloo work still held by its loop thread would otherwise release its Python
    # tensors there, and the thread, taking the GIL of a finalizing interpreter, aborts the process (seen in the
    # CPU reference run, stock torch and DeepSpeed: "terminate called without an active exception").
    torch.distributed.destroy_process_group()
