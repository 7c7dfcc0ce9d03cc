"""The bad-input matrix: what a new user gets wrong, and what mlu must answer.

Every in-process case asserts the exception type and message, that the process stays usable (an op computes
the right value afterwards), and that memory_allocated() is back at its baseline on every device. Cases that
need a fresh process (configuration variables, fork, spawn, signals) run one. Operand devices have their own
sweep in test_device_checks.py; a few representative cases are repeated here so the matrix reads whole.
"""
import gc
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch
import torch.nn.functional as F

SAME_DEVICE = "Expected all tensors to be on the same device"
DEVICES = range(torch.mlu.device_count())


def _allocated():
    return [torch.mlu.memory_allocated(d) for d in DEVICES]


def _still_usable():
    for d in DEVICES:
        value = (torch.arange(10.0, device=f"mlu:{d}") * 2).sum().item()
        assert value == 90.0, f"mlu:{d} computes wrong values after the error"


def _bad_stream_for_other_device():
    with torch.mlu.stream(torch.mlu.Stream(device=1)):
        torch.mlu.Event().record(torch.mlu.current_stream(0))
        torch.mlu.Event().record()  # fine on its own
        event = torch.mlu.Event()
        event.record(torch.mlu.current_stream(0))
        event.record(torch.mlu.current_stream(1))


