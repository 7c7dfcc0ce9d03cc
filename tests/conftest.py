import gc
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, settings

# The suite's processes keep a device capacity each (TORCH_MLU_SHARED_CAPACITY=0; Note [Shared device capacity]):
# many tests count a device's free bytes exactly while other tests' processes come and go on it.
# tests/test_shared_capacity.py turns sharing on for its own processes. Each pytest-xdist worker (with the
# processes it starts) also keeps a registry directory of its own (Note [Monitor registry]), so a worker's
# mlu-smi listings show only its own processes.
os.environ["TORCH_MLU_SHARED_CAPACITY"] = "0"
if "PYTEST_XDIST_WORKER" in os.environ or "TORCH_MLU_MONITOR_DIR" not in os.environ:
    os.environ["TORCH_MLU_MONITOR_DIR"] = tempfile.mkdtemp(prefix="torch_mlu_monitor_")

import torch_mlu  # noqa: F401  (registers mlu even when autoload is off)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tools/test_wheel.sh runs tests against a wheel installed elsewhere: the torch_mlu
# they import, and the one their subprocesses import, must not be the tree's.
TESTING_INSTALLED = os.environ.get("TORCH_MLU_TEST_INSTALLED") == "1"
# `make test-expandable` runs the memory suite again with expandable segments: tests of the fixed-segment
# policy's exact sizes and events skip there (tests/test_expandable_segments.py covers the other mode).
EXPANDABLE_SEGMENTS = "expandable_segments:true" in os.environ.get("PYTORCH_MLU_ALLOC_CONF", "").lower()
fixed_segments_only = pytest.mark.skipif(
    EXPANDABLE_SEGMENTS, reason="asserts fixed segments' sizes or events; the process runs with expandable_segments:True")

# `make test` runs the suite once with device memory behind the host-access trap (Note [Host-access trap] in
# runtime/include/mlu_runtime/host_trap.h), then, without it, only the tests marked `untrapped` or
# `also_untrapped` (docs/testing.md). Under the trap, `untrapped` tests skip; any other test that skips with
# the trap named in its reason fails, so a test cannot quietly drop out of both passes.
TRAPPED = os.environ.get("TORCH_MLU_TRAP_HOST_ACCESS") == "1"

# The cncl watchdog's flight recorder dumps (Note [cncl watchdog]) of the tests' failing groups go to a folder of
# the session, and a failing rank waits at most 3 s for its peers' dumps (where the peer is gone, that is the wait).
os.environ.setdefault("TORCH_CNCL_DEBUG_INFO_TEMP_FILE",
                      os.path.join(tempfile.mkdtemp(prefix="torch_mlu_cncl_traces_"), "rank_"))
os.environ.setdefault("TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC", "3000")

if TESTING_INSTALLED:
    assert not os.path.abspath(torch_mlu.__file__).startswith(REPO + os.sep), (
        f"TORCH_MLU_TEST_INSTALLED=1 but torch_mlu comes from the source tree: {torch_mlu.__file__}")

# Property tests (test_properties.py): the same examples on every run unless HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def run_python(code, env=None, timeout=120, cwd=None):
    """Runs `code` in a fresh interpreter (in the tree, or `cwd`); returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full_env, timeout=timeout,
        cwd=cwd or (os.path.dirname(REPO) if TESTING_INSTALLED else REPO),
    )


@pytest.fixture
def python():
    return run_python


@pytest.fixture
def released_graphs():
    """Compiled code and the mlu graphs it recorded (their memory pools) let go after the test: the model holds its
    compiled call and Dynamo's cache holds the model, so neither goes with the test's frame."""
    yield
    torch._dynamo.reset()
    gc.collect()
    torch.mlu.synchronize()
    torch.mlu.empty_cache()


@pytest.fixture
def migration():
    """The CUDA migration applied for one test (torch_mlu.utils.gpu_migration), restored after it."""
    import torch_mlu.utils.gpu_migration as gpu_migration
    gpu_migration.apply()
    try:
        yield gpu_migration
    finally:
        gpu_migration.restore()


@pytest.fixture(autouse=True)
def _clean_device_state():
    """Each test starts on device 0 with no pending device error."""
    torch.mlu.set_device(0)
    yield
    for d in range(torch.mlu.device_count()):
        torch.mlu.synchronize(d)
    torch.mlu.set_device(0)
    migration = sys.modules.get("torch_mlu.utils.gpu_migration")
    if migration is not None and migration.is_applied():  # it would turn every later test in this worker to CUDA
        migration.restore()
        pytest.fail("the test left gpu_migration applied: restore() it (the `migration` fixture does)")


def _results(value):
    """The results of a run as a flat list: tuples and lists (named tuples too) unpacked, depth first."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _results(v)]
    return [value]


