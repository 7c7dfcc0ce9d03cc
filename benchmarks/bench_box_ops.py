"""Detection's box operators on mlu (torch_mlu.ops) against torchvision-free CPU implementations in PyTorch.

torchvision cannot load over the CPU torch, so the CPU side is what a user without it writes, vectorised in
PyTorch and run on the CPU: NMS as the pairwise IoU matrix then the greedy pass over it; RoI align as
torchvision's own pure-PyTorch algorithm (torchvision/ops/roi_align.py `_roi_align`: every sample's four
neighbours gathered at once, fixed sampling ratio); RoI pool as a crop and an adaptive max pool per roi
(its rounding differs at the edges; the work is the same). The shapes are a Mask R-CNN's: 1000 and 4000
proposals per image into NMS, 512 rois of a 256-channel 50x68 feature map into 7x7 bins, forward and backward.

Each pass measures every case on both sides; --repeat R reports the median of R passes (calls per second).
ratio = mlu calls/s / cpu calls/s (above 1: mlu faster).

    python benchmarks/bench_box_ops.py [--repeat 5] [--min-time 1] [--out benchmarks/results/bench_box_ops.json]
"""
import argparse
import json
import statistics
import time

from host_isa import add_isa_argument, force_isa_from_argv, isa_label, isa_report

force_isa_from_argv()  # before torch loads: the caps are read at start-up

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_mlu  # noqa: E402,F401
import torch_mlu.ops as ops  # noqa: E402


# ---- the CPU side ----

def cpu_nms(boxes, scores, threshold):
    order = scores.argsort(descending=True, stable=True)
    iou = ops.box_iou(boxes[order], boxes[order])
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    over = (iou > threshold).tolist()
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= torch.tensor(over[i])
    return order[keep]


def cpu_roi_align(input, rois, scale, pooled, sampling_ratio, aligned):
    """torchvision's `_roi_align` for a fixed sampling ratio."""
    _, _, height, width = input.shape
    ph = torch.arange(pooled, dtype=input.dtype)
    grid = torch.arange(sampling_ratio, dtype=input.dtype)
    batch = rois[:, 0].long()
    offset = 0.5 if aligned else 0.0
    start_w, start_h = rois[:, 1] * scale - offset, rois[:, 2] * scale - offset
    roi_w, roi_h = rois[:, 3] * scale - offset - start_w, rois[:, 4] * scale - offset - start_h
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / pooled, roi_w / pooled
    y = start_h[:, None, None] + ph[None, :, None] * bin_h[:, None, None] + \
        (grid[None, None, :] + 0.5) * (bin_h / sampling_ratio)[:, None, None]  # [K, PH, IY]
    x = start_w[:, None, None] + ph[None, :, None] * bin_w[:, None, None] + \
        (grid[None, None, :] + 0.5) * (bin_w / sampling_ratio)[:, None, None]  # [K, PW, IX]
    y, x = y[:, :, :, None, None], x[:, None, None, :, :]  # [K, PH, IY, 1, 1], [K, 1, 1, PW, IX]
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = y.clamp(min=0), x.clamp(min=0)
    y_low, x_low = y.long(), x.long()
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_high = torch.where(y_edge, height - 1, y_low + 1)
    y_low = torch.where(y_edge, height - 1, y_low)
    y = torch.where(y_edge, float(height - 1), y)
    x_high = torch.where(x_edge, width - 1, x_low + 1)
    x_low = torch.where(x_edge, width - 1, x_low)
    x = torch.where(x_edge, float(width - 1), x)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx

    channel = torch.arange(input.size(1))[None, :, None, None, None, None]

    def at(yy, xx):  # [K, C, PH, IY, PW, IX]
        return input[batch[:, None, None, None, None, None], channel, yy[:, None], xx[:, None]]

    val = (hy * hx)[:, None] * at(y_low, x_low) + (hy * lx)[:, None] * at(y_low, x_high) + \
        (ly * hx)[:, None] * at(y_high, x_low) + (ly * lx)[:, None] * at(y_high, x_high)
    val = torch.where(outside[:, None], 0, val)
    return val.sum((3, 5)) / (sampling_ratio * sampling_ratio)


