"""An ordinary Hugging Face Trainer script (written for tests/test_hf_trainer.py), launched by torchrun: a small
GPT-2 built from its config, trained 4 steps with `Trainer` for each mode named on the command line.

    torchrun --nproc_per_node 2 tests/hf_trainer_train.py mlu|cpu OUTPUT_DIR ddp|fsdp ...

ddp: the Trainer's own data parallelism (on mlu: device mlu:LOCAL_RANK, backend cncl, chosen by transformers
itself); fsdp: `TrainingArguments(fsdp="full_shard", fsdp_config={"fsdp_version": 2})`, which the Trainer hands to
accelerate's FSDP plugin. Rank 0 prints RESULT <json> per mode with the losses and the full parameters.
"""
import json
import sys

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(Dataset):
    def __init__(self):
        self.ids = torch.randint(0, 64, (32, 16), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def train(on_cpu, output_dir, mode):
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)  # no dropout: the devices' random streams differ
    fsdp = {"fsdp": "full_shard", "fsdp_config": {"fsdp_version": 2, "transformer_layer_cls_to_wrap": ["GPT2Block"]}}
    args = TrainingArguments(output_dir=output_dir, per_device_train_batch_size=4, max_steps=4, learning_rate=1e-3,
                             logging_steps=1, save_strategy="no", report_to=[], use_cpu=on_cpu, seed=0, data_seed=0,
                             disable_tqdm=True, **(fsdp if mode == "fsdp" else {}))
    trainer = Trainer(model=GPT2LMHeadModel(config), args=args, train_dataset=Tokens())
    trainer.train()
    params = [p.full_tensor() if hasattr(p, "full_tensor") else p for p in trainer.model.parameters()]
    flat = torch.cat([p.detach().float().cpu().flatten() for p in params])
    if trainer.is_world_process_zero():
        print("RESULT", json.dumps({
            "mode": mode, "model": type(trainer.model).__name__, "device": str(args.device),
            "backend": torch.distributed.get_backend(), "world": args.world_size,
            "losses": [h["loss"] for h in trainer.state.log_history if "loss" in h], "params": flat.tolist()}),
            flush=True)


if __name__ == "__main__":
    for mode in sys.argv[3:]:
        train(sys.argv[1] == "cpu", sys.argv[2], mode)