def assert_native_matches_cpu(fn, *args, rtol=None, atol=None, tolerances=None, equal_nan=False,
                              check_stride=False, on_mlu=True, compare=None, fell_back=None, msg=None):
    """Asserts that fn runs natively on mlu (no op through the CPU fallback) and agrees with stock PyTorch on the CPU.

    fn(*args) runs on args as given, then, with the fallback report reset, with every tensor of args moved to mlu;
    with no args, fn(device) runs with "cpu", then with "mlu". The results (tensors, nested tuples / lists of them;
    other values compared with ==) pair up one to one: each mlu tensor on mlu, of the CPU's dtype and shape, and
    close to it by torch.testing.assert_close. Returns the mlu run's results.

    Options: rtol / atol, or tolerances(dtype) -> dict(rtol=, atol=) (default: PyTorch's for the dtype);
    equal_nan; check_stride: strides equal too; on_mlu=False: fn copies its results to the CPU itself;
    compare(i, got, want): replaces the value comparison of the i-th result (got on the CPU), for another oracle;
    fell_back: a set that collects the fallback's ops instead of asserting there are none; msg: a prefix for the
    failure messages.
    """
    where = (lambda i: f"{msg}: result {i}") if msg else (lambda i: f"result {i}")
    expected = fn(*args) if args else fn("cpu")
    torch_mlu.reset_fallback_report()
    actual = fn(*[a.to("mlu") if isinstance(a, torch.Tensor) else a for a in args]) if args else fn("mlu")
    report = torch_mlu.fallback_report()
    if fell_back is not None:
        fell_back.update(report)
    else:
        assert report == {}, f"{msg + ': ' if msg else ''}the mlu run used the CPU fallback: {report}"
    got, want = _results(actual), _results(expected)
    assert len(got) == len(want), f"{msg + ': ' if msg else ''}{len(got)} results on mlu, {len(want)} on the CPU"
    for i, (a, e) in enumerate(zip(got, want)):
        if not isinstance(a, torch.Tensor) or not isinstance(e, torch.Tensor):
            same = not isinstance(a, torch.Tensor) and not isinstance(e, torch.Tensor) and a == e
            assert same, f"{where(i)}: {a!r} on mlu, {e!r} on the CPU"
            continue
        if on_mlu:
            assert a.device.type == "mlu", f"{where(i)} of the mlu run is on {a.device}"
        assert a.dtype == e.dtype and a.shape == e.shape, \
            f"{where(i)}: {a.dtype} {tuple(a.shape)} on mlu, {e.dtype} {tuple(e.shape)} on the CPU"
        if check_stride:
            assert a.stride() == e.stride(), f"{where(i)}: strides {a.stride()} on mlu, {e.stride()} on the CPU"
        a, e = a.detach().cpu(), e.detach()
        if compare is not None:
            compare(i, a, e)
            continue
        tol = tolerances(e.dtype) if tolerances is not None else \
            {} if rtol is None and atol is None else dict(rtol=rtol, atol=atol)
        torch.testing.assert_close(a, e, equal_nan=equal_nan, msg=lambda m, i=i: f"{where(i)}: {m}", **tol)
    return actual


@pytest.fixture
def native_oracle():
    """assert_native_matches_cpu: runs an op on mlu and on the CPU, asserts the mlu run is native and agrees."""
    return assert_native_matches_cpu


def pytest_collection_modifyitems(config, items):
    if not TRAPPED:
        return
    skip = pytest.mark.skip(reason="needs device memory outside the host-access trap (marker untrapped): "
                                   "`make test` runs it in the untrapped pass")
    for item in items:
        if item.get_closest_marker("untrapped") is not None:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (TRAPPED and report.skipped) or item.get_closest_marker("untrapped") is not None:
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if "trap" in reason.lower():
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} skipped under the host-access trap ({reason}) without the `untrapped` "
                           "marker, so no pass of `make test` would run it: mark it @pytest.mark.untrapped")
