"""Large-model inference on mlu against stock PyTorch on the CPU (same machine, same run).

Section `ops`: the quantized products of decoding (issue 64's targets are stated for them) at decode shapes,
M = 1, 4, 16 rows against K x N weights of 2048..8192, and the dense float32 / bfloat16 linear at M = 1 (the
matrix-vector rows of unquantized decoding, Note [Matrix-vector rows]):
- int8 weight-only (torch._weight_int8pack_mm), int4 weight-only in the CPU's packing
  (torch._weight_int4pack_mm_for_cpu, groups of 128), in bfloat16 (the CPU's fast path) and float32;
- torch._int_mm (int8 x int8 -> int32) and torch._dyn_quant_matmul_4bit (the CPU's reference kernel, which
  mlu reproduces bit for bit);
- torch._grouped_mm as a mixture-of-experts layer issues it (512 tokens over 8 experts of 1024 x 1024), where
  the CPU runs its generic per-group fallback; its GFLOP/s (2 m k n over the time) is in the JSON;
- serving attention (attention_case): varlen_attn over packed causal sequences (prefill; GFLOP/s in the JSON)
  and over a paged cache at decode (GB/s: the keys and values read), against the CPU's loop over sequences.

Each weight-only case is timed twice: `hot`, the same weight every call (it stays in the last-level cache
when it fits: 16 MB of int8 does in a 300 MB L3), and `cold`, a ring of copies of the weight larger than
twice the last-level cache, a different one each call, so every call streams its weight from memory as a
model's layers do. GB/s is the weight's bytes (and its scales) over the time. The machine's memory
bandwidth is measured in the same run, STREAM-like on the CPU with all threads and without `--isa` caps:
`read` (a sum over 512 MB) and `triad` (c = a + 2 b over 3 x 256 MB); the products only read their
weights, so `read` is their roof.

Timing as in bench_gemm.py: a warm-up call per device, then batches of k calls (mlu batches end with
torch.mlu.synchronize()), the median batch; --repeat R runs the list R times and reports the median of the
passes. ratio = cpu time / mlu time (above 1: mlu faster).

    python benchmarks/bench_llm.py [--cases 'int4_*'] [--repeat 3] [--min-time 0.3] [--isa avx2]
        [--out benchmarks/results/bench_llm.json]
"""
import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from host_isa import CAPS, add_isa_argument, force_isa_from_argv, isa_label, isa_report

if __name__ == "__main__":
    force_isa_from_argv()  # before torch loads: the caps are read at start-up

import torch  # noqa: E402

import torch_mlu  # noqa: E402,F401 - registers the mlu device
from torch.nn.attention.varlen import varlen_attn  # noqa: E402

GROUP = 128
SHAPES = [(2048, 2048), (4096, 4096), (4096, 11008), (8192, 8192)]  # (K, N)


def last_level_cache_bytes():
    """The largest cache's size from sysfs (the L3 of one socket), or 256 MB where it is not found."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
            best = max(best, int(text.rstrip("KMG")) * scale)
    except OSError:
        pass
    return best or 256 << 20


def measure(fn, sync, min_time, min_reps=5):
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    single = max(time.perf_counter() - start, 1e-7)
    k = max(1, min(2000, int(min_time / min_reps / single)))
    runs = []
    begin = time.perf_counter()
    while len(runs) < min_reps or (time.perf_counter() - begin < min_time and len(runs) < 30):
        t = time.perf_counter()
        for _ in range(k):
            fn()
        sync()
        runs.append((time.perf_counter() - t) / k)
    return statistics.median(runs)


def memory_bandwidth(min_time):
    """STREAM-like read and triad bandwidth of the host (GB/s), on the CPU with all threads.

    A property of the machine, not of the instruction sets a run is capped to (`--isa`): under ATEN's AVX2
    kernels the sum here stops being memory-bound. So under caps it is measured in a child without them."""
    caps = {key for caps in CAPS.values() for key in caps}
    if any(key in os.environ for key in caps):
        env = {k: v for k, v in os.environ.items() if k not in caps}
        code = f"import json, bench_llm; print(json.dumps(bench_llm.memory_bandwidth({min_time})))"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                             cwd=os.path.dirname(os.path.abspath(__file__))).stdout
        return json.loads(out.strip().splitlines()[-1])
    a = torch.randn(128 << 20)  # 512 MB
    read = a.numel() * 4 / measure(lambda: a.sum(), lambda: None, min_time, min_reps=3) / 1e9
    a = a[: 64 << 20]
    b, c = torch.randn_like(a), torch.empty_like(a)
    triad = 3 * a.numel() * 4 / measure(lambda: torch.add(a, b, alpha=2, out=c), lambda: None, min_time,
                                        min_reps=3) / 1e9
    return {"read_gbs": round(read, 1), "triad_gbs": round(triad, 1)}


class Ring:
    """Copies of a weight's tensors, a different one per call: `count` of them."""

    def __init__(self, tensors, count):
        self.sets = [tuple(t.clone() for t in tensors) for _ in range(count)]
        self.at = 0

    def next(self):
        self.at = (self.at + 1) % len(self.sets)
        return self.sets[self.at]


