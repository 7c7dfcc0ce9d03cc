"""The mlu stream sanitizer (torch_mlu/mlu/_sanitizer.py): each race kind is caught, synchronized programs are
quiet. The sanitizer activates PyTorch's device trace for the rest of a process, so every case runs in a
subprocess of its own.
"""
import os
import subprocess
import sys
import textwrap


from conftest import REPO, run_python

PRELUDE = """
import torch, torch_mlu
from torch_mlu.mlu._sanitizer import MLUSanitizerErrors, enable_mlu_sanitizer
enable_mlu_sanitizer()
side = torch.mlu.Stream()
main = torch.mlu.current_stream()

def fresh(n=4096):
    t = torch.zeros(n, device="mlu")
    torch.mlu.synchronize()  # no pending access: each case starts ordered
    return t

def expect(kind, fn):
    try:
        fn()
        torch.zeros(1, device="mlu").add_(1)  # an op after it: where a race found at a free is raised
    except MLUSanitizerErrors as e:
        torch.mlu.synchronize()  # while the case's tensors live (the traceback holds them): their frees are safe
        text = str(e.errors[0])
        print(f"CAUGHT {kind}: {type(e.errors[0]).__name__}")
        return text
    print(f"MISSED {kind}")
    return ""
"""


def run_case(body, env=None):
    result = run_python(PRELUDE + textwrap.dedent(body), env=env)
    return result


def test_each_race_kind_is_caught():
    result = run_case("""
    def write_after_write():
        a = fresh()
        with torch.mlu.stream(side):
            a.add_(1)
        a.mul_(2)                          # main writes while side may still write

    def read_after_write():
        b = fresh()
        with torch.mlu.stream(side):
            b.fill_(3)
        return b + 1                       # main reads what side writes

    def write_after_read():
        c = fresh()
        c.sum()                            # main reads
        with torch.mlu.stream(side):
            c.zero_()                      # side writes while main may still read

    def freed_without_record_stream():
        d = fresh()
        side.wait_stream(main)
        with torch.mlu.stream(side):
            d.add_(1)                      # side uses main's block ...
        del d                              # ... which main may reuse at once

    texts = {}
    for kind, fn in [("WAW", write_after_write), ("RAW", read_after_write), ("WAR", write_after_read),
                     ("FREE", freed_without_record_stream)]:
        texts[kind] = expect(kind, fn)
    print("----")
    print(texts["WAW"])
    print("----")
    print(texts["FREE"])
    """)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "CAUGHT WAW: UnsynchronizedAccessError" in out
    assert "CAUGHT RAW: UnsynchronizedAccessError" in out
    assert "CAUGHT WAR: UnsynchronizedAccessError" in out
    assert "CAUGHT FREE: FreedWhileInUseError" in out
    waw, free = out.split("----")[1:3]
    # The op, the tensor, both streams and both stack traces.
    assert "The mlu stream sanitizer detected a possible data race" in waw
    assert "aten::mul_.Tensor" in waw and "aten::add_.Tensor" in waw
    assert "by mlu:0 stream 0 during kernel" in waw and "Previous access by mlu:0 stream" in waw
    assert waw.count("write_after_write") >= 2 and "writing to argument(s) self" in waw
    assert "Tensor was allocated with stack trace" in waw and "in fresh" in waw
    assert "freed while another stream may still use it" in free and "record_stream" in free
    assert "freed_without_record_stream" in free


