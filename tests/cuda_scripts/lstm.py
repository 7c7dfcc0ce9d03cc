"""An ordinary CUDA training script (written for tests/test_gpu_migration.py): an LSTM language model.

torch.device("cuda"), tensors made with device=, Adam, gradient clipping, torch.cuda RNG state calls.
Falls back to the CPU without CUDA. Prints one line: RESULT <json>.
"""
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
vocab, hidden = 50, 32


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


model = LM().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randint(0, vocab, (8, 21)).to(device)
if device.type == "cuda":
    rng = torch.cuda.get_rng_state()
    torch.cuda.set_rng_state(rng)
    mask = torch.ones(8, 20, device="cuda", dtype=torch.bool)
else:
    mask = torch.ones(8, 20, device=device, dtype=torch.bool)

losses = []
for step in range(6):
    h0 = torch.zeros(2, 8, hidden, device=device)
    c0 = torch.zeros(2, 8, hidden, device=device)
    logits, _ = model(data[:, :-1], (h0, c0))
    loss = nn.functional.cross_entropy(logits[mask], data[:, 1:][mask])
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"device": str(data.device), "losses": losses,
                              "head": model.head.weight.detach().cpu().flatten().tolist()}))
