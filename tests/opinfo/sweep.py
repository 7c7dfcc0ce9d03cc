#!/usr/bin/env python
"""The full OpInfo sweep on mlu, crash-proof, with a markdown summary (`make opinfo`).

Runs tests/test_opinfo.py with MLU_OPINFO=full under pytest in child processes, with the result
collector (tests/opinfo/collector.py) appending one JSON line per case. A case that kills the process
(segfault, abort) or hangs (pytest-timeout, thread method, ends the process) is recorded as "crashed"
and the run resumes after it, so one bad op never ends the sweep. Then it writes the summary.

  .venv/bin/python tests/opinfo/sweep.py                          all tests, all dtypes (make opinfo)
  .venv/bin/python tests/opinfo/sweep.py --dtypes float32         float32 only (~the headline figure)
  .venv/bin/python tests/opinfo/sweep.py --tests compare_cpu --ops add,mul,sum
  .venv/bin/python tests/opinfo/sweep.py --summarize-only         summary from existing results
  .venv/bin/python tests/opinfo/sweep.py --regen-known-failures   runs with known_failures off and
        writes build/opinfo/known_failures_candidates.py: a candidate list (reasons guessed from the
        errors, "TODO" where unknown) to refresh tests/opinfo/known_failures.py as kernels land

Outputs: build/opinfo/results.jsonl (raw), build/opinfo/pytest.log, docs/opinfo_summary.md.
"""
import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import threading
import time

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS_DIR)
sys.path.insert(0, TESTS_DIR)

from opinfo.fallback_reasons import REASONS  # noqa: E402

TEST_NAMES = ("test_compare_cpu_grad", "test_compare_cpu", "test_noncontiguous_samples", "test_out", "test_errors")
OUTCOMES = ("passed", "xfailed", "skipped", "failed", "crashed")


# --- running ----------------------------------------------------------------------------------------

