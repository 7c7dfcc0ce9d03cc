"""torchtitan 0.2.2 trains its debug Llama 3 on mlu, unmodified, under torchrun: one device, tensor parallelism
(with sequence parallelism and loss_parallel) on 2 ranks, FSDP2 x TP on 4, and FSDP2 with its per-block
torch.compile on 2, each equal to the one-device eager run.

torchtitan runs from a site of its own (Note [torchtitan's own site] in tools/bootstrap.sh). 0.3.0, the newest,
needs a PyTorch after 2.13 (it calls torch.distributed.set_timeout after the first step, and its default
spmd_types backend expects parameters DTensors on the whole mesh); 0.2.2 runs on 2.13. It has no CPU mode
(without an accelerator it picks cuda), so the oracle is its one-device run on mlu, whose ops the rest of the
suite holds to the CPU's.

The run is its debug configuration (tests/torchtitan_assets/debug_model.toml, with its test tokenizer; both
from the repository at v0.2.2) with a short sequence, 3 steps, and a dataset written here: one document
repeated, so every data-parallel rank reads the same tokens as the one-device run. All runs load one seed
checkpoint (torchtitan's way to start parallel runs from the same weights) and train in float32 (FSDP2's
default bf16 parameters would differ from one device by design). Compile with TP is not run: torchtitan's
compiled TP blocks fail in the backward on the CPU with Gloo just as on mlu, in PyTorch 2.13 ("'Tensor' object has
no attribute '_local_tensor'" in Redistribute's backward; with activation checkpointing, a DeviceMesh among
the tensors AOTAutograd saves).
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.training]

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / ".venv" / "torchtitan-site"
ASSETS = Path(__file__).resolve().parent / "torchtitan_assets"
STEP = re.compile(r"step:\s+(\d+)\s+loss:\s+([0-9.]+)")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    if not (SITE / "torchtitan").is_dir():
        pytest.skip(f"torchtitan is not installed in {SITE} (tools/bootstrap.sh installs it)")
    work = tmp_path_factory.mktemp("torchtitan")
    tokenizer = work / "tests" / "assets" / "tokenizer"
    tokenizer.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(ASSETS / name, tokenizer / name)
    rng = random.Random(0)
    words = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()
    text = " ".join(rng.choice(words) for _ in range(4000))
    data = work / "tests" / "assets" / "c4_test"
    data.mkdir(parents=True)
    (data / "data.json").write_text("".join(json.dumps({"text": text}) + "\n" for _ in range(4)))
    train(work, 1, "seed", "--checkpoint.create_seed_checkpoint", "--parallelism.data_parallel_shard_degree", "1")
    return work


def train(work, ranks, name, *overrides):
    """torchtitan's own entry point under torchrun; the losses it logs, by step."""
    env = dict(os.environ, PYTHONPATH=str(SITE), TORCH_MLU_DEVICE_COUNT="4", HF_DATASETS_OFFLINE="1",
               HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    load = [] if name == "seed" else ["--checkpoint.initial_load_path", str(work / "seed" / "step-0")]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
               "-m", "torchtitan.train", "--job.config_file", str(ASSETS / "debug_model.toml"),
               "--training.steps", "3", "--training.seq_len", "128", "--training.local_batch_size", "2",
               "--training.mixed_precision_param", "float32", "--debug.seed", "0",
               "--metrics.disable_color_printing", "--checkpoint.enable", "--checkpoint.interval", "1000",
               "--checkpoint.folder", str(work / name), "--comm.init_timeout_seconds", "120",
               "--comm.train_timeout_seconds", "120", *load, *overrides]
    run = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=420)
    assert run.returncode == 0, f"torchtitan ({name}) failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    return {int(step): float(loss) for step, loss in STEP.findall(run.stdout + run.stderr)}


@pytest.fixture(scope="module")
def one_device(workdir):
    losses = train(workdir, 1, "one_device")
    assert sorted(losses) == [1, 2, 3] and losses[3] < losses[1], losses
    return losses


@pytest.mark.parametrize("ranks,dp,tp,compiled", [(2, 1, 2, False), (4, 2, 2, False), (2, 2, 1, True)],
                         ids=["tp2", "fsdp2_x_tp2", "fsdp2_compiled"])
def test_parallel_runs_equal_one_device(workdir, one_device, ranks, dp, tp, compiled):
    """TP shards attention heads through mlu's SDPA sharding rules (Note [Sharding mlu's attention]) and the
    cross-entropy over the vocabulary (loss_parallel, whose .item() once deadlocked cncl: Note [Host-made Gloo
    works carry no Python state]); FSDP2 shards the rest over the data-parallel dimension; compiled, each block
    and the loss go through mlu's Inductor backend."""
    losses = train(workdir, ranks, f"dp{dp}_tp{tp}{'_compiled' if compiled else ''}",
                   "--parallelism.data_parallel_shard_degree", str(dp), "--parallelism.tensor_parallel_degree",
                   str(tp), *(["--compile.enable"] if compiled else []))
    assert sorted(losses) == [1, 2, 3], losses
    for step, loss in one_device.items():
        assert losses[step] == pytest.approx(loss, abs=5e-4), (step, losses, one_device)
