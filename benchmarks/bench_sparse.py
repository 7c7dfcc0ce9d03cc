"""Sparse hot paths on mlu against the stock CPU, same run: coalesce, sparse x dense, dense + sparse, sparse_mask,
and a sparse-gradient embedding training step (EmbeddingBag forward + backward + SparseAdam / Adagrad step).

Each case is built once per device from the same CPU data; each timing is a batch of --iters calls ended by a
device synchronisation, and the figure is the median over --repeat batches, devices interleaved. The ratio is
cpu time / mlu time (above 1: mlu is faster). Results: docs/bench_sparse.md.

    python benchmarks/bench_sparse.py [--repeat 5] [--iters 10] [--out benchmarks/results/bench_sparse.json]
"""
import argparse
import json
import os
import platform
import statistics
import time

import torch

import torch_mlu  # noqa: F401


def uncoalesced(rows, cols, nnz, dense_dims=(), seed=0):
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack([torch.randint(0, rows, (nnz,), generator=g), torch.randint(0, cols, (nnz,), generator=g)])
    values = torch.randn((nnz,) + dense_dims, generator=g)
    return torch.sparse_coo_tensor(indices, values, (rows, cols) + dense_dims)


def embedding_step(device, optimizer, rows=100_000, dim=64, batch=2048, bag=8):
    torch.manual_seed(0)
    model = torch.nn.EmbeddingBag(rows, dim, mode="sum", sparse=True).to(device)
    opt = optimizer([model.weight])
    g = torch.Generator().manual_seed(1)
    indices = torch.randint(0, rows, (batch * bag,), generator=g).to(device)
    offsets = torch.arange(0, batch * bag, bag).to(device)

    def step():
        opt.zero_grad()
        model(indices, offsets).square().sum().backward()
        opt.step()
    return step


def cases(device):
    """name -> a callable running the case once on `device`."""
    s = uncoalesced(4096, 4096, 200_000).to(device)
    c = s.coalesce()
    csr = c.to_sparse_csr()
    dense = torch.randn(4096, 64).to(device)
    square = torch.randn(4096, 4096).to(device)
    hybrid = uncoalesced(100_000, 1, 50_000, dense_dims=(64,)).to(device)
    return {
        "coalesce 200k nnz": lambda: s.coalesce(),
        "coalesce hybrid 50k x 64": lambda: hybrid.coalesce(),
        "sparse.mm coo 4096^2 @ 4096x64": lambda: torch.sparse.mm(c, dense),
        "csr @ 4096x64": lambda: csr @ dense,
        "dense + sparse 4096^2": lambda: square + c,
        "to_dense 4096^2": lambda: c.to_dense(),
        "sparse_mask 4096^2": lambda: square.sparse_mask(c),
        "embedding_bag step sparseadam": embedding_step(device, lambda p: torch.optim.SparseAdam(p, lr=1e-3)),
        "embedding_bag step adagrad": embedding_step(device, lambda p: torch.optim.Adagrad(p, lr=1e-2)),
    }


def synchronize(device):
    if device == "mlu":
        torch.mlu.synchronize()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_sparse.json"))
    args = p.parse_args()
    built = {device: cases(device) for device in ("cpu", "mlu")}
    times = {(device, name): [] for device in built for name in built[device]}
    for name in built["cpu"]:
        for device in built:  # warm-up
            built[device][name]()
            synchronize(device)
        for _ in range(args.repeat):
            for device in built:
                start = time.perf_counter()
                for _ in range(args.iters):
                    built[device][name]()
                synchronize(device)
                times[(device, name)].append((time.perf_counter() - start) / args.iters)
    torch_mlu.reset_fallback_report()
    for fn in built["mlu"].values():
        fn()
    fell_back = torch_mlu.fallback_report()
    rows = []
    print(f"{'case':34} {'cpu ms':>9} {'mlu ms':>9} {'cpu/mlu':>8}   (median of {args.repeat} x {args.iters})")
    for name in built["cpu"]:
        cpu, mlu = (1e3 * statistics.median(times[(d, name)]) for d in ("cpu", "mlu"))
        rows.append({"case": name, "cpu_ms": cpu, "mlu_ms": mlu, "ratio": cpu / mlu})
        print(f"{name:34} {cpu:9.2f} {mlu:9.2f} {cpu / mlu:8.2f}")
    print("ops on the CPU fallback: " + (", ".join(sorted(fell_back)) or "none"))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host": platform.processor() or platform.machine(), "torch": torch.__version__,
                   "cpu_capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(),
                   "repeat": args.repeat, "iters": args.iters, "fallback": fell_back, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