def cpu_roi_pool(input, rois, scale, pooled):
    out = []
    height, width = input.shape[-2:]
    for r in rois.tolist():
        b, x1, y1, x2, y2 = int(r[0]), *(round(v * scale) for v in r[1:])
        h0, w0 = min(max(y1, 0), height - 1), min(max(x1, 0), width - 1)
        crop = input[b, :, h0:min(max(y2 + 1, h0 + 1), height), w0:min(max(x2 + 1, w0 + 1), width)]
        out.append(F.adaptive_max_pool2d(crop, pooled))
    return torch.stack(out)


# ---- cases ----

def proposals(n, generator):
    xy = torch.rand(n, 2, generator=generator) * 800
    wh = torch.rand(n, 2, generator=generator) * 200 + 8
    return torch.cat([xy, xy + wh], 1), torch.rand(n, generator=generator)


def feature_rois(generator, k=512):
    features = torch.randn(2, 256, 50, 68, generator=generator)
    xy = torch.rand(k, 2, generator=generator) * torch.tensor([68 * 16.0, 50 * 16.0])
    wh = torch.rand(k, 2, generator=generator) * 256 + 16
    rois = torch.cat([torch.randint(0, 2, (k, 1), generator=generator).float(), xy, xy + wh], 1)
    return features, rois


def make_cases():
    g = torch.Generator().manual_seed(0)
    cases = {}
    for n in (1000, 4000):
        boxes, scores = proposals(n, g)
        boxes_m, scores_m = boxes.mlu(), scores.mlu()
        cases[f"nms {n}"] = (lambda b=boxes_m, s=scores_m: ops.nms(b, s, 0.7),
                             lambda b=boxes, s=scores: cpu_nms(b, s, 0.7))
    features, rois = feature_rois(g)
    f_m, r_m = features.mlu(), rois.mlu()
    grad = torch.randn(512, 256, 7, 7, generator=g)
    grad_m = grad.mlu()
    cases["roi_align fwd"] = (lambda: ops.roi_align(f_m, r_m, 7, 1 / 16, 2, True),
                              lambda: cpu_roi_align(features, rois, 1 / 16, 7, 2, True))
    f_grad_m, f_grad = f_m.clone().requires_grad_(), features.clone().requires_grad_()
    cases["roi_align fwd+bwd"] = (
        lambda: torch.autograd.grad(ops.roi_align(f_grad_m, r_m, 7, 1 / 16, 2, True), f_grad_m, grad_m),
        lambda: torch.autograd.grad(cpu_roi_align(f_grad, rois, 1 / 16, 7, 2, True), f_grad, grad))
    cases["roi_pool fwd"] = (lambda: ops.roi_pool(f_m, r_m, 7, 1 / 16), lambda: cpu_roi_pool(features, rois, 1 / 16, 7))
    cases["roi_pool fwd+bwd"] = (
        lambda: torch.autograd.grad(ops.roi_pool(f_grad_m, r_m, 7, 1 / 16), f_grad_m, grad_m),
        lambda: torch.autograd.grad(cpu_roi_pool(f_grad, rois, 1 / 16, 7), f_grad, grad))
    return cases


def rate(fn, sync, min_time):
    fn()
    sync()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return calls / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--out")
    add_isa_argument(parser)
    args = parser.parse_args()
    cases = make_cases()
    passes = {name: ([], []) for name in cases}
    for _ in range(args.repeat):
        for name, (on_mlu, on_cpu) in cases.items():
            passes[name][0].append(rate(on_mlu, torch.mlu.synchronize, args.min_time))
            passes[name][1].append(rate(on_cpu, lambda: None, args.min_time))
    isa = isa_report()
    print(f"instruction sets: {isa_label(isa)}; median of {args.repeat} passes, calls/s")
    print(f"{'case':<20} {'mlu':>10} {'cpu':>10} {'ratio':>7}")
    results = {}
    for name, (m, c) in passes.items():
        mlu, cpu = statistics.median(m), statistics.median(c)
        results[name] = {"mlu": mlu, "cpu": cpu, "ratio": mlu / cpu}
        print(f"{name:<20} {mlu:>10.1f} {cpu:>10.1f} {mlu / cpu:>7.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"isa": isa, "repeat": args.repeat, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
