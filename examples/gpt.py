"""A GPT-style decoder (nanoGPT's shape) and a character-level corpus, shared by the demo and the benchmarks.

Pre-norm blocks: LayerNorm -> causal self-attention through F.scaled_dot_product_attention -> residual,
LayerNorm -> MLP (4x, GELU) -> residual; learned positions; the output head shares the token embedding.
"""
import math
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# Note [Demo corpus]: the licences under /usr/share/common-licenses (GPL, LGPL, GFDL, Apache, MPL, Artistic,
# ...: about 260 KB of English prose) ship with Debian's `base-files`, an Essential package, so every Debian
# machine has them and nothing needs downloading. Elsewhere the Python standard library's own sources stand in.
LICENSES_DIR = "/usr/share/common-licenses"


def default_corpus_files():
    if os.path.isdir(LICENSES_DIR):
        names = sorted(n for n in os.listdir(LICENSES_DIR) if not os.path.islink(os.path.join(LICENSES_DIR, n)))
        return [os.path.join(LICENSES_DIR, n) for n in names]
    stdlib = os.path.dirname(os.__file__)
    return [os.path.join(stdlib, n) for n in ("argparse.py", "collections/__init__.py", "dataclasses.py")]


class CharCorpus:
    """The text of `files` as one tensor of character ids; the last tenth is held out."""

    def __init__(self, files):
        text = "".join(open(f, encoding="utf-8", errors="replace").read() for f in files)
        if len(text) < 10_000:
            sys.exit(f"corpus too small ({len(text)} characters): pass --corpus with a larger text file")
        self.files = files
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        data = torch.tensor([self.index[c] for c in text], dtype=torch.long)
        split = int(0.9 * len(data))
        self.train, self.val = data[:split], data[split:]

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, s):
        return torch.tensor([self.index.get(c, 0) for c in s], dtype=torch.long)

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)

    def batch(self, split, batch_size, block_size, generator):
        """(inputs, targets) on the CPU: random windows of `block_size` characters and the same shifted by one."""
        data = self.train if split == "train" else self.val
        starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
        x = torch.stack([data[s:s + block_size] for s in starts])
        y = torch.stack([data[s + 1:s + 1 + block_size] for s in starts])
        return x, y


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    @torch.no_grad()
    def generate(self, idx, new_tokens, temperature=0.8, top_k=None, generator=None):
        """Appends `new_tokens` sampled characters to `idx` (batch, time)."""
        for _ in range(new_tokens):
            logits, _ = self(idx[:, -self.cfg.block_size:])
            logits = logits[:, -1, :].float() / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs.cpu(), 1, generator=generator).to(idx.device)], dim=1)
        return idx