# (case id, action, exception type, message regex, deferred): a deferred error is a device-side error that the
# action's own synchronize raises.
CASES = [
    # invalid devices
    ("device_index_out_of_range", lambda: torch.ones(1, device="mlu:7"), RuntimeError,
     r"Invalid device argument: mlu:7 does not exist\. There are 2 MLU devices: use an index from 0 to 1", False),
    ("set_device_out_of_range", lambda: torch.mlu.set_device(5), RuntimeError, r"mlu:5 does not exist", False),
    ("move_to_missing_device", lambda: torch.ones(2).to("mlu:3"), RuntimeError, r"mlu:3 does not exist", False),
    ("properties_of_missing_device", lambda: torch.mlu.get_device_properties(9), AssertionError,
     r"Invalid device id", False),
    ("stream_on_missing_device", lambda: torch.mlu.Stream(device=9), RuntimeError, r"mlu:9 does not exist", False),
    ("mem_get_info_of_missing_device", lambda: torch.mlu.mem_get_info(9), RuntimeError, r"mlu:9 does not exist",
     False),
    # operands on other devices
    ("cat_with_cpu_operand", lambda: torch.cat([torch.zeros(4, device="mlu"), torch.ones(4)]), RuntimeError,
     SAME_DEVICE, False),
    ("matmul_across_devices", lambda: torch.ones(2, 2, device="mlu:0") @ torch.ones(2, 2, device="mlu:1"),
     RuntimeError, SAME_DEVICE, False),
    ("add_with_1d_cpu_tensor", lambda: torch.ones(3, device="mlu") + torch.ones(3), RuntimeError,
     r"found at least two devices, mlu:0 and cpu", False),
    ("gather_with_cpu_index", lambda: torch.gather(torch.ones(3, device="mlu"), 0, torch.tensor([0])),
     RuntimeError, SAME_DEVICE, False),
    # out of memory
    ("allocation_beyond_capacity", lambda: torch.empty(1 << 40, device="mlu"), torch.OutOfMemoryError,
     r"MLU out of memory\. Tried to allocate 4096\.00 GiB", False),
    ("allocation_beyond_capacity_on_mlu1", lambda: torch.empty(1 << 40, device="mlu:1"), torch.OutOfMemoryError,
     r"MLU out of memory\..*MLU 1 has a total capacity", False),
    # device-side errors (raised at the next synchronization)
    ("index_out_of_range", lambda: torch.ones(4, device="mlu")[torch.tensor([10], device="mlu")],
     torch.AcceleratorError, r"index 10 is out of bounds for dimension 0 with size 4", True),
    ("gather_index_out_of_range",
     lambda: torch.gather(torch.ones(4, 5, device="mlu"), 0, torch.full((1, 5), 9, device="mlu")),
     torch.AcceleratorError, r"gather\(\): index 9 is out of bounds", True),
    ("embedding_index_out_of_range", lambda: F.embedding(torch.tensor([7], device="mlu"),
                                                         torch.ones(4, 3, device="mlu")),
     torch.AcceleratorError, r"index 7 is out of bounds", True),
    ("nll_loss_target_out_of_range",
     lambda: F.nll_loss(torch.zeros(4, 5, device="mlu"), torch.tensor([0, 1, 2, 9], device="mlu")),
     torch.AcceleratorError, r"Target 9 is out of bounds", True),
    ("integer_division_by_zero",
     lambda: torch.ones(3, dtype=torch.long, device="mlu") // torch.zeros(3, dtype=torch.long, device="mlu"),
     torch.AcceleratorError, r"ZeroDivisionError", True),
    ("integer_division_by_zero_scalar", lambda: torch.ones(3, dtype=torch.long, device="mlu") // 0,
     RuntimeError, r"ZeroDivisionError", False),
    # streams and events
    ("elapsed_time_without_timing", lambda: torch.mlu.Event().elapsed_time(torch.mlu.Event()), ValueError,
     r"enable_timing=True", False),
    ("elapsed_time_before_record",
     lambda: torch.mlu.Event(enable_timing=True).elapsed_time(torch.mlu.Event(enable_timing=True)), ValueError,
     r"must be recorded", False),
    ("event_recorded_on_two_devices", _bad_stream_for_other_device, RuntimeError,
     r"Event device index 0 does not match recording stream's device index 1", False),
    ("set_stream_of_cpu", lambda: torch.mlu.set_stream(torch.Stream("cpu")), RuntimeError,
     r"expected an mlu stream", False),
    ("external_stream_that_is_no_queue", lambda: torch.mlu.ExternalStream(12345).synchronize(), RuntimeError,
     r"invalid resource handle \(ExternalStream\(0x3039\) is not a queue", False),
    # dtype limits
    ("float8_e8m0_on_mlu", lambda: torch.ones(2, device="mlu").to(torch.float8_e8m0fnu), NotImplementedError,
     r"dtype Float8_e8m0fnu is not supported on mlu\. Supported: bool, uint8", False),
    ("uint32_conversion_on_mlu", lambda: torch.ones(2, device="mlu").to(torch.uint32), NotImplementedError,
     r"dtype UInt32 is not supported on mlu", False),
    # zero-size
    ("max_of_empty", lambda: torch.zeros(0, device="mlu").max(), RuntimeError,
     r"Expected reduction dim to be specified for input\.numel\(\) == 0", False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_and_leaves_the_process_usable(case):
    _, action, error, message, deferred = case
    gc.collect()
    baseline = _allocated()
    def run():
        result = action()
        del result  # the traceback pytest keeps must not hold the output alive
        if deferred:
            torch.mlu.synchronize()

    with pytest.raises(error, match=message):
        run()
    if not deferred:
        torch.mlu.synchronize()  # nothing was left pending
    gc.collect()
    _still_usable()
    assert _allocated() == baseline, "memory_allocated() must return to its baseline"


def test_device_error_is_raised_once_then_the_device_recovers():
    torch.ones(4, device="mlu")[torch.tensor([10], device="mlu")]
    with pytest.raises(torch.AcceleratorError, match="index 10 is out of bounds"):
        torch.mlu.synchronize()
    torch.mlu.synchronize()  # reported once
    _still_usable()


# --- values that are not errors -------------------------------------------------------------------------------

def test_zero_size_tensors_behave_like_the_cpu():
    cases = [
        lambda t: t.sum(0), lambda t: t.mean(1), lambda t: t + 1, lambda t: t @ t.T,
        lambda t: t.T @ t, lambda t: torch.cat([t, t]), lambda t: t.softmax(0), lambda t: t.sort(0).values,
        lambda t: t.cumsum(0), lambda t: t[t > 0], lambda t: t.nonzero(), lambda t: torch.zeros_like(t).add_(2),
    ]
    for shape in [(0, 3), (3, 0), (0, 0)]:
        cpu = torch.zeros(shape)
        for fn in cases:
            expected = fn(cpu)
            actual = fn(cpu.to("mlu"))
            assert actual.device.type == "mlu"
            torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)
        for fn in (lambda t: t.amax(1), lambda t: t.amax(0), lambda t: t.max()):  # they need elements
            try:
                expected = fn(cpu)
            except (RuntimeError, IndexError) as cpu_error:
                with pytest.raises(type(cpu_error)) as mlu_error:
                    fn(cpu.to("mlu"))
                assert str(mlu_error.value) == str(cpu_error)
            else:
                torch.testing.assert_close(fn(cpu.to("mlu")).cpu(), expected)


@pytest.mark.parametrize("dims", [17, 20, 25])
def test_many_dimension_tensors_compute_like_the_cpu(dims):
    for shape in ([2] * 5 + [1] * (dims - 7) + [3, 2], [2] * 17 + [1] * (dims - 17)):
        cpu = torch.randn(shape)
        mlu = cpu.to("mlu")
        moved = (0, 16)
        for fn in (lambda t: t + 1, lambda t: t.transpose(*moved) * 2, lambda t: t.sum(), lambda t: t.sum(16),
                   lambda t: t.transpose(*moved).contiguous(), lambda t: t.exp().amax(0),
                   lambda t: t.permute(*reversed(range(dims))).contiguous(), lambda t: t.flip(-2) * 1,
                   lambda t: t.flip(0, 5, 16), lambda t: t.transpose(0, 16).fill_(2.0), lambda t: t[t > 0],
                   lambda t: (t > 0).nonzero(), lambda t: t.transpose(0, 16).bernoulli_(1.0)):
            torch.testing.assert_close(fn(mlu).cpu(), fn(cpu))


NONFINITE = torch.tensor([[0.0, float("nan"), 1.0, float("inf")], [-float("inf"), 2.0, -1.0, 0.5],
                          [float("nan"), float("nan"), 3.0, -2.0]])


@pytest.mark.parametrize("name,fn", [
    ("sum", lambda t: t.sum(1)), ("mean", lambda t: t.mean(0)), ("prod", lambda t: t.prod(1)),
    ("amax", lambda t: t.amax(1)), ("amin", lambda t: t.amin(0)), ("max_dim", lambda t: t.max(1)),
    ("argmax", lambda t: t.argmax(1)), ("argmin", lambda t: t.argmin(0)), ("sort", lambda t: t.sort(1)),
    ("topk_values", lambda t: t.topk(2, 1).values), ("softmax", lambda t: t.softmax(1)), ("log_softmax", lambda t: t.log_softmax(0)),
    ("clamp", lambda t: t.clamp(-1, 1)), ("maximum", lambda t: torch.maximum(t, t.flip(0))),
    ("fmax", lambda t: torch.fmax(t, t.flip(0))), ("nansum", lambda t: t.nansum(1)),
    ("cumsum", lambda t: t.cumsum(1)), ("exp_log", lambda t: t.exp().log()), ("relu", lambda t: t.relu()),
    ("isnan_isinf", lambda t: (t.isnan(), t.isinf(), t.isfinite())), ("eq", lambda t: t == t),
    ("nan_to_num", lambda t: t.nan_to_num()), ("matmul", lambda t: t @ t.T), ("sign", lambda t: t.sign()),
    ("floor_div", lambda t: torch.floor_divide(t, 0.0)), ("div_zero", lambda t: t / 0.0),
])
def test_nan_and_inf_propagate_like_the_cpu(name, fn):
    torch.testing.assert_close(torch.utils._pytree.tree_map(lambda x: x.cpu(), fn(NONFINITE.to("mlu"))),
                               fn(NONFINITE), equal_nan=True)


# --- device-side errors belong to the stream whose work failed -----------------------------------------------

def test_device_errors_are_raised_by_the_failing_streams_syncs_only():
    x = torch.ones(4, device="mlu")
    bad = torch.tensor([10], device="mlu")
    failing, other = torch.mlu.Stream(), torch.mlu.Stream()
    with torch.mlu.stream(failing):
        failing.wait_stream(torch.mlu.default_stream())
        before = torch.mlu.Event()
        before.record()
        x[bad]
        after = torch.mlu.Event()
        after.record()
    with torch.mlu.stream(other):
        assert (x * 3).sum().item() == 12.0  # a blocking copy on another stream
        other.synchronize()
    before.synchronize()  # recorded before the failing task
    with pytest.raises(torch.AcceleratorError, match="index 10 is out of bounds"):
        after.synchronize()
    failing.synchronize()  # taken by the event: reported once

    with torch.mlu.stream(failing):
        x[bad]
    with pytest.raises(torch.AcceleratorError, match="index 10 is out of bounds"):
        torch.mlu.synchronize()  # a device-wide sync reports any stream's error


def test_two_threads_never_see_each_others_device_errors():
    # Thread A fails on its stream and synchronizes it; thread B computes on its own stream. A must get every
    # one of its errors, and B none.
    rounds = 200
    errors = {"a_missed": 0, "b_raised": []}
    barrier = threading.Barrier(2)
    x = torch.ones(64, device="mlu")
    bad = torch.tensor([100], device="mlu")
    torch.mlu.synchronize()

    def thread_a():
        stream = torch.mlu.Stream()
        barrier.wait()
        with torch.mlu.stream(stream):
            for _ in range(rounds):
                x[bad]
                try:
                    stream.synchronize()
                    errors["a_missed"] += 1
                except torch.AcceleratorError:
                    pass

    def thread_b():
        stream = torch.mlu.Stream()
        barrier.wait()
        with torch.mlu.stream(stream):
            for _ in range(rounds):
                try:
                    assert (x * 2).sum().item() == 128.0
                    stream.synchronize()
                except torch.AcceleratorError as e:
                    errors["b_raised"].append(str(e).split("\n")[0])

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == {"a_missed": 0, "b_raised": []}
    torch.mlu.synchronize()


# --- fresh processes ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variable,value,accepted", [
    ("TORCH_MLU_DEVICE_MEMORY", "lots", "a positive byte count with an optional K, M, G or T suffix"),
    ("TORCH_MLU_DEVICE_MEMORY", "0", "a positive byte count"),
    ("TORCH_MLU_DEVICE_MEMORY", "-5", "a positive byte count"),
    ("TORCH_MLU_DEVICE_COUNT", "two", "an integer from 0 to 16"),
    ("TORCH_MLU_DEVICE_CORES", "0", "an integer from 1 to 1024"),
])
def test_invalid_configuration_is_an_error_naming_the_variable(python, variable, value, accepted):
    result = python(
        """
        import warnings, torch, torch_mlu
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(torch.mlu.is_available(), torch.mlu.device_count())
        print(caught[0].message)
        try:
            torch.ones(1, device="mlu")
        except RuntimeError as e:
            print(e)
        print(torch.ones(2).sum().item())  # the CPU is untouched
        """,
        env={variable: value},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().split("\n")
    expected = f"{variable}='{value}' is not valid: use {accepted}"
    assert lines[0] == "False 0"
    assert lines[1].startswith("MLU initialization: ") and expected in lines[1]
    assert lines[2].startswith("MLU initialization failed: ") and expected in lines[2]
    assert lines[3] == "2.0"


def test_forked_child_fails_on_inherited_tensors_and_never_hangs(python):
    result = python(
        """
        import os, torch, torch_mlu
        a = torch.ones(4, device="mlu")
        s = torch.mlu.Stream()
        pid = os.fork()
        if pid == 0:
            failures = []
            for use in (lambda: a.cpu(), lambda: a.sum().item(), lambda: a + 1, lambda: torch.ones(1, device="mlu"),
                        lambda: torch.mlu.synchronize(), lambda: s.synchronize(), lambda: a.to("mlu:1")):
                try:
                    use()
                    failures.append("no error")
                except RuntimeError as e:
                    if not str(e).startswith("Cannot re-initialize MLU in forked subprocess. To use MLU with "
                                             "multiprocessing, you must use the 'spawn' start method"):
                        failures.append(str(e))
            os._exit(len(failures))
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), (a + 1).sum().item())
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 8.0"


def test_dataloader_fork_workers_report_the_error_in_the_main_process(python):
    result = python(
        """
        import torch, torch_mlu
        from torch.utils.data import DataLoader, Dataset
        class OnMlu(Dataset):
            def __init__(self):
                self.data = torch.arange(8.0, device="mlu")
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return self.data[i].cpu()
        try:
            list(DataLoader(OnMlu(), batch_size=2, num_workers=2, multiprocessing_context="fork"))
        except RuntimeError as e:
            print("Caught RuntimeError in DataLoader worker process" in str(e),
                  "Cannot re-initialize MLU in forked subprocess" in str(e))
        print(torch.ones(2, device="mlu").sum().item())
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split("\n") == ["True True", "2.0"]


def test_spawned_children_use_mlu(tmp_path):
    script = tmp_path / "spawning.py"  # spawn pickles `work` by reference: it must live in a file
    script.write_text(
        "import torch, torch_mlu\n"
        "import torch.multiprocessing as mp\n"
        "def work(rank, queue):\n"
        "    queue.put((rank, (torch.ones(3, device=f'mlu:{rank}') * (rank + 1)).sum().item()))\n"
        "if __name__ == '__main__':\n"
        "    torch.ones(1, device='mlu')  # initialised in the parent: spawn is still fine\n"
        "    queue = mp.get_context('spawn').Queue()\n"
        "    mp.spawn(work, args=(queue,), nprocs=2)\n"
        "    print(sorted(queue.get(timeout=30) for _ in range(2)))\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[(0, 3.0), (1, 6.0)]"


def test_sigint_during_device_work_is_a_clean_keyboard_interrupt(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(
        "import faulthandler, signal, torch, torch_mlu\n"
        "faulthandler.register(signal.SIGUSR1, all_threads=True)  # the stacks, should it hang\n"
        # Python leaves SIGINT alone when it starts ignored (a background job of a non-interactive shell, as a CI
        # runner may start the suite): install the KeyboardInterrupt handler explicitly.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "x = torch.randn(256, 256, device='mlu')\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    x = (x @ x).tanh()\n"
        "    x.sum().item()\n"
    )
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)
        time.sleep(2)
        process.kill()
        _, stderr = process.communicate()
        pytest.fail("no exit 60 s after SIGINT; the child's stacks:\n" + stderr)
    assert "KeyboardInterrupt" in stderr, stderr
    assert process.returncode in (1, -signal.SIGINT, 130), (process.returncode, stderr)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_overflow_wraps_and_min_divided_by_minus_one_does_not_crash(dtype):
    info = torch.iinfo(dtype)
    a = torch.tensor([info.min, info.max, -7, 5, info.max // 2 + 3], dtype=dtype)
    b = torch.tensor([-1, -1, 2, -3, 3], dtype=dtype)
    for fn in (torch.floor_divide, torch.remainder, torch.fmod, lambda x, y: x * y * 7, torch.add, torch.sub,
               lambda x, y: -x, lambda x, y: x.abs(), lambda x, y: x.sum(), lambda x, y: x.prod(),
               lambda x, y: x.cumsum(0), lambda x, y: x.cumprod(0), lambda x, y: x.pow(3)):
        torch.testing.assert_close(fn(a.to("mlu"), b.to("mlu")).cpu(), fn(a, b), rtol=0, atol=0)
    # The CPU itself dies with SIGFPE on min / -1 in trunc mode; mlu gives the wrapped quotient.
    quotient = torch.div(a.to("mlu"), b.to("mlu"), rounding_mode="trunc").cpu()
    assert quotient.tolist() == [info.min, -info.max, -3, -1, (info.max // 2 + 3) // 3]