def read_results(path):
    starts, finals = [], {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash
                if rec["event"] == "start":
                    starts.append(rec["nodeid"])
                else:
                    finals[rec["nodeid"]] = rec
    return starts, finals


def run_shard(shard, ops, args, env_extra, log_lock):
    """Runs pytest over `ops` until every case is reported, resuming after crashes."""
    results = os.path.join(args.workdir, f"results.{shard}.jsonl")
    done = results + ".done"
    log = os.path.join(args.workdir, f"pytest.{shard}.log")
    for p in (results, done, log):
        if os.path.exists(p):
            os.remove(p)
    env = dict(os.environ)
    env.update(env_extra)
    env.update({"MLU_OPINFO": "full", "MLU_OPINFO_RESULTS": results, "MLU_OPINFO_DONE": done,
                "PYTHONPATH": TESTS_DIR + os.pathsep + env.get("PYTHONPATH", ""),
                "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
                "PYTORCH_TEST_WITH_SLOW": "1"})  # op_db's @slowTest cases run in the full sweep too
    if ops is not None:
        env["MLU_OPINFO_OPS"] = ",".join(ops)
    cmd = [sys.executable, "-m", "pytest", os.path.join(TESTS_DIR, "test_opinfo.py"), "-q", "-p", "no:cacheprovider",
           "-p", "opinfo.collector", "-p", "no:warnings", "-o", f"timeout={args.timeout}", "-o",
           "timeout_method=thread", "--no-header", "-rN"]
    restarts = restarts_on_error = 0
    while True:
        with open(log, "a") as out:
            rc = subprocess.call(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        starts, finals = read_results(results)
        dangling = [n for n in starts if n not in finals]
        if dangling:
            with open(log) as f:
                tail = f.read()[-20000:]
            why = "timeout" if "Timeout" in tail else f"process died (exit status {rc})"
            with open(results, "a") as f:
                for nodeid in dangling:
                    f.write(json.dumps({"event": "result", "nodeid": nodeid, "outcome": "crashed",
                                        "error": why}) + "\n")
            restarts += 1
            with log_lock:
                print(f"  shard {shard}: {dangling[-1].split('::')[-1]} {why}; resuming "
                      f"({len(finals)} cases done)", flush=True)
        _, finals = read_results(results)
        with open(done, "w") as f:
            f.write("\n".join(finals) + "\n")
        if not dangling:
            if rc in (2, 3, 4) and restarts_on_error < 5:
                # collection or import error: e.g. libtorch_mlu.so being rebuilt right now; try again
                restarts_on_error += 1
                with log_lock:
                    print(f"  shard {shard}: pytest exited with status {rc} (see {log}); retrying in 60 s",
                          flush=True)
                time.sleep(60)
                continue
            if rc not in (0, 1, 5):
                with log_lock:
                    print(f"  shard {shard}: pytest exited with status {rc} (see {log})", flush=True)
            return results, rc
        if restarts > 200:
            with log_lock:
                print(f"  shard {shard}: too many crashes, giving up", flush=True)
            return results, rc


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = {}
    if args.dtypes:
        env["MLU_OPINFO_DTYPES"] = args.dtypes
    if args.tests:
        env["MLU_OPINFO_TESTS"] = args.tests
    if args.regen_known_failures:
        env["MLU_OPINFO_KNOWN_FAILURES"] = "0"
    if args.run_crashers or args.regen_known_failures:
        env["MLU_OPINFO_RUN_CRASHERS"] = "1"
    from torch.testing._internal.common_methods_invocations import op_db
    names = args.ops.split(",") if args.ops else [op.full_name for op in op_db]
    shards = [names[i::args.jobs] for i in range(args.jobs)] if args.jobs > 1 else [names if args.ops else None]
    lock = threading.Lock()
    outputs = [None] * len(shards)

    def work(i):
        outputs[i] = run_shard(i, shards[i], args, env, lock)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(shards))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(args.results, "w") as out:
        for path, _ in outputs:
            if os.path.exists(path):
                with open(path) as f:
                    out.write(f.read())


# --- summarizing -------------------------------------------------------------------------------------

def parse_nodeid(nodeid, by_formatted):
    """(op full name, test, dtype) from ``...::TestCommonMLU::test_compare_cpu_add_mlu_float32``."""
    name = nodeid.split("::")[-1]
    for test in TEST_NAMES:
        if name.startswith(test + "_"):
            rest = name[len(test) + 1:]
            m = re.match(r"^(.*)_mlu(?:_(\w+))?$", rest)
            if m:
                return by_formatted.get(m.group(1), m.group(1)), test, m.group(2)
    return name, "?", None


def load(results_path):
    from torch.testing._internal.common_methods_invocations import op_db
    by_formatted = {op.formatted_name: op.full_name for op in op_db}
    _, finals = read_results(results_path)
    cases = []
    for rec in finals.values():
        if "::TestCommon" not in rec["nodeid"]:
            continue  # the harness's own checks (test_opdb_*...), not op cases
        op, test, dtype = parse_nodeid(rec["nodeid"], by_formatted)
        rec.setdefault("op", op)
        rec.setdefault("test", test)
        rec.setdefault("dtype", dtype)
        rec["op"], rec["test"], rec["dtype"] = op, test, dtype
        cases.append(rec)
    return op_db, cases


def _cell(counter):
    letters = [("P", "passed"), ("X", "xfailed"), ("S", "skipped"), ("F", "failed"), ("C", "crashed")]
    parts = [f"{counter[k]}{letter}" if counter[k] > 1 else letter for letter, k in letters if counter[k]]
    return " ".join(parts)


def summarize(args, wall_s):
    import torch
    op_db, cases = load(args.results)
    if not cases:
        print("no results to summarize")
        return
    dtype_order = ["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "complex32", "int64",
                   "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool"]
    dtypes = sorted({c["dtype"] for c in cases if c["dtype"]},
                    key=lambda d: dtype_order.index(d) if d in dtype_order else 99)
    tests = [t for t in ("test_compare_cpu", "test_compare_cpu_grad", "test_noncontiguous_samples", "test_out",
                         "test_errors") if any(c["test"] == t for c in cases)]
    lines = []
    w = lines.append

    # headline
    f32_entries = [op for op in op_db if torch.float32 in op.supported_dtypes("mlu")]
    cmp32 = {c["op"]: c for c in cases if c["test"] == "test_compare_cpu" and c["dtype"] == "float32"}
    passed32 = sum(1 for c in cmp32.values() if c["outcome"] == "passed")
    upstream_skipped = sum(1 for c in cmp32.values() if c["outcome"] == "skipped" and not (c.get("known") or ""))
    w("# OpInfo sweep on mlu")
    w("")
    w(f"Generated by `{args.command}` on {datetime.date.today().isoformat()} "
      f"(torch {torch.__version__}, git {git_rev()}), wall time {wall_s / 60:.1f} min on a "
      f"{os.cpu_count()}-core host. Harness: `tests/test_opinfo.py` over PyTorch's "
      f"`op_db` ({len(op_db)} entries); see its docstring and docs/testing.md.")
    w("")
    if cmp32:
        w("## Headline")
        w("")
        denominator = len(f32_entries)
        w(f"**float32 forward compare-with-CPU pass rate over op_db entries: {passed32}/{denominator} = "
          f"{100.0 * passed32 / denominator:.1f}%** (target 95%): op_db entries that support float32 whose "
          f"`test_compare_cpu` float32 passed. Every other outcome counts as not passed, including the "
          f"{upstream_skipped} entries op_db itself skips for test_compare_cpu (random numbers, uninitialized "
          f"outputs, CUDA-only ops). Excluding those: {passed32}/{denominator - upstream_skipped} = "
          f"{100.0 * passed32 / max(1, denominator - upstream_skipped):.1f}%.")
        w("")
        ran = [c for c in cmp32.values() if c.get("samples")]
        native = sum(1 for c in ran if c.get("path") == "native")
        mixed = sum(1 for c in ran if c.get("path") == "mixed")
        fb = sum(1 for c in ran if c.get("path") == "fallback")
        w(f"Of the {len(ran)} float32 compare-with-CPU cases that ran on mlu, {native} ran natively (no op "
          f"fell back to the CPU in any sample), {mixed} partly and {fb} entirely through the CPU fallback.")
        w("")

    # outcomes per test and per dtype
    w("## Outcomes")
    w("")
    w("passed; xfailed = expected failure, from tests/opinfo/known_failures.py (known) or op_db's own "
      "expectedFailure (upstream); skipped = op_db skip, or a known crash not run in-process; failed = "
      "unexpected failure (including an *unexpected pass* of a known failure); crashed = the case killed or "
      "hung the process (the sweep resumed after it).")
    w("")
    w("| test | cases | passed | xfailed (known) | xfailed (upstream) | skipped | failed | crashed | "
      "native | mixed | fallback |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in tests + ["all"]:
        sel = [c for c in cases if t == "all" or c["test"] == t]
        cnt = collections.Counter(c["outcome"] for c in sel)
        by = collections.Counter(c.get("xfail_by") for c in sel if c["outcome"] == "xfailed")
        path = collections.Counter(c.get("path") for c in sel if c.get("samples"))
        w(f"| {t} | {len(sel)} | {cnt['passed']} | {by['known']} | {by['upstream']} | {cnt['skipped']} | "
          f"{cnt['failed']} | {cnt['crashed']} | {path['native']} | {path['mixed']} | {path['fallback']} |")
    w("")
    w("| dtype | cases | passed | xfailed | skipped | failed | crashed | native | mixed | fallback |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in dtypes + [None]:
        sel = [c for c in cases if c["dtype"] == d]
        cnt = collections.Counter(c["outcome"] for c in sel)
        path = collections.Counter(c.get("path") for c in sel if c.get("samples"))
        w(f"| {d or '(none: test_errors)'} | {len(sel)} | {cnt['passed']} | {cnt['xfailed']} | {cnt['skipped']} | "
          f"{cnt['failed']} | {cnt['crashed']} | {path['native']} | {path['mixed']} | {path['fallback']} |")
    w("")

    # fallback ops
    users = collections.defaultdict(set)
    for c in cases:
        for name in (c.get("fallback_ops") or {}):
            users[name].add(c["op"])
    if users:
        w("## Ops that fell back to the CPU")
        w("")
        w("ATen ops seen in `torch_mlu.fallback_report()` while cases ran on mlu, by the number of op_db "
          "entries whose cases used them (the kernels that would help most first), with why each has no mlu "
          "kernel yet (tests/opinfo/fallback_reasons.py).")
        w("")
        top = sorted(users.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        w("| aten op | op_db entries | examples | why it falls back |")
        w("|---|---:|---|---|")
        for name, ops in top:
            w(f"| `{name}` | {len(ops)} | {', '.join(sorted(ops)[:6])} | {REASONS.get(name, 'not surveyed')} |")
        w("")

    # expected failures, by reason
    known = collections.defaultdict(list)
    for c in cases:
        if c["outcome"] == "xfailed" or (c["outcome"] == "skipped" and (c.get("known") or "")):
            why = c.get("known") or f"op_db expectedFailure: {c.get('raw_error') or ''}"[:160]
            if c["outcome"] == "xfailed" and c.get("xfail_by") == "upstream":
                why = "op_db's own expectedFailure (upstream)"
            known[why].append(c)
    if known:
        w("## Expected failures by reason")
        w("")
        w("From tests/opinfo/known_failures.py (`xfail:` run and must fail; `crash:` not run in-process) and "
          "op_db's own expectedFailures.")
        w("")
        w("| reason | cases | ops |")
        w("|---|---:|---|")
        for why, sel in sorted(known.items(), key=lambda kv: -len(kv[1])):
            ops = sorted({c["op"] for c in sel})
            more = f" (+{len(ops) - 12} more)" if len(ops) > 12 else ""
            w(f"| {why.replace('|', '/')} | {len(sel)} | {', '.join(ops[:12])}{more} |")
        w("")

    # unexpected failures and crashes
    bad = [c for c in cases if c["outcome"] in ("failed", "crashed")]
    if bad:
        w("## Unexpected failures and crashes")
        w("")
        w("| case | outcome | error |")
        w("|---|---|---|")
        for c in sorted(bad, key=lambda c: (c["op"], c["test"], c["dtype"] or "")):
            err = (c.get("error") or "").replace("|", "\\|").replace("\n", " ")[:200]
            w(f"| {c['op']} {c['test']} {c['dtype'] or ''} | {c['outcome']} | {err} |")
        w("")

    # ops x dtypes
    w("## Ops x dtypes")
    w("")
    w("Each cell aggregates the tests of that op and dtype: P passed, X expected failure, S skipped, "
      "F failed, C crashed (a count before the letter when more than one). `errors`: test_errors. "
      "`path`: float32 test_compare_cpu ran natively (N), partly (M) or entirely (F) through the fallback.")
    w("")
    w("| op | " + " | ".join(dtypes) + " | errors | path |")
    w("|---|" + "---|" * (len(dtypes) + 2))
    grid = collections.defaultdict(collections.Counter)
    for c in cases:
        grid[(c["op"], c["dtype"])][c["outcome"]] += 1
    for op in op_db:
        name = op.full_name
        if not any((name, d) in grid for d in dtypes + [None]):
            continue
        c32 = cmp32.get(name)
        path = {"native": "N", "mixed": "M", "fallback": "F"}.get((c32 or {}).get("path"), "")
        cells = [_cell(grid.get((name, d), collections.Counter())) for d in dtypes + [None]]
        w(f"| {name} | " + " | ".join(cells) + f" | {path} |")
    w("")
    os.makedirs(os.path.dirname(os.path.abspath(args.summary)), exist_ok=True)
    with open(args.summary, "w") as f:
        f.write("\n".join(lines))
    print(f"summary: {args.summary}")
    if cmp32:
        print(f"float32 compare-with-CPU: {passed32}/{len(f32_entries)} op_db entries passed "
              f"({100.0 * passed32 / len(f32_entries):.1f}%)")
    print("outcomes:", dict(collections.Counter(c["outcome"] for c in cases)))


def git_rev():
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True).strip()
    except Exception:
        return "?"


# --- known-failure candidates -------------------------------------------------------------------------

def guess_reason(error):
    """A reason category for a raw failure, from its error text (to be checked by hand)."""
    e = error or ""
    rules = [
        (r"ComplexHalf|complex32|chalf", "complex dtype not supported on mlu: complex32 (ComplexHalf)"),
        (r"dtype Complex\w* is not supported on mlu", "complex dtype not supported on mlu"),
        (r"convolution_overrideable", "no mlu kernel and the CPU fallback cannot run it: convolution reaches "
                                      "aten::convolution_overrideable, which has no CPU kernel"),
        (r"Jiterator", "CUDA-only op: jiterator"),
        (r"process died|timeout", "crashes the process: TODO find the failing op"),
        (r"memory location.*nothing was raised|nothing was raised.*memory location",
         "bug: the CPU fallback computes on host copies, so an out= overlapping an input is not detected"),
        (r"Tensor-likes are not close|Scalars are not close", "bug: values differ from the CPU: TODO"),
        (r"Unexpected success", "op_db expectedFailure does not describe mlu: TODO"),
    ]
    for pattern, reason in rules:
        if re.search(pattern, e):
            return reason
    return f"TODO: {e[:150]}"


def write_candidates(args):
    from opinfo import known_failures as kf
    _, cases = load(args.results)
    failing = collections.defaultdict(list)   # (op, test) -> [(dtype, error, crashed)]
    ran = collections.defaultdict(set)
    for c in cases:
        if c["test"] == "?" or (c["outcome"] == "skipped" and not c.get("raw")):
            continue
        ran[(c["op"], c["test"])].add(c["dtype"])
        raw_fail = c.get("raw") == "fail" or c["outcome"] in ("crashed", "failed")
        if c["outcome"] == "xfailed" and c.get("xfail_by") == "upstream":
            continue
        if raw_fail:
            failing[(c["op"], c["test"])].append((c["dtype"], c.get("raw_error") or c.get("error"),
                                                  c["outcome"] == "crashed"))
    out = ["# Candidate known failures generated by `tests/opinfo/sweep.py --regen-known-failures` from",
           f"# {args.results} on {datetime.date.today().isoformat()}. Check every reason by hand before",
           "# copying entries into tests/opinfo/known_failures.py (reasons marked TODO are guesses).", "",
           "CANDIDATES = ["]
    for (op, test), fails in sorted(failing.items()):
        dts = sorted({d for d, _, _ in fails if d})
        all_dtypes = dts and set(dts) == {d for d in ran[(op, test)] if d}
        crashed = any(c for _, _, c in fails)
        existing = kf.lookup(op, test, getattr(__import__("torch"), dts[0]) if dts else None)
        reason = existing.reason if existing else guess_reason(fails[0][1])
        kind = "crash" if crashed else "xfail"
        dtypes = "None" if (all_dtypes or not dts) else repr(tuple(dts))
        out.append(f"    KF({op!r}, {test!r}, {dtypes}, {kind!r},")
        out.append(f"       {reason!r}),  # {(fails[0][1] or '')[:100]!r}")
    out.append("]")
    stale = [k for k in kf.KNOWN_FAILURES if (k.op, k.test) not in failing and (k.op, k.test) in ran]
    if stale:
        out += ["", "# Listed in known_failures.py but passing now (remove them):"]
        out += [f"#   {k}" for k in stale]
    path = os.path.join(args.workdir, "known_failures_candidates.py")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"candidates: {path} ({len(failing)} op/test pairs failing, {len(stale)} listed entries passing)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtypes", help="comma list, e.g. float32 (default: every dtype each op supports)")
    p.add_argument("--tests", help="comma list of compare_cpu,compare_cpu_grad,out,noncontiguous_samples,errors")
    p.add_argument("--ops", help="comma list of op_db full names (default: all)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="parallel pytest processes (default 1)")
    p.add_argument("--timeout", type=int, default=240, help="seconds per case before it counts as hung")
    p.add_argument("--workdir", default=os.path.join(REPO, "build", "opinfo"))
    p.add_argument("--summary", default=os.path.join(REPO, "docs", "opinfo_summary.md"))
    p.add_argument("--summarize-only", action="store_true", help="only rewrite the summary from the results")
    p.add_argument("--run-crashers", action="store_true", help="also run the known crashing cases")
    p.add_argument("--regen-known-failures", action="store_true",
                   help="run with known_failures off; write build/opinfo/known_failures_candidates.py")
    args = p.parse_args()
    args.results = os.path.join(args.workdir, "results.jsonl")
    args.command = "tests/opinfo/sweep.py " + " ".join(sys.argv[1:]) if sys.argv[1:] else "make opinfo"
    t0 = time.time()
    if not args.summarize_only:
        run(args)
    wall = time.time() - t0
    if args.summarize_only:
        meta = os.path.join(args.workdir, "wall_s")
        wall = float(open(meta).read()) if os.path.exists(meta) else 0.0
    else:
        with open(os.path.join(args.workdir, "wall_s"), "w") as f:
            f.write(str(wall))
    if args.regen_known_failures:
        write_candidates(args)
    else:
        summarize(args, wall)


if __name__ == "__main__":
    main()
