"""Video action recognition on synthetic clips with a (2+1)-D CNN, trained on mlu in bfloat16 autocast with
channels-last-3d activations; states its held-out accuracy.

Each clip is 8 frames of 32x32 RGB: a shape (a disc, a square or a bar) of random colour and size over a
cluttered, noisy background, doing one of six motions at a random speed from a random start: moving right,
left, down or up, rotating in place (the bar turns; discs and squares turn as bars too), or pulsing (growing
and shrinking). A single frame cannot tell the motions apart: the model must compare frames. The network
factorises each 3-D convolution into a spatial (1x3x3) and a temporal (3x1x1) one ((2+1)-D, Tran et al.
2018), with batch norm, 3-D max pooling over space and a global average over space and time. The script
prints the held-out accuracy on each device, the ops that went through the CPU fallback (none, on mlu), and
draws the confusion matrix into a PNG.

    .venv/bin/python examples/video_actions.py [--devices mlu cpu] [--epochs 10] [--fast] [--plot video_actions.png]
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_mlu
from applications import (argument_parser, check_stated, optimizer_step, parse_options, progress, pyplot,
                          report_fallback, save)

STATED_ACCURACY = 0.95  # full run, held-out
STATED_ACCURACY_FAST = 0.8  # --fast
FRAMES, SIZE = 8, 32
MOTIONS = ("right", "left", "down", "up", "rotate", "pulse")


def render_clip(motion, g):
    """[3, FRAMES, SIZE, SIZE] in [0, 1]."""
    yy, xx = torch.meshgrid(torch.arange(SIZE) + 0.5, torch.arange(SIZE) + 0.5, indexing="ij")
    background = 0.3 * F.interpolate(torch.rand(1, 3, 4, 4, generator=g), size=(SIZE, SIZE), mode="bilinear",
                                     align_corners=False)[0]
    for _ in range(3):  # static clutter: small dim squares
        x0, y0 = torch.randint(0, SIZE - 4, (2,), generator=g).tolist()
        background[:, y0:y0 + 3, x0:x0 + 3] += 0.25 * torch.rand(3, 1, 1, generator=g)
    shape = int(torch.randint(0, 3, (), generator=g))
    colour = 0.55 + 0.45 * torch.rand(3, 1, generator=g)
    radius = 3.5 + 2.5 * torch.rand((), generator=g).item()
    speed = 1.2 + 1.3 * torch.rand((), generator=g).item()  # pixels (or degrees / 10) per frame
    margin = radius + speed * FRAMES / 2 + 1
    cx0, cy0 = (margin + (SIZE - 2 * margin) * torch.rand(2, generator=g)).tolist()
    angle0 = math.pi * torch.rand((), generator=g).item()
    phase = 2 * math.pi * torch.rand((), generator=g).item()
    frames = []
    for t in range(FRAMES):
        s = t - (FRAMES - 1) / 2
        cx, cy, angle, r = cx0, cy0, angle0, radius
        if motion == "right":
            cx += speed * s
        elif motion == "left":
            cx -= speed * s
        elif motion == "down":
            cy += speed * s
        elif motion == "up":
            cy -= speed * s
        elif motion == "rotate":
            angle += 0.25 * speed * t
        else:  # pulse
            r = radius * (1 + 0.45 * math.sin(phase + 0.9 * t))
        dx, dy = xx - cx, yy - cy
        if motion == "rotate" or shape == 2:  # a bar along `angle`
            along = dx * math.cos(angle) + dy * math.sin(angle)
            across = -dx * math.sin(angle) + dy * math.cos(angle)
            mask = (along.abs() <= r * 1.4) & (across.abs() <= max(r * 0.35, 1.0))
        elif shape == 0:
            mask = dx ** 2 + dy ** 2 <= r ** 2
        else:
            mask = (dx.abs() <= r * 0.85) & (dy.abs() <= r * 0.85)
        frame = background.clone()
        frame[:, mask] = colour
        frames.append(frame + 0.06 * torch.randn(3, SIZE, SIZE, generator=g))
    return torch.stack(frames, 1).clamp(0, 1)


def make_clips(n_per_motion, seed):
    g = torch.Generator().manual_seed(seed)
    clips, labels = [], []
    for label, motion in enumerate(MOTIONS):
        for _ in range(n_per_motion):
            clips.append(render_clip(motion, g))
            labels.append(label)
    return torch.stack(clips), torch.tensor(labels)


class SpatioTemporal(nn.Sequential):
    """A (2+1)-D convolution: 1x3x3 over space, then 3x1x1 over time, each with batch norm and ReLU."""

    def __init__(self, c_in, c_out, mid=None):
        mid = mid or c_out
        super().__init__(nn.Conv3d(c_in, mid, (1, 3, 3), padding=(0, 1, 1), bias=False), nn.BatchNorm3d(mid),
                         nn.ReLU(), nn.Conv3d(mid, c_out, (3, 1, 1), padding=(1, 0, 0), bias=False),
                         nn.BatchNorm3d(c_out), nn.ReLU())


class ActionNet(nn.Module):
    def __init__(self, n_classes=len(MOTIONS)):
        super().__init__()
        self.features = nn.Sequential(
            SpatioTemporal(3, 24), nn.MaxPool3d((1, 2, 2)),  # 16x16
            SpatioTemporal(24, 48), nn.MaxPool3d((1, 2, 2)),  # 8x8
            SpatioTemporal(48, 64), nn.MaxPool3d((2, 2, 2)),  # 4 frames, 4x4
            SpatioTemporal(64, 96))
        self.head = nn.Linear(96, n_classes)

    def forward(self, clips):
        return self.head(self.features(clips).mean((2, 3, 4)))


def fit(device, args):
    """Trains on `device`; returns (held-out accuracy, confusion matrix, seconds, ops that fell back)."""
    x_train, y_train = make_clips(args.train_per_motion, seed=args.seed)
    x_test, y_test = make_clips(args.test_per_motion, seed=args.seed + 1)
    torch.manual_seed(args.seed)
    model = ActionNet().to(device).to(memory_format=torch.channels_last_3d)
    steps_per_epoch = math.ceil(len(y_train) / args.batch_size)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.epochs * steps_per_epoch)
    order = torch.Generator().manual_seed(args.seed)
    device_type = torch.device(device).type
    torch_mlu.reset_fallback_report()
    start = time.perf_counter()
    bar = progress(args.epochs * steps_per_epoch, f"actions on {device}", args.quiet)
    for _ in range(args.epochs):
        model.train()
        for batch in torch.randperm(len(y_train), generator=order).split(args.batch_size):
            clips = x_train[batch].to(device).contiguous(memory_format=torch.channels_last_3d)
            with torch.autocast(device_type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
                loss = F.cross_entropy(model(clips), y_train[batch].to(device))
            optimizer_step(loss, opt, schedule, bar)
    bar.close()
    model.eval()
    predictions = []
    with torch.no_grad(), torch.autocast(device_type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
        for clips in x_test.split(128):
            predictions.append(model(clips.to(device).contiguous(memory_format=torch.channels_last_3d))
                               .argmax(1).cpu())
    seconds = time.perf_counter() - start
    predictions = torch.cat(predictions)
    confusion = torch.zeros(len(MOTIONS), len(MOTIONS), dtype=torch.long)
    confusion.index_put_((y_test, predictions), torch.ones_like(y_test), accumulate=True)
    return (predictions == y_test).float().mean().item(), confusion, seconds, torch_mlu.fallback_report()


def plot(path, confusion, accuracy):
    fig, ax = pyplot().subplots(figsize=(4.6, 4))
    ax.imshow(confusion, cmap="Blues")
    for i in range(len(MOTIONS)):
        for j in range(len(MOTIONS)):
            value = int(confusion[i, j])
            ax.text(j, i, str(value), ha="center", va="center", fontsize=8,
                    color="white" if value > confusion.max() / 2 else "black")
    ax.set_xticks(range(len(MOTIONS)), MOTIONS, rotation=45)
    ax.set_yticks(range(len(MOTIONS)), MOTIONS)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true motion")
    ax.set_title(f"held-out clips on mlu: accuracy {accuracy:.1%}", fontsize=9)
    save(fig, path)


def parse_args(argv=None):
    p = argument_parser(__doc__, "video_actions.png", "CI's run: fewer clips and epochs, a looser stated accuracy")
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    return parse_options(p, argv, dict(epochs=10, batch_size=32, lr=4e-3, train_per_motion=200, test_per_motion=50),
                         fast=dict(epochs=4, train_per_motion=48, test_per_motion=16))


def main(argv=None):
    args = parse_args(argv)
    stated = STATED_ACCURACY_FAST if args.fast else STATED_ACCURACY
    results = {}
    for device in args.devices:
        accuracy, confusion, seconds, fell_back = fit(device, args)
        results[device] = (accuracy, confusion, fell_back)
        print(f"actions on {device:>4}: held-out accuracy {accuracy:.2%} ({int(confusion.sum())} clips, "
              f"{args.epochs} epochs, {args.precision}, {seconds:.1f} s)")
        if device.startswith("mlu"):
            report_fallback(fell_back)
            if args.plot:
                plot(args.plot, confusion, accuracy)
                print(f"confusion matrix drawn to {args.plot}")
    check_stated("actions", "accuracy", {d: r[0] for d, r in results.items()}, stated)
    return results


if __name__ == "__main__":
    main()