def weight_only_case(kind, dtype, m, k, n):
    """(build(device) -> (call, weight tensors), weight bytes) of one weight-only product."""
    def build(device):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(m, k, generator=g).to(dtype).to(device)
        if kind == "dense":  # the unquantized weight: what float32 / bfloat16 decoding reads
            w = torch.randn(n, k, generator=g).to(dtype).to(device)
            return (lambda w: torch.nn.functional.linear(x, w)), (w,)
        if kind == "int8":
            w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g).to(device)
            s = (torch.rand(n, generator=g) * 0.01).to(dtype).to(device)
            return (lambda w, s: torch._weight_int8pack_mm(x, w, s)), (w, s)
        q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=g)
        packed = torch._convert_weight_to_int4pack_for_cpu(q, 2).to(device)
        sz = (torch.rand(k // GROUP, n, 2, generator=g) * 0.01).to(dtype).to(device)
        return (lambda w, s: torch._weight_int4pack_mm_for_cpu(x, w, GROUP, s)), (packed, sz)
    size = torch.finfo(dtype).bits // 8
    weight_bytes = {"dense": n * k * size, "int8": n * k + n * size}.get(kind, n * k // 2 + (k // GROUP) * n * 2 * size)
    return build, weight_bytes


def other_case(kind, m, k, n, experts=8, dtype=torch.bfloat16):
    def build(device):
        g = torch.Generator().manual_seed(0)
        if kind == "grouped_mm":  # m tokens spread evenly over the experts' k x n weights
            x = torch.randn(m, k, generator=g).to(dtype).to(device)
            w = (torch.randn(experts, k, n, generator=g) * k ** -0.5).to(dtype).to(device)
            offs = torch.tensor([(e + 1) * m // experts for e in range(experts)], dtype=torch.int32).to(device)
            return (lambda x, w: torch._grouped_mm(x, w, offs)), (x, w)
        if kind == "int_mm":
            a = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=g).to(device)
            b = torch.randint(-128, 128, (k, n), dtype=torch.int8, generator=g).to(device)
            return (lambda a, b: torch._int_mm(a, b)), (a, b)
        w = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=g)
        packed = torch._dyn_quant_pack_4bit_weight(w, torch.rand(n, 1, generator=g) * 0.01, None, k, k, n)
        x = torch.randn(m, k, generator=g).to(device)
        return (lambda p, x: torch._dyn_quant_matmul_4bit(x, p, k, k, n)), (packed.to(device), x)
    if kind == "grouped_mm":
        return build, experts * k * n * torch.finfo(dtype).bits // 8
    return build, (k * n if kind == "int_mm" else k * n // 2)


def attention_case(kind, dtype=torch.bfloat16):
    """Serving attention, varlen_attn on mlu against the CPU's loop over sequences (its SDPA, which has no varlen
    or paged form): "prefill", 4 causal sequences of 128..1024 tokens, 16 query / 8 key-value heads of 64; "decode",
    32 sequences of one query against a paged cache (pages of 16) of 512..2048 keys, 32 / 8 heads of 128. Bytes:
    the keys and values read (decode); FLOPs: 4 d per query-key pair seen (prefill)."""
    if kind == "prefill":
        lengths, heads, kv_heads, d = [128, 256, 512, 1024], 16, 8, 64
    else:
        lengths, heads, kv_heads, d = [512 + 48 * i for i in range(32)], 32, 8, 128
    page = 16

    def build(device):
        g = torch.Generator().manual_seed(0)
        cu = torch.tensor([0] + lengths, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        if kind == "prefill":
            q, k, v = (torch.randn(int(cu[-1]), h, d, generator=g).to(dtype) for h in (heads, kv_heads, kv_heads))
            if device == "cpu":
                def loop(q, k, v):
                    return torch.cat([torch.nn.functional.scaled_dot_product_attention(
                        *(t[a:b].transpose(0, 1) for t in (q, k, v)), is_causal=True, enable_gqa=True).transpose(0, 1)
                        for a, b in zip(cu.tolist(), cu[1:].tolist())])
                return loop, (q, k, v)
            cu_mlu = cu.to(device)
            return (lambda q, k, v: varlen_attn(q, k, v, cu_mlu, cu_mlu, max(lengths), max(lengths),
                                                window_size=(-1, 0), enable_gqa=True)), \
                tuple(t.to(device) for t in (q, k, v))
        pages_per_seq = -(-max(lengths) // page)
        pages = len(lengths) * pages_per_seq
        k_cache, v_cache = (torch.randn(pages, page, kv_heads, d, generator=g).to(dtype) for _ in range(2))
        table = torch.randperm(pages, generator=g).view(len(lengths), pages_per_seq).int()
        q = torch.randn(len(lengths), heads, d, generator=g).to(dtype)
        if device == "cpu":
            def loop(q, k_cache, v_cache):
                outs = []
                for s, n in enumerate(lengths):
                    rows = table[s, :-(-n // page)]
                    k, v = (c.index_select(0, rows).flatten(0, 1)[:n].transpose(0, 1) for c in (k_cache, v_cache))
                    outs.append(torch.nn.functional.scaled_dot_product_attention(
                        q[s:s + 1].transpose(0, 1), k, v, enable_gqa=True).transpose(0, 1))
                return torch.cat(outs)
            return loop, (q, k_cache, v_cache)
        cu_q = torch.arange(len(lengths) + 1, dtype=torch.int32).to(device)
        used, table_mlu = torch.tensor(lengths, dtype=torch.int32).to(device), table.to(device)
        return (lambda q, k, v: varlen_attn(q, k, v, cu_q, None, 1, max(lengths), enable_gqa=True, seqused_k=used,
                                            block_table=table_mlu)), tuple(t.to(device) for t in (q, k_cache, v_cache))
    size = torch.finfo(dtype).bits // 8
    if kind == "prefill":
        return build, 0, sum(2 * heads * d * n * (n + 1) for n in lengths)
    return build, 2 * sum(lengths) * kv_heads * d * size, 0


CASES = {}
for _kind in ("int8", "int4"):
    for _dt, _tag in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
        for _k, _n in SHAPES:
            if _tag == "f32" and (_k, _n) != (4096, 4096):
                continue  # float32: one shape, the CPU's kernels have no fast float path
            for _m in (1, 4, 16):
                CASES[f"{_kind}_{_tag}_m{_m}_{_k}x{_n}"] = (weight_only_case(_kind, _dt, _m, _k, _n), True)
for _dt, _tag in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):  # dense weights, decode's matrix-vector rows
    for _k, _n in SHAPES:
        CASES[f"dense_{_tag}_m1_{_k}x{_n}"] = (weight_only_case("dense", _dt, 1, _k, _n), True)
CASES["int_mm_m16_4096x4096"] = (other_case("int_mm", 16, 4096, 4096), False)
CASES["int_mm_m64_4096x4096"] = (other_case("int_mm", 64, 4096, 4096), False)
CASES["dyn_quant_int4_m1_4096x4096"] = (other_case("dyn_quant", 1, 4096, 4096), False)
# A mixture-of-experts layer's grouped product: 512 tokens over 8 experts (GFLOP/s = 2 m k n / time).
CASES["grouped_mm_bf16_512x1024x1024_e8"] = (other_case("grouped_mm", 512, 1024, 1024), False)
CASES["grouped_mm_f32_512x1024x1024_e8"] = (other_case("grouped_mm", 512, 1024, 1024, dtype=torch.float32), False)
CASES["varlen_prefill_bf16"] = (attention_case("prefill"), False)
CASES["paged_decode_bf16"] = (attention_case("decode"), False)


def run_case(name, spec, min_time, cache_bytes):
    (build, weight_bytes, *flops), ringed = spec
    result = {"case": name, "weight_bytes": weight_bytes}
    devices = (("cpu", lambda: None), ("mlu", torch.mlu.synchronize))
    for device, sync in devices:
        call, tensors = build(device)
        if device == "mlu":
            torch_mlu.reset_fallback_report()
            call(*tensors)
            sync()
            result["native"] = not torch_mlu.fallback_report()
        result[f"{device}_hot_us"] = measure(lambda: call(*tensors), sync, min_time) * 1e6
        if ringed and name.split("_")[2] == "m1":
            ring = Ring(tensors, max(2, -(-2 * cache_bytes // weight_bytes)))
            result[f"{device}_cold_us"] = measure(lambda: call(*ring.next()), sync, min_time) * 1e6
            del ring
    if name.startswith("grouped_mm"):
        m, k, n = (int(v) for v in name.split("_")[3].split("x"))
        flops = [2 * m * k * n]
    if flops and flops[0]:
        result["mlu_gflops"] = flops[0] / result["mlu_hot_us"] / 1e3
        result["cpu_gflops"] = flops[0] / result["cpu_hot_us"] / 1e3
    for mode in ("hot", "cold"):
        if f"cpu_{mode}_us" in result:
            result[f"{mode}_ratio"] = result[f"cpu_{mode}_us"] / result[f"mlu_{mode}_us"]
            for device in ("cpu", "mlu"):
                result[f"{device}_{mode}_gbs"] = weight_bytes / result[f"{device}_{mode}_us"] / 1e3
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="*", help="comma-separated glob patterns over the case names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per device, case and mode")
    parser.add_argument("--out", default="benchmarks/results/bench_llm.json")
    add_isa_argument(parser)
    args = parser.parse_args()
    isa = isa_report()
    print(f"instruction sets: {isa_label(isa)}; mlu kernels {isa['mlu_kernels_isa']}"
          f"{' + AMX' if isa['mlu_amx'] else ''}, ATen {isa['aten_cpu_capability']}", flush=True)
    cache = last_level_cache_bytes()
    bandwidth = memory_bandwidth(args.min_time)
    print(f"memory bandwidth (CPU, {torch.get_num_threads()} threads): read {bandwidth['read_gbs']} GB/s, "
          f"triad {bandwidth['triad_gbs']} GB/s; last-level cache {cache >> 20} MB", flush=True)
    patterns = args.cases.split(",")
    names = [n for n in CASES if any(fnmatch.fnmatch(n, p) for p in patterns)]
    passes = [[run_case(n, CASES[n], args.min_time, cache) for n in names] for _ in range(args.repeat)]
    results = []
    for i, name in enumerate(names):
        runs = [p[i] for p in passes]
        case = dict(runs[0])
        for key in case:
            if isinstance(case[key], float):
                case[key] = round(statistics.median(r[key] for r in runs), 4)
        case["pass_ratios"] = [round(r["hot_ratio"], 3) for r in runs if "hot_ratio" in r]
        results.append(case)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(), "isa": isa,
                   "threads": torch.get_num_threads(), "repeat": args.repeat, "bandwidth": bandwidth,
                   "last_level_cache_bytes": cache, "cases": results}, f, indent=1)
    print(f"{'case':32s} {'cpu us':>9s} {'mlu us':>9s} {'ratio':>6s} {'mlu GB/s':>8s} | "
          f"{'cold cpu':>9s} {'cold mlu':>9s} {'ratio':>6s} {'GB/s':>6s} {'% read':>6s}")
    for c in results:
        hot = (f"{c['cpu_hot_us']:9.1f} {c['mlu_hot_us']:9.1f} {c['cpu_hot_us'] / c['mlu_hot_us']:6.2f} "
               f"{c['weight_bytes'] / c['mlu_hot_us'] / 1e3:8.1f}")
        cold = ""
        if "mlu_cold_us" in c:
            gbs = c["weight_bytes"] / c["mlu_cold_us"] / 1e3
            cold = (f"{c['cpu_cold_us']:9.1f} {c['mlu_cold_us']:9.1f} {c['cpu_cold_us'] / c['mlu_cold_us']:6.2f} "
                    f"{gbs:6.1f} {100 * gbs / bandwidth['read_gbs']:5.0f}%")
        print(f"{c['case']:32s} {hot} | {cold}{'' if c['native'] else '  (fallback)'}")
    print(f"(ratio = cpu time / mlu time; medians of batches, median of {args.repeat} pass(es); written to {args.out})")


if __name__ == "__main__":
    main()
