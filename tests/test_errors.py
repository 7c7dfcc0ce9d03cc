"""Bad input gets a clear Python exception and the process keeps working."""
import pytest
import torch

import torch_mlu


def test_out_of_memory_is_torch_oom_and_recoverable():
    total = torch.mlu.get_device_properties(0).total_memory
    before = torch.accelerator.memory_allocated(0)
    with pytest.raises(torch.OutOfMemoryError, match=r"MLU out of memory\. Tried to allocate") as info:
        torch.empty(total // 4 + (1 << 20), 4, dtype=torch.uint8, device="mlu")
    assert "TORCH_MLU_DEVICE_MEMORY" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert torch.mlu.OutOfMemoryError is torch.OutOfMemoryError
    assert torch.accelerator.memory_allocated(0) == before
    assert torch.equal(torch.ones(4, device="mlu").cpu(), torch.ones(4))


def test_out_of_memory_after_filling_the_device(python):
    result = python(
        """
        import torch, torch_mlu
        keep = []
        try:
            while True:
                keep.append(torch.empty(16 << 20, dtype=torch.uint8, device="mlu"))
        except torch.OutOfMemoryError as e:
            print("oom", len(keep), "MLU out of memory." in str(e))
        keep.clear()
        print(torch.ones(2, device="mlu").sum().item())
        """,
        env={"TORCH_MLU_DEVICE_MEMORY": "128M"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("oom") and lines[0].endswith("True")
    assert int(lines[0].split()[1]) in (7, 8)
    assert lines[1] == "2.0"


def test_device_task_error_surfaces_at_next_sync_and_device_recovers():
    x = torch.ones(3, device="mlu")
    torch_mlu._C._mlu_launch_failing_task("index_select", "index 7 is out of bounds for dimension 0 with size 3")
    y = torch.empty(3, device="mlu")
    y.copy_(x)  # native and asynchronous: queued after the failure, and still runs
    with pytest.raises(torch.AcceleratorError, match=r"index_select: index 7 is out of bounds") as info:
        torch.mlu.synchronize()
    assert "MLU_LAUNCH_BLOCKING" in str(info.value)
    torch.mlu.synchronize()  # the error was read: the device is usable again
    assert torch.equal(y.cpu(), torch.ones(3))


def test_device_error_reported_by_a_blocking_copy():
    torch_mlu._C._mlu_launch_failing_task("gather", "index -9 is out of range")
    with pytest.raises(torch.AcceleratorError, match="gather: index -9"):
        torch.zeros(2, device="mlu").cpu()
    assert torch.zeros(2, device="mlu").cpu().tolist() == [0.0, 0.0]


def test_launch_blocking_reports_at_the_op(python):
    result = python(
        """
        import torch, torch_mlu
        x = torch.ones(2, device="mlu")
        gate = torch_mlu._C._StreamGate(timeout_s=0.2)  # never opened: fails after 0.2 s
        try:
            x.fill_(3.0)  # with MLU_LAUNCH_BLOCKING=1 this waits and reports the gate's failure
        except torch.AcceleratorError as e:
            print("raised at the op:", "stream gate" in str(e))
        """,
        env={"MLU_LAUNCH_BLOCKING": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "raised at the op: True"


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="Float8_e8m0fnu is not supported on mlu"):
        torch.zeros(2, dtype=torch.float8_e8m0fnu, device="mlu").fill_(1.0)
    assert torch.equal(torch.zeros(2, device="mlu").cpu(), torch.zeros(2))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_into_an_expanded_tensor_raise_the_cpus_error(op):
    overlap = "more than one element of the written-to tensor refers to a single memory location"
    expanded = torch.ones(1, 3, device="mlu").expand(4, 3)
    with pytest.raises(RuntimeError, match=overlap):
        getattr(torch, op)(torch.ones(4, 3, device="mlu"), 0, out=expanded)
    with pytest.raises(RuntimeError, match=overlap):
        getattr(expanded, op + "_")(0)
    scanned = torch.arange(1., 5., device="mlu")
    getattr(scanned, op + "_")(0)  # in place on its own memory: native, and the CPU's values
    assert scanned.tolist() == getattr(torch.arange(1., 5.), op)(0).tolist()
