"""An ordinary CUDA training script (written for tests/test_gpu_migration.py): MLP regression with AMP.

fp16 autocast + GradScaler, a DataLoader with pinned memory, torch.cuda memory, stream and event calls,
a checkpoint saved and reloaded with map_location="cuda:0". Falls back to the CPU without CUDA, as such
scripts do. Prints one line: RESULT <json>.
"""
import json
import os
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()
device = torch.device("cuda:0" if use_cuda else "cpu")
torch.manual_seed(0)
if use_cuda:
    torch.cuda.manual_seed_all(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False

inputs = torch.randn(256, 16)
targets = (inputs @ torch.randn(16, 1)).tanh()
loader = DataLoader(TensorDataset(inputs, targets), batch_size=32, shuffle=False, pin_memory=use_cuda)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)
side = torch.cuda.Stream() if use_cuda else None

losses = []
for epoch in range(3):
    total = 0.0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda" if use_cuda else "cpu", dtype=torch.float16, enabled=use_cuda):
            loss = nn.functional.mse_loss(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
    losses.append(total / len(loader))

if use_cuda:
    assert next(model.parameters()).is_cuda
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        start.record()
        probe = model(inputs[:8].cuda(non_blocking=True))
        end.record()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert start.elapsed_time(end) >= 0
    assert torch.cuda.memory_allocated() > 0 and torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.empty_cache()
    assert "Memory" in torch.cuda.memory_summary() or torch.cuda.memory_reserved() >= 0

path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "mlp.pt")
torch.save({"model": model.state_dict(), "scaler": scaler.state_dict()}, path)
state = torch.load(path, map_location="cuda:0" if use_cuda else "cpu")
model.load_state_dict(state["model"])
weights = torch.cat([p.detach().float().flatten().cpu() for p in model.parameters()])
print("RESULT " + json.dumps({"device": str(next(model.parameters()).device),
                              "loaded_on": str(state["model"]["0.weight"].device),
                              "losses": losses, "weights": weights.tolist()}))
