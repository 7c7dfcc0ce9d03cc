"""Profile training steps of the demo's GPT on `mlu`: a trace for Perfetto and TensorBoard, and a table.

    .venv/bin/python examples/profile_gpt.py --out runs/profile

writes `runs/profile/<host>_<pid>.<time>.pt.trace.json` (open it at https://ui.perfetto.dev or in
TensorBoard with `pip install torch-tb-profiler; tensorboard --logdir runs/profile`) and prints the ops
that took the most device time. The trace has one row per mlu stream with every kernel and copy, arrows
from each op to the kernels it launched, the allocator's memory events, and the `torch.mlu.cnpx` ranges
around each phase of the step on the device rows.
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import torch_mlu  # noqa: F401
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, GPTConfig  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/profile", help="trace directory (default runs/profile)")
    p.add_argument("--steps", type=int, default=2, help="profiled steps, after one warm-up step (default 2)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--block-size", type=int, default=128)
    args = p.parse_args(argv)

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=96, block_size=args.block_size, n_layer=4, n_head=4, n_embd=256)).to("mlu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 96, (args.batch_size, args.block_size + 1), device="mlu")
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.MLU],
        schedule=schedule(wait=0, warmup=1, active=args.steps),
        on_trace_ready=tensorboard_trace_handler(args.out),
        profile_memory=True,
        record_shapes=True,
        acc_events=True,
    ) as prof:
        for _ in range(1 + args.steps):
            with torch.mlu.cnpx.range("forward"), torch.autocast("mlu", dtype=torch.bfloat16):
                loss = model(x, y)[1]
            with torch.mlu.cnpx.range("backward"):
                loss.backward()
            with torch.mlu.cnpx.range("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step()
    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=15))
    traces = sorted(f for f in os.listdir(args.out) if f.endswith(".pt.trace.json"))
    print(f"trace: {os.path.join(args.out, traces[-1])}")


if __name__ == "__main__":
    main()
