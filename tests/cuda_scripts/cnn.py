"""An ordinary CUDA training script (written for tests/test_gpu_migration.py): a small CNN, float32.

model.cuda(), .cuda(non_blocking=True), cudnn flags, device name / properties, legacy CUDA tensor types,
torch.cuda.synchronize. Falls back to the CPU without CUDA. Prints one line: RESULT <json>.
"""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


torch.manual_seed(0)
images, labels = torch.randn(64, 3, 16, 16), torch.randint(0, 10, (64,))
model = Net()
if torch.cuda.is_available():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False
    model = model.cuda()
    name, properties = torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0)
    assert isinstance(name, str) and properties.total_memory > 0, (name, properties)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

losses = []
for step in range(4):
    for i in range(0, 64, 16):
        x, y = images[i:i + 16], labels[i:i + 16]
        if torch.cuda.is_available():
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            assert x.type() == "torch.cuda.FloatTensor" or x.is_cuda
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    losses.append(loss.item())
if torch.cuda.is_available():
    torch.cuda.synchronize()
    scratch = torch.zeros(2).type(torch.cuda.FloatTensor)
    assert isinstance(scratch, torch.cuda.FloatTensor)

model.eval()
with torch.no_grad():
    logits = model(images[:8].to(next(model.parameters()).device)).cpu()
print("RESULT " + json.dumps({"device": str(next(model.parameters()).device), "losses": losses,
                              "logits": logits.flatten().tolist(),
                              "running_mean": model.bn1.running_mean.cpu().tolist()}))
