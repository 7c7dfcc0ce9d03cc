"""The device monitor: `mlu-smi` / `cnmon` and torch.mlu.utilization, device_memory_used, list_gpu_processes
(Note [Monitor registry] in runtime/include/mlu_runtime/monitor.h).

Other processes of this user (other test runs) may be listed too: every check looks for its own pids.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import torch_mlu

SMI = pathlib.Path(sys.executable).parent / "mlu-smi"
BINARY = pathlib.Path(torch_mlu.__file__).parent / "bin" / "mlu-smi"

# A process that holds `mib` MiB on mlu:0 and queues on it (a side stream: the pool), reports what its own device counts, then waits.
HOLDER = textwrap.dedent("""
    import sys, torch, torch_mlu
    mib = int(sys.argv[1])
    x = torch.empty(mib * 2**20, dtype=torch.uint8, device="mlu")
    side = torch.mlu.Stream()
    with torch.mlu.stream(side):
        y = x[:10] + 1
    torch.mlu.synchronize()
    free, total = torch.mlu.mem_get_info()
    print(total - free, flush=True)
    sys.stdin.readline()
""")


def smi(*args, check=True):
    command = [str(SMI)] if SMI.exists() else [str(BINARY)]
    result = subprocess.run(command + list(args), capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def smi_json(*args):
    return json.loads(smi("--json", *args).stdout)


def process_entry(report, pid, device=0):
    for process in report["devices"][device]["processes"]:
        if process["pid"] == pid:
            return process
    return None


@pytest.fixture
def holders():
    started = []

    def start(mib):
        process = subprocess.Popen([sys.executable, "-c", HOLDER, str(mib)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.stdin.close()
            process.wait(timeout=60)


def test_two_processes_show_up_with_their_memory(holders):
    first, second = holders(24), holders(64)
    held = {first.pid: int(first.stdout.readline()), second.pid: int(second.stdout.readline())}
    report = smi_json()
    for pid, memory in held.items():
        entry = process_entry(report, pid)
        assert entry is not None, f"pid {pid} missing from {report}"
        assert entry["memory_used"] == memory
        assert entry["queues"] >= 2 and entry["busy_queues"] == 0  # the default queue and the stream pool
        assert "-c" in entry["command"]
    device = report["devices"][0]
    assert device["memory_used"] >= sum(held.values())
    assert torch.mlu.device_memory_used(0) >= sum(held.values())
    listing = torch.mlu.list_gpu_processes(0)
    assert listing.splitlines()[0] == "MLU:0"
    for pid, memory in held.items():
        assert f"process {pid:>10d} uses {memory / 2**20:>12.3f} MB MLU memory" in listing
    # Device 1 is untouched by them.
    assert process_entry(report, first.pid, device=1) is None
    table = smi().stdout
    assert str(first.pid) in table and str(second.pid) in table and "MLU590 (software MLU)" in table


def test_killed_process_disappears(holders):
    victim = holders(8)
    victim.stdout.readline()
    record = pathlib.Path(torch_mlu._C._mlu_monitor_directory()) / str(victim.pid)
    assert process_entry(smi_json(), victim.pid) is not None and record.exists()
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert record.exists()  # nothing ran in the victim to remove it
    assert process_entry(smi_json(), victim.pid) is None
    assert not record.exists()  # the reader deleted it


def test_exiting_process_removes_its_record(holders):
    leaver = holders(4)
    leaver.stdout.readline()
    record = pathlib.Path(torch_mlu._C._mlu_monitor_directory()) / str(leaver.pid)
    assert record.exists()
    leaver.stdin.close()
    assert leaver.wait(timeout=60) == 0
    assert not record.exists()


def test_json_schema():
    torch.ones(4, device="mlu")  # this process holds memory on device 0
    report = smi_json()
    assert set(report) == {"timestamp", "runtime_version", "devices"}
    assert isinstance(report["runtime_version"], int)
    assert len(report["devices"]) >= torch.mlu.device_count()
    for index, device in enumerate(report["devices"]):
        assert set(device) == {"index", "name", "memory_used", "memory_total", "utilization", "queues",
                               "busy_queues", "processes"}
        assert device["index"] == index
        assert 0 <= device["utilization"] <= 100
        assert 0 <= device["busy_queues"] <= device["queues"]
        for process in device["processes"]:
            assert set(process) == {"pid", "command", "memory_used", "utilization", "queues", "busy_queues"}
            assert isinstance(process["pid"], int) and isinstance(process["command"], str)
    own = process_entry(report, os.getpid())
    assert own is not None
    free, total = torch.mlu.mem_get_info(0)
    assert own["memory_used"] == total - free
    # Each process's software device has its own capacity (mlu_runtime/monitor.h) and the report gives the first
    # one's: another test's process on device 0 may run with a smaller TORCH_MLU_DEVICE_MEMORY.
    others = [p for p in report["devices"][0]["processes"] if p["pid"] != os.getpid()]
    assert report["devices"][0]["memory_total"] == total or others


def test_options():
    only = smi_json("-i", "1")
    assert [d["index"] for d in only["devices"]] == [1]
    lines = smi("--json", "-l", "0.05", "-c", "3").stdout.splitlines()
    assert len(lines) == 3 and all(json.loads(line)["devices"] for line in lines)
    bad = smi("-i", "7", check=False)
    assert bad.returncode == 2 and "no device 7" in bad.stderr
    bad = smi("-l", "soon", check=False)
    assert bad.returncode == 2 and "-l expects a positive number of seconds" in bad.stderr
    assert "usage: mlu-smi" in smi("--help").stdout
    if SMI.exists():  # the console scripts (installed by pip install)
        alias = subprocess.run([str(SMI.parent / "cnmon"), "--json"], capture_output=True, text=True, timeout=60)
        assert alias.returncode == 0 and json.loads(alias.stdout)["devices"]


def test_utilization_follows_the_work():
    x = torch.randn(512, 512, device="mlu")
    start = time.monotonic()
    while time.monotonic() - start < 0.6:
        x = torch.tanh(x @ x)
    torch.mlu.synchronize()
    busy, memory_busy = torch.mlu.utilization(), torch.mlu.memory_usage()
    assert 30 <= busy <= 100, busy
    assert 30 <= memory_busy <= 100, memory_busy  # every task reads or writes device memory
    assert process_entry(smi_json(), os.getpid())["utilization"] >= 10
    time.sleep(1.2)  # a second with nothing running in this process
    # The device-wide figure sums every process on the device (other test workers too): this process's is 0.
    report = smi_json()
    for device in (0, 1):
        entry = process_entry(report, os.getpid(), device)
        assert entry is None or entry["utilization"] == 0, entry
        assert 0 <= torch.mlu.utilization(device) <= 100
    with pytest.raises(ValueError, match="Expected an mlu device"):
        torch.mlu.utilization("cpu")


@pytest.mark.parametrize("query", ["temperature", "power_draw", "clock_rate"])
def test_sensors_the_software_mlu_lacks_say_so(query):
    with pytest.raises(RuntimeError, match=f"torch.mlu.{query}: not available on mlu:0: the software MLU"):
        getattr(torch.mlu, query)()
    with pytest.raises(RuntimeError, match="not available on mlu:1"):
        getattr(torch.mlu, query)("mlu:1")
    with pytest.raises(ValueError, match="Expected an mlu device"):
        getattr(torch.mlu, query)("cpu")
    assert torch.ones(2, device="mlu").sum().item() == 2  # the process goes on


def test_memory_usage_and_device_memory_used_agree_with_the_monitor():
    assert torch.mlu.memory_usage("mlu:1") == torch.mlu.utilization("mlu:1")
    x = torch.empty(8 << 20, dtype=torch.uint8, device="mlu")
    assert torch.mlu.device_memory_used() >= torch.mlu.memory_reserved() >= 8 << 20
    del x
