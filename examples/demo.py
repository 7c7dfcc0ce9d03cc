"""The main demo: a GPT-style character model trained on `mlu`, then the same steps on the CPU for comparison.

Run with `make demo` (or `.venv/bin/python examples/demo.py --help` for the options). It trains a ~3M-parameter
decoder (examples/gpt.py) on the licence texts every Debian machine carries (Note [Demo corpus] in gpt.py) with
bfloat16 autocast and AdamW, shows a progress bar, prints a generated sample, then runs the first steps again
from the same initial weights and batches on the CPU and prints both throughputs. The loss curves of both
devices and the held-out loss go to a PNG.
"""
import argparse
import math
import os
import statistics
import sys
import time
import warnings

import torch
from tqdm import tqdm

import torch_mlu
from gpt import GPT, CharCorpus, GPTConfig, default_corpus_files

SIZES = {  # name -> (layers, heads, width)
    "tiny": (2, 2, 128),
    "small": (4, 4, 256),
    "medium": (6, 6, 384),
}
PRECISIONS = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--steps", type=int, default=800, help="training steps on --device (default 800)")
    p.add_argument("--size", choices=SIZES, default="small", help="model size: tiny / small (3.2M) / medium")
    p.add_argument("--device", default="mlu", help="device to train on (default mlu)")
    p.add_argument("--precision", choices=PRECISIONS, default="bf16", help="autocast dtype, or fp32 (default bf16)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=128, help="characters of context (default 128)")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (warm-up, then cosine decay)")
    p.add_argument("--compare-device", default="cpu", help="device that repeats the first steps (default cpu)")
    p.add_argument("--compare-steps", type=int, default=30, help="steps run on --compare-device (0: skip)")
    p.add_argument("--compare-seconds", type=float, default=60,
                   help="time bound of the comparison: it stops at the first read-back past it (every 2 steps),\n"
                        "after at least 4 steps (default 60; where the compare device has no fast path for the\n"
                        "precision, as a CPU without AVX-512 has none for bf16, 30 steps take minutes); 0: no bound")
    p.add_argument("--sample-chars", type=int, default=300, help="length of the generated sample")
    p.add_argument("--corpus", nargs="+", help="text files to train on (default: /usr/share/common-licenses/*)")
    p.add_argument("--plot", default="demo_loss.png", help="where to write the loss plot ('' to skip)")
    p.add_argument("--seed", type=int, default=1337)
    return p.parse_args(argv)


def learning_rate(step, args):
    warmup = max(1, min(50, args.steps // 10))
    if step < warmup:
        return args.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, args.steps - warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def build(corpus, args, device):
    """The model and AdamW from the seed alone, so every device starts from the same weights."""
    layers, heads, width = SIZES[args.size]
    torch.manual_seed(args.seed)
    cfg = GPTConfig(vocab_size=corpus.vocab_size, block_size=args.block_size, n_layer=layers, n_head=heads,
                    n_embd=width)
    model = GPT(cfg).to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), fused=True)
    return model, opt


def train(corpus, args, device, steps, desc, eval_every=0, time_bound=0, log_every=10):
    """Trains for `steps`; returns (model, losses per step, seconds per step of each logged interval of
    `log_every` steps, [(step, held-out loss)] every `eval_every` steps and at the end). With `time_bound`
    (seconds), stops early at the first read-back past it, with at least two intervals logged (the rate leaves the
    first one out).

    The loop reads the loss back only every `log_every` steps, so the host queues a whole interval of work
    ahead of the device (the asynchronous device overlaps Python with the kernels)."""
    model, opt = build(corpus, args, device)
    dtype = PRECISIONS[args.precision]
    gen = torch.Generator().manual_seed(args.seed)
    losses, interval_times, pending, val_points = [], [], [], []
    bar = tqdm(total=steps, desc=desc, unit="step", dynamic_ncols=True, file=sys.stdout)
    start = began = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, args)
        x, y = corpus.batch("train", args.batch_size, args.block_size, gen)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(torch.device(device).type, dtype=dtype or torch.float32, enabled=dtype is not None):
            _, loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        pending.append(loss.detach())
        if len(pending) == log_every or step == steps - 1:
            losses += torch.stack(pending).float().cpu().tolist()  # one read-back per interval
            now = time.perf_counter()
            interval_times.append((now - start) / len(pending))
            start = now
            bar.set_postfix(loss=f"{losses[-1]:.3f}", tok_s=f"{args.batch_size * args.block_size / interval_times[-1]:,.0f}")
            bar.update(len(pending))
            pending = []
            if time_bound and len(interval_times) >= 2 and now - began > time_bound:
                break
        if eval_every and ((step + 1) % eval_every == 0 or step == steps - 1):
            val_points.append((step + 1, evaluate(model, corpus, args, device)))
            start = time.perf_counter()  # the evaluation is not training time
    bar.close()
    return model, losses, interval_times, val_points


