"""Padded-batch encoder inference: nested (packed) against padded, on mlu and on the stock CPU.

The model is nn.TransformerEncoder (--layers layers of width --width, --heads heads, FFN 4x, ReLU, post-norm,
batch_first) in eval() under no_grad, fed a batch of --batch sequences whose lengths are uniform in
[--min-len, --max-len] (fixed seed) with a src_key_padding_mask. "padded": enable_nested_tensor=False, so each
layer's fast path runs on the padded batch with the mask; "nested": enable_nested_tensor=True, so the batch is
packed into a nested tensor (_nested_tensor_from_mask) and the layers skip the padding. Milliseconds per batch,
the median over --repeat passes (devices and modes interleaved); the target (issue 32): nested at least as
fast as padded on mlu. Results: docs/bench_nested.md.

    python benchmarks/bench_nested.py [--repeat 5] [--out benchmarks/results/bench_nested.json]
"""
import argparse
import json
import os
import platform
import statistics
import time
import warnings

import torch

import torch_mlu  # noqa: F401

warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")


def build(args, nested, device):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(args.width, args.heads, 4 * args.width, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=nested).eval().to(device)
    generator = torch.Generator().manual_seed(1)
    lengths = torch.randint(args.min_len, args.max_len + 1, (args.batch,), generator=generator)
    width = int(lengths.max())
    x = torch.randn(args.batch, width, args.width, generator=generator).to(device)
    mask = (torch.arange(width)[None, :] >= lengths[:, None]).to(device)
    return model, x, mask


def synchronize(device):
    if device == "mlu":
        torch.mlu.synchronize()


def run(model, x, mask, device):
    with torch.no_grad():
        out = model(x, src_key_padding_mask=mask)
    synchronize(device)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--min-len", type=int, default=8)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_nested.json"))
    args = p.parse_args()
    cases = {(device, mode): build(args, mode == "nested", device) for device in ("cpu", "mlu")
             for mode in ("padded", "nested")}
    outputs = {key: run(*case, key[0]) for key, case in cases.items()}  # warm-up, and the results agree
    valid = ~cases[("cpu", "padded")][2]  # at the sequences' positions (padding rows differ by design)
    for key, out in outputs.items():
        torch.testing.assert_close(out.cpu()[valid], outputs[("cpu", "padded")][valid], rtol=1e-3, atol=1e-4)
    times = {key: [] for key in cases}
    for _ in range(args.repeat):
        for key, case in cases.items():
            start = time.perf_counter()
            run(*case, key[0])
            times[key].append(time.perf_counter() - start)
    ms = {key: 1e3 * statistics.median(t) for key, t in times.items()}
    print(f"batch {args.batch}, lengths {args.min_len}-{args.max_len}, {args.layers} layers of {args.width}, "
          f"{args.heads} heads (median of {args.repeat}, ms per batch)")
    print(f"{'mode':8} {'cpu ms':>9} {'mlu ms':>9} {'cpu/mlu':>8}")
    for mode in ("padded", "nested"):
        print(f"{mode:8} {ms[('cpu', mode)]:9.1f} {ms[('mlu', mode)]:9.1f} {ms[('cpu', mode)] / ms[('mlu', mode)]:8.2f}")
    for device in ("cpu", "mlu"):
        print(f"{device}: nested speed-up over padded {ms[(device, 'padded')] / ms[(device, 'nested')]:.2f}x")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": platform.node(), "torch": torch.__version__, "args": vars(args),
                   "ms_per_batch": {f"{d}/{m}": v for (d, m), v in ms.items()},
                   "passes_ms": {f"{d}/{m}": [round(1e3 * t, 2) for t in v] for (d, m), v in times.items()}},
                  f, indent=1)


if __name__ == "__main__":
    main()
