"""An ordinary CUDA DDP script (written for tests/test_gpu_migration.py), launched by torchrun.

NCCL on CUDA (set_device, init_process_group("nccl"), DDP with device_ids, collectives); Gloo on the CPU
without CUDA. Rank 0 prints one line: RESULT <json>.
"""
import json
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = DDP(torch.nn.Linear(8, 4).to(device), device_ids=[local_rank], output_device=local_rank)
else:
    dist.init_process_group("gloo")
    device = torch.device("cpu")
    model = DDP(torch.nn.Linear(8, 4))
torch.manual_seed(0)
model.module.load_state_dict(torch.nn.Linear(8, 4).state_dict())  # the same start on every rank and device
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
generator = torch.Generator().manual_seed(dist.get_rank())
for _ in range(3):
    loss = model(torch.randn(16, 8, generator=generator).to(device)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
t = torch.ones(4, device=device) * (dist.get_rank() + 1)
dist.all_reduce(t)
weights = [torch.empty_like(model.module.weight) for _ in range(dist.get_world_size())]
dist.all_gather(weights, model.module.weight.detach())
assert all(torch.equal(w, weights[0]) for w in weights), "replicas diverged"
dist.barrier()
if dist.get_rank() == 0:
    print("RESULT " + json.dumps({"backend": dist.get_backend(), "device": str(model.module.weight.device),
                                  "all_reduce": t.tolist(), "weight": model.module.weight.detach().cpu().flatten().tolist()}))
dist.destroy_process_group()
