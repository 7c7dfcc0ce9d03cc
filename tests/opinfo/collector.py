"""pytest plugin of the OpInfo sweep: one JSON line per test case (tests/opinfo/sweep.py loads it).

Load with ``-p opinfo.collector`` (``tests/`` on PYTHONPATH). Environment:

  MLU_OPINFO_RESULTS  file the records are appended to (flushed per line, so a crash loses nothing but
                      the case that crashed, whose "start" line has no matching result line)
  MLU_OPINFO_DONE     optional file of node ids (one a line) to deselect: the cases a crashed run already
                      reported, so that a resumed run continues after them

Result line: {"event": "result", "nodeid", "outcome": passed|failed|skipped|xfailed, "xfail_by":
known|upstream, "reason", "error", "duration", plus the facts the test body recorded (op, test, dtype,
samples, native_samples, path native|fallback|mixed, fallback_ops, raw, raw_error, known)}.
"""
import json
import os
import time

import pytest

from opinfo import record


class Collector:
    def __init__(self, path, done_path=None):
        self.path = path
        self.done = set()
        if done_path and os.path.exists(done_path):
            with open(done_path) as f:
                self.done = {line.strip() for line in f if line.strip()}
        self.reports = {}

    def _write(self, obj):
        with open(self.path, "a") as f:
            f.write(json.dumps(obj) + "\n")
            f.flush()

    def pytest_collection_modifyitems(self, config, items):
        if not self.done:
            return
        keep = [i for i in items if i.nodeid not in self.done]
        deselected = [i for i in items if i.nodeid in self.done]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = keep

    def pytest_runtest_logstart(self, nodeid, location):
        self.reports[nodeid] = []
        self._write({"event": "start", "nodeid": nodeid, "time": time.time()})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        error = None
        if call.excinfo is not None and report.outcome == "failed":
            e = call.excinfo.value
            cause = e.__cause__ if type(e) is Exception and e.__cause__ is not None else e
            error = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:300] if str(cause).strip() else ''}"
        report._opinfo_error = error

    def pytest_runtest_logreport(self, report):
        self.reports.setdefault(report.nodeid, []).append(report)
        if report.when != "teardown":
            return
        phases = self.reports.pop(report.nodeid)
        outcome, reason, error, xfail_by = "passed", None, None, None
        for r in phases:
            if r.failed:
                outcome = "failed"
                error = error or getattr(r, "_opinfo_error", None) or r.longreprtext.strip().splitlines()[-1][:300]
                if r.when != "call":
                    error = f"({r.when}) {error}"
                break
        else:
            for r in phases:
                if hasattr(r, "wasxfail"):
                    outcome, reason = "xfailed", r.wasxfail
                    xfail_by = "known" if r.wasxfail.startswith("known_failures") else "upstream"
                    break
                if r.skipped:
                    outcome = "skipped"
                    reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
                    break
        cls_method = "::".join(report.nodeid.split("::")[-2:])
        case = record.CASES.pop(cls_method, None)
        line = {"event": "result", "nodeid": report.nodeid, "outcome": outcome, "xfail_by": xfail_by,
                "reason": reason, "error": error,
                "duration": round(sum(r.duration for r in phases), 4)}
        if case is not None:
            line.update(case.as_dict())
        self._write(line)


_collector = None


def pytest_configure(config):
    global _collector
    path = os.environ.get("MLU_OPINFO_RESULTS")
    if path and _collector is None:
        _collector = Collector(path, os.environ.get("MLU_OPINFO_DONE"))
        config.pluginmanager.register(_collector, "opinfo-collector")