def test_synchronized_programs_are_quiet():
    result = run_case("""
    x = fresh()
    # Each hand-off between the streams is ordered, both ways.
    side.wait_stream(main)                 # wait_stream
    with torch.mlu.stream(side):
        x.add_(1)
    main.wait_stream(side)
    y = x * 2
    side.wait_stream(main)                 # an event recorded on side, waited for by main
    with torch.mlu.stream(side):
        x.mul_(3)
        done = torch.mlu.Event()
        done.record()
    done.wait(main)
    z = x + y
    side.wait_stream(main)                 # the host waits for side: a stream synchronize ...
    with torch.mlu.stream(side):
        x.sub_(1)
    side.synchronize()
    x.add_(1)
    side.wait_stream(main)                 # ... an event synchronize ...
    with torch.mlu.stream(side):
        x.add_(1)
        late = side.record_event()
    late.synchronize()
    x.add_(1)
    side.wait_stream(main)                 # ... a device synchronize
    with torch.mlu.stream(side):
        x.add_(1)
    torch.mlu.synchronize()
    x.add_(1)
    w = fresh()                            # record_stream makes freeing a block side used safe
    side.wait_stream(main)
    with torch.mlu.stream(side):
        w.add_(1)
        w.record_stream(side)
    del w
    v = fresh()                            # a view is its base's buffer; item() synchronizes side
    side.wait_stream(main)
    with torch.mlu.stream(side):
        v[:10].add_(1)
        total = v.sum().item()
    v.add_(total)
    print("clean", z.sum().item())
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "clean" in result.stdout and "data race" not in result.stderr


def test_environment_variable_enables_it_and_the_program_stops():
    code = """
import torch, torch_mlu
a = torch.zeros(100, device="mlu")
torch.mlu.synchronize()
s = torch.mlu.Stream()
with torch.mlu.stream(s):
    a.add_(1)
a.add_(1)
print("not reached")
"""
    result = run_python(code, env={"TORCH_MLU_SANITIZER": "1"})
    assert result.returncode != 0
    assert "MLUSanitizerErrors: detected 1 errors" in result.stderr
    assert "not reached" not in result.stdout
    quiet = run_python(code, env={"TORCH_MLU_SANITIZER": "0"})
    assert quiet.returncode == 0 and "not reached" in quiet.stdout


def test_stream_tests_pass_under_the_sanitizer():
    """The suite's own multi-stream tests are correctly synchronized: the sanitizer reports nothing."""
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                             os.path.join(REPO, "tests", "test_streams.py")],
                            capture_output=True, text=True, timeout=900, cwd=REPO,
                            env={**os.environ, "TORCH_MLU_SANITIZER": "1"})
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "data race" not in result.stdout + result.stderr


def test_ddp_step_is_quiet(tmp_path):
    """A DDP training step and collectives over cncl (two ranks): the backend's streams are ordered."""
    import test_distributed as dist_tests

    script = dist_tests.CUDA_SCRIPT.replace("cuda", "mlu").replace("nccl", "cncl")
    path = tmp_path / "train.py"
    path.write_text(script)
    out = dist_tests.finish(dist_tests.torchrun("--standalone", "--nproc_per_node", "2", str(path), cwd=tmp_path,
                                                env={"TORCH_MLU_SANITIZER": "1"}))
    assert "data race" not in out and "freed while" not in out, out
    assert [(tmp_path / f"ok_{r}.txt").read_text() for r in (0, 1)] == ["cncl mlu:0", "cncl mlu:1"]


def test_importing_through_torch_mlu_gives_the_same_module():
    """`import torch.mlu.<name>` is torch_mlu.mlu.<name>, not a second copy (one sanitizer, one autocast)."""
    result = run_python("""
import sys, torch, torch_mlu
import torch.mlu.amp, torch.mlu._sanitizer
from torch.mlu.fault_injection import inject
assert torch.mlu.amp is sys.modules["torch_mlu.mlu.amp"]
assert torch.mlu._sanitizer is sys.modules["torch_mlu.mlu._sanitizer"]
assert inject is torch_mlu.mlu.fault_injection.inject
try:
    import torch.mlu.no_such_module
except ModuleNotFoundError as e:
    print("missing:", e.name)
""")
    assert result.returncode == 0, result.stderr
    assert "missing: torch.mlu.no_such_module" in result.stdout
