import os
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, settings

import torch_mlu  # noqa: F401  (registers mlu even when autoload is off)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Property tests (test_properties.py): the same examples on every run unless HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def run_python(code, env=None, timeout=120):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full_env, timeout=timeout, cwd=REPO,
    )


@pytest.fixture
def python():
    return run_python


@pytest.fixture(autouse=True)
def _clean_device_state():
    """Each test starts on device 0 with no pending device error."""
    torch.mlu.set_device(0)
    yield
    for d in range(torch.mlu.device_count()):
        torch.mlu.synchronize(d)
    torch.mlu.set_device(0)