@torch.no_grad()
def evaluate(model, corpus, args, device, batches=8):
    model.eval()
    gen = torch.Generator().manual_seed(args.seed + 1)
    dtype = PRECISIONS[args.precision]
    total = 0.0
    for _ in range(batches):
        x, y = corpus.batch("val", args.batch_size, args.block_size, gen)
        with torch.autocast(torch.device(device).type, dtype=dtype or torch.float32, enabled=dtype is not None):
            _, loss = model(x.to(device), y.to(device))
        total += loss.float().item()
    model.train()
    return total / batches


def tokens_per_second(interval_times, args):
    """Median over the logged intervals, the first (warm-up: allocator, packing caches) left out."""
    steady = interval_times[1:] or interval_times
    return args.batch_size * args.block_size / statistics.median(steady)


def plot(path, curves, val_points):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, losses in curves:
        ax.plot(range(1, len(losses) + 1), losses, label=label, linewidth=1)
    if val_points:
        steps, values = zip(*val_points)
        ax.plot(steps, values, "o-", label="held-out loss", color="black")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / character)")
    ax.set_title("GPT character model on the software MLU")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter("once", UserWarning)
    corpus = CharCorpus(args.corpus or default_corpus_files())
    print(f"torch {torch.__version__}, torch_mlu {torch_mlu.__version__}; {torch.mlu.get_device_name(0)}, "
          f"{torch.get_num_threads()} host threads")
    print(f"corpus: {len(corpus.files)} files ({os.path.dirname(corpus.files[0])}), "
          f"{len(corpus.train) + len(corpus.val):,} characters, vocabulary {corpus.vocab_size}")

    model, losses, times, val_points = train(corpus, args, args.device, args.steps, f"train on {args.device}",
                                             eval_every=max(1, args.steps // 4))
    layers, heads, width = SIZES[args.size]
    print(f"model: {layers} layers, width {width}, {model.num_parameters() / 1e6:.2f}M parameters; "
          f"{args.precision}; loss {losses[0]:.3f} -> {statistics.mean(losses[-10:]):.3f} (last 10 steps)")
    print("held-out loss: " + ", ".join(f"{v:.3f} (step {s})" for s, v in val_points))

    prompt = "This License "
    gen = torch.Generator().manual_seed(args.seed)
    with torch.autocast(torch.device(args.device).type, dtype=PRECISIONS[args.precision] or torch.float32,
                        enabled=PRECISIONS[args.precision] is not None):
        ids = model.generate(corpus.encode(prompt)[None].to(args.device), args.sample_chars, top_k=20, generator=gen)
    print("\n--- sample " + "-" * 60)
    print(corpus.decode(ids[0].tolist()))
    print("-" * 71 + "\n")

    rate = tokens_per_second(times, args)
    result = {"losses": losses, "val_points": val_points, "rate": rate, "sample": corpus.decode(ids[0].tolist())}
    curves = [(f"train loss on {args.device}", losses)]
    compare_steps = min(args.compare_steps, args.steps)
    if compare_steps > 0 and args.compare_device != args.device:
        _, cmp_losses, cmp_times, _ = train(corpus, args, args.compare_device, compare_steps,
                                            f"same steps on {args.compare_device}", time_bound=args.compare_seconds,
                                            log_every=2)
        if len(cmp_losses) < compare_steps:
            print(f"the comparison stopped after {len(cmp_losses)} of {compare_steps} steps: past its time bound "
                  f"(--compare-seconds {args.compare_seconds:g})")
        cmp_rate = tokens_per_second(cmp_times, args)
        curves.append((f"train loss on {args.compare_device} (first {len(cmp_losses)} steps)", cmp_losses))
        result.update(compare_losses=cmp_losses, compare_rate=cmp_rate)
        drift = max(abs(a - b) for a, b in zip(losses, cmp_losses))
        print(f"throughput ({args.precision}, batch {args.batch_size} x {args.block_size} characters, median over "
              f"10-step intervals on {args.device}, 2-step ones on {args.compare_device}):")
        print(f"  {args.device:>6}: {rate:9,.0f} characters/s")
        print(f"  {args.compare_device:>6}: {cmp_rate:9,.0f} characters/s")
        print(f"  {args.device} / {args.compare_device}: {rate / cmp_rate:.2f}x; largest loss difference over the "
              f"shared steps {drift:.4f}")
    else:
        print(f"throughput on {args.device}: {rate:,.0f} characters/s")

    if args.plot:
        plot(args.plot, curves, val_points)
        print(f"loss plot: {os.path.abspath(args.plot)}")
    report = torch_mlu.fallback_report()
    print(f"ops that ran through the CPU fallback: {report or 'none'}")
    return result


if __name__ == "__main__":
    main()
