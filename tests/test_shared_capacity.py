"""Note [Shared device capacity] (runtime/include/mlu_runtime/monitor.h): processes using one physical device share
its capacity, as on hardware. Each case runs its processes with sharing on (the suite's are off: conftest.py), a
registry directory of their own (TORCH_MLU_MONITOR_DIR) and 64 MiB devices."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

HOLDER = """
import sys, torch, torch_mlu
x = torch.empty(48 << 20, dtype=torch.uint8, device="mlu:0")
torch.mlu.synchronize()
print("holding", flush=True)
sys.stdin.read()  # until the test closes stdin (or kills this process)
"""

PROBE = """
import json, torch, torch_mlu
result = {}
free, total = torch.mlu.mem_get_info(0)
result["free"], result["total"] = free, total
result["used_by_all"] = torch.mlu.device_memory_used(0)
try:
    y = torch.empty(32 << 20, dtype=torch.uint8, device="mlu:0")
    result["big"] = "ok"
    del y
except torch.OutOfMemoryError as e:
    result["big"] = str(e)
torch.mlu.empty_cache()
small = torch.empty(12 << 20, dtype=torch.uint8, device="mlu:0")
result["small"] = "ok"
print(json.dumps(result))
"""


def env_for(tmp_path, **extra):
    return {**os.environ, "TORCH_MLU_MONITOR_DIR": str(tmp_path / "registry"), "TORCH_MLU_DEVICE_MEMORY": "64M",
            "TORCH_MLU_SHARED_CAPACITY": "1", **extra}


def probe(env):
    import json
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture
def holder(tmp_path):
    """A process holding 48 MiB of mlu:0's 64; yields its Popen."""
    procs = []

    def start(**extra):
        p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER)], env=env_for(tmp_path, **extra),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "holding", p.stderr.read()
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=60)


def test_a_second_process_on_a_full_device_runs_out_of_memory(tmp_path, holder):
    holder()
    got = probe(env_for(tmp_path))
    assert got["total"] == 64 << 20
    assert got["free"] <= 16 << 20, got
    assert got["used_by_all"] >= 48 << 20, got  # what mlu-smi shows: every process's use
    assert "MLU out of memory. Tried to allocate 32.00 MiB" in got["big"], got
    assert "Other processes hold" in got["big"], got
    assert got["small"] == "ok"


def test_a_killed_process_memory_comes_back(tmp_path, holder):
    p = holder()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    got = probe(env_for(tmp_path))  # its record is left behind, and found dead
    assert got["big"] == "ok", got
    assert not any(name.isdigit() and int(name) == p.pid for name in os.listdir(tmp_path / "registry"))


@pytest.mark.parametrize("how", ["sharing off", "another capacity"])
def test_processes_that_do_not_share(tmp_path, holder, how):
    if how == "sharing off":
        holder(TORCH_MLU_SHARED_CAPACITY="0")
        got = probe(env_for(tmp_path, TORCH_MLU_SHARED_CAPACITY="0"))
    else:
        holder(TORCH_MLU_DEVICE_MEMORY="128M")
        got = probe(env_for(tmp_path))
    assert got["big"] == "ok", got


def test_racing_processes_never_overcommit(tmp_path):
    # Four processes each try to take 24 MiB of a 64 MiB device at once: at most two can fit.
    code = """
    import sys, torch, torch_mlu
    try:
        x = torch.empty(24 << 20, dtype=torch.uint8, device="mlu:0")
        torch.mlu.synchronize()
        print("got", flush=True)
    except torch.OutOfMemoryError:
        print("oom", flush=True)
    sys.stdin.read()
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env_for(tmp_path),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        outcomes = sorted(p.stdout.readline().strip() for p in procs)
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=60)
    assert outcomes == ["got", "got", "oom", "oom"], outcomes
