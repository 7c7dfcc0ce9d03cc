#!/usr/bin/env python3
"""Where the pytest passes of `make test` spend their time: tables for docs/testing.md.

Reads the JUnit reports the passes write (build/test-reports/<stage>.xml) and prints, in Markdown, the
time of each pass, its slowest files and its slowest tests.

    python tools/test_times.py [--top N] [REPORT.xml ...]
"""
import argparse
import collections
import glob
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cases(path):
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = case.get("name", "")
        # classname is tests.test_x (or tests.test_x.Class): the file is the first test_* part.
        file = next((part for part in module if part.startswith("test_")), ".".join(module))
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else \
            "skipped" if case.find("skipped") is not None else "passed"
        yield file, name, float(case.get("time", 0)), outcome


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    reports = args.reports or sorted(glob.glob(os.path.join(ROOT, "build", "test-reports", "*.xml")))
    if not reports:
        sys.exit("test_times: no reports (run `make test`, or a pytest stage of it, first)")
    for report in reports:
        stage = os.path.splitext(os.path.basename(report))[0]
        by_file = collections.defaultdict(lambda: [0.0, 0])
        tests = []
        counts = collections.Counter()
        for file, name, seconds, outcome in cases(report):
            by_file[file][0] += seconds
            by_file[file][1] += 1
            tests.append((seconds, f"{file}::{name}"))
            counts[outcome] += 1
        total = sum(t for t, _ in tests)
        print(f"### {stage}: {total:.0f} s in tests; " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        print()
        files = sorted(by_file.items(), key=lambda kv: -kv[1][0])[:args.top]
        print(table(["file", "tests", "s", "share"],
                    [(f, n, f"{t:.0f}", f"{100 * t / total:.0f}%") for f, (t, n) in files]))
        print()
        print(table(["test", "s"], [(name, f"{t:.1f}") for t, name in sorted(tests, reverse=True)[:args.top]]))
        print()


if __name__ == "__main__":
    main()
