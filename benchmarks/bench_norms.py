"""Normalisation layers on mlu against stock PyTorch on the CPU (same machine, same run).

Cases: batch norm in training mode at the ResNet-18 shapes of the model suite (batch 16, 64x64 images:
64 channels at 16x16 and 512 at 2x2) and a ResNet-50 shape at 224x224 (batch 4, 256 channels at 56x56), NCHW
and channels-last; layer norm at the GPT-mini and BERT-encoder shapes (2048 x 256, 2048 x 384); group norm
(32 groups) at a diffusion U-Net shape (batch 4, 256 channels at 32x32). Each as forward (`fwd`) and forward
plus backward (`train`: input, weight and bias gradients), float32 and bfloat16.

Timing as in bench_conv.py (one warm-up call per device, medians of batches, mlu batches ending with
torch.mlu.synchronize()). ratio = cpu time / mlu time (above 1: mlu faster).

    python benchmarks/bench_norms.py [--cases 'batch_*'] [--repeat 3] [--min-time 0.3]
        [--out benchmarks/results/bench_norms.json]
"""

import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401 - registers the mlu device
from bench_conv import parse_args, run_and_report, time_us

# name: (builder of (input shape, parameter shape), the layer call)
LAYERS = {
    "batch_r18_64x16x16": ((16, 64, 16, 16), 64,
                           lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "batch_r18_512x2x2": ((16, 512, 2, 2), 512,
                          lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "batch_r50_256x56x56": ((4, 256, 56, 56), 256,
                            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "layer_gpt_2048x256": ((2048, 256), 256, lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b)),
    "layer_bert_2048x384": ((2048, 384), 384, lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b)),
    "group_unet_256x32x32": ((4, 256, 32, 32), 256, lambda x, w, b: F.group_norm(x, 32, w, b)),
}

CASES = {}
for layer, spec in LAYERS.items():
    for dtype_name in ("f32", "bf16"):
        layouts = ("nchw", "cl") if len(spec[0]) == 4 else ("rows",)
        for layout in layouts:
            for mode in ("fwd", "train"):
                CASES[f"{layer}_{dtype_name}_{layout}_{mode}"] = (spec, dtype_name, layout, mode)


def call(case, device):
    (shape, channels, fn), dtype_name, layout, mode = case
    dtype = torch.float32 if dtype_name == "f32" else torch.bfloat16
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=g).to(dtype)
    if layout == "cl":
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = torch.rand(channels, generator=g).to(dtype), torch.randn(channels, generator=g).to(dtype)
    x, w, b = (t.to(device).requires_grad_() for t in (x, w, b))
    if mode == "fwd":
        def run():
            with torch.no_grad():
                return fn(x, w, b)
    else:
        grad = torch.randn(x.shape, generator=g).to(dtype).to(device)

        def run():
            return torch.autograd.grad(fn(x, w, b), (x, w, b), grad)
    return run


def run_case(name, case, min_time):
    cpu = time_us(call(case, "cpu"), "cpu", min_time)
    mlu = time_us(call(case, "mlu"), "mlu", min_time)
    return {"case": name, "cpu_us": cpu, "mlu_us": mlu, "ratio": cpu / mlu}


def main():
    args = parse_args(__doc__, "benchmarks/results/bench_norms.json")
    run_and_report(args, CASES, lambda name, case: run_case(name, case, args.min_time), [])


if __name__ == "__main__":
    main()
