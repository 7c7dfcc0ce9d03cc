"""An ordinary Lightning script (written for tests/test_lightning.py): a small regression model trained with
`Trainer(accelerator=..., devices=..., strategy=..., precision=...)` for each precision named on the command line.

    python tests/lightning_train.py ACCELERATOR DEVICES STRATEGY PRECISION [PRECISION ...]

Rank 0 prints one line per precision: RESULT <json> with the trained parameters and what Lightning chose.
"""
import json
import sys

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, index):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    return x, x.sum(1, keepdim=True)


if __name__ == "__main__":
    accelerator, devices, strategy, precisions = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    for precision in precisions:
        model = Regression()
        trainer = L.Trainer(accelerator=accelerator, devices=devices, strategy=strategy, precision=precision,
                            max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False)
        trainer.fit(model, DataLoader(TensorDataset(*data()), batch_size=8))
        if trainer.global_rank == 0:
            plugin = trainer.precision_plugin
            print("RESULT", json.dumps({
                "precision": precision, "params": [p.detach().cpu().tolist() for p in model.parameters()],
                "device": str(trainer.strategy.root_device), "strategy": type(trainer.strategy).__name__,
                "world": trainer.world_size, "process_group": trainer.strategy._process_group_backend
                if hasattr(trainer.strategy, "_process_group_backend") else None,
                "autocast": getattr(plugin, "device", None),
                "scaler": str(plugin.scaler._device) if getattr(plugin, "scaler", None) is not None else None}),
                flush=True)
