"""Renders benchmarks/results/bench_ops.json (from bench_ops.py) as docs/bench_ops.md.

The table has, per op and layout, the cpu/mlu time ratio at each size for float32 (and bfloat16 where
measured), so the note on a change can quote it; the summary lines are bench_ops.py's own. Further result files,
each a run under one instruction set (`bench_ops.py --isa avx2`, ...), add a per-ISA section: each family's
geometric mean and worst case at >= 1M per run, against the bar every variant is held to (every family at least
1.0x, the geomean at least 1.5x).
Usage: python benchmarks/render_ops_report.py [results.json] [out.md] [isa_run.json ...]
"""
import json
import sys
from collections import defaultdict

FAMILY_BAR, GEOMEAN_BAR = 1.0, 1.5


def isa_section(paths):
    """The per-ISA tables from the runs at `paths` (each a bench_ops.py JSON with its "isa" record)."""
    runs = [json.load(open(p)) for p in paths]
    labels = [run_label(r) for r in runs]
    families = list(dict.fromkeys(f for r in runs for f in r["summary"]["geomean_ratio_large_by_family"]))
    out = ["## Per instruction set", "",
           "One run per variant, each measured with both sides capped to it (`benchmarks/bench_ops.py --isa NAME`: "
           "our kernels, ATen's, oneMKL's and oneDNN's; `benchmarks/host_isa.py`), cases of >= 1M elements. "
           f"The bar for every variant: each family at least {FAMILY_BAR:.1f}x, the geomean at least "
           f"{GEOMEAN_BAR:.1f}x. Cell: family geomean (worst case).", "",
           "| family | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(runs)]
    for fam in families:
        cells = []
        for r in runs:
            value = r["summary"]["geomean_ratio_large_by_family"].get(fam)
            large = [c for c in r["results"] if "ratio" in c and c["family"] == fam
                     and c["numel"] >= r["summary"]["large_threshold"]]
            worst = min(large, key=lambda c: c["ratio"]) if large else None
            mark = "**" if value is not None and value < FAMILY_BAR else ""
            cells.append("" if value is None else f"{mark}{value:.2f}{mark} ({worst['op']} {worst['ratio']:.2f})")
        out.append(f"| {fam} | " + " | ".join(cells) + " |")
    out.append("| **geomean** | " + " | ".join(f"**{r['summary']['geomean_ratio_large']:.3f}**" for r in runs) + " |")
    out.append("| cases / errors | " + " | ".join(f"{r['summary']['large_cases']} / {r['summary']['errors']}"
                                                for r in runs) + " |")
    configs = {json.dumps({k: r["config"].get(k) for k in ("sizes", "dtypes", "repeat", "min_time_s")}) for r in runs}
    out += ["", "Runs: " + "; ".join(f"{label}: mlu kernels {r['isa']['mlu_kernels_isa']}"
                                      f"{' + AMX' if r['isa']['mlu_amx'] else ''}, ATen "
                                      f"{r['isa']['aten_cpu_capability']}, {r['isa']['cpu_model']}"
                                      for label, r in zip(labels, runs)) + ". Settings: " + "; ".join(sorted(configs))
            + ".", ""]
    return out


def run_label(run):
    isa = run.get("isa") or {}
    if isa.get("caps"):
        kind = "avx512" if isa["mlu_kernels_isa"].startswith("avx512") else isa["mlu_kernels_isa"]
        return f"{kind} (forced on {isa['host_kind']})"
    return f"{isa.get('host_kind', '?')} (native)"


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/bench_ops.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "docs/bench_ops.md"
    data = json.load(open(src))
    summary = data["summary"]
    sizes = list(dict.fromkeys(s for _, s in sorted({(r["n"], r["size"]) for r in data["results"]})))
    rows = defaultdict(dict)
    native = {}
    for r in data["results"]:
        if "ratio" not in r:
            continue
        key = (r["family"], r["op"], r["layout"], r["dtype"])
        rows[key][r["size"]] = r["ratio"]
        native[key] = native.get(key, True) and r.get("native", False)
    out = ["# Op benchmarks: mlu against stock PyTorch on the CPU", "",
           f"Generated from `{src}` by `benchmarks/render_ops_report.py`; measured by `benchmarks/bench_ops.py` "
           f"(torch {data.get('torch')}, {data.get('cpu_count')} cores, host {run_label(data)}, other load during "
           f"the run: {data.get('other_load_during')}). Ratio = CPU time / mlu time (> 1: mlu faster); medians of "
           f"batches, mlu batches end with `torch.mlu.synchronize()`"
           + (f"; each case the median of {data['config']['repeat']} passes over the whole matrix"
              if data.get("config", {}).get("repeat", 1) > 1 else "") + ".", "", "## Summary", "",
           f"- cases: {summary['cases']} ({summary['native_cases']} native on mlu, "
           f"{summary['fallback_cases']} through the CPU fallback), errors: {summary['errors']}",
           f"- **geometric mean of cpu/mlu over cases with >= 1M elements: {summary['geomean_ratio_large']:.3f}** "
           f"(native only: {summary['geomean_ratio_large_native']:.3f}; all sizes: "
           f"{summary['geomean_ratio_all']:.3f})",
           "- by family (>= 1M): " + ", ".join(f"{k} {v:.2f}"
                                               for k, v in summary["geomean_ratio_large_by_family"].items()),
           "- below 0.7 at >= 1M (worst case per op): " +
           (", ".join(f"{w['op']} {w['ratio']:.2f} ({w['layout']}, {w['size']}, {w['dtype']})"
                      for w in summary["worst_large"] if w["ratio"] < 0.7) or "none"),
           *([f"- rechecked ({len(summary['rechecked'])} cases >= 1M below "
              f"{data['config'].get('recheck_below')} after the first passes, "
              f"{data['config'].get('recheck')} more passes each, median of all; before -> after): " +
              ", ".join(f"{c['op']} {c['layout']} {c['size']} {c['dtype']} {c['ratio_before']:.2f} -> "
                        f"{c['ratio']:.2f}" for c in summary["rechecked"])] if summary.get("rechecked") else []),
           "",
           *(isa_section(sys.argv[3:]) if len(sys.argv) > 3 else []),
           "## Ratios", "", "| family | op | layout | dtype | " + " | ".join(sizes) + " | path |",
           "|---|---|---|---|" + "---:|" * len(sizes) + "---|"]
    for key in sorted(rows):
        family, op, layout, dtype = key
        cells = [f"{rows[key][s]:.2f}" if s in rows[key] else "" for s in sizes]
        out.append(f"| {family} | {op} | {layout} | {dtype} | " + " | ".join(cells) +
                   f" | {'native' if native[key] else 'fallback'} |")
    open(dst, "w").write("\n".join(out) + "\n")
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
