"""torch.mlu device management and torch.accelerator on mlu."""
import gc
import pytest
import torch


def test_device_count_and_availability():
    assert torch.mlu.is_available() is True
    assert torch.mlu.device_count() == 2  # the default software machine
    assert torch.is_mlu_available() is True


def test_current_and_set_device():
    assert torch.mlu.current_device() == 0
    torch.mlu.set_device(1)
    assert torch.mlu.current_device() == 1
    torch.mlu.set_device("mlu:0")
    assert torch.mlu.current_device() == 0
    torch.mlu.set_device(torch.device("mlu", 1))
    assert torch.mlu.current_device() == 1


def test_current_device_is_per_thread():
    import threading

    torch.mlu.set_device(1)
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.mlu.current_device()))
    t.start()
    t.join()
    assert seen == [0]
    assert torch.mlu.current_device() == 1


def test_device_context_managers():
    with torch.mlu.device(1):
        assert torch.mlu.current_device() == 1
        assert torch.empty(1, device="mlu").device == torch.device("mlu", 1)
    assert torch.mlu.current_device() == 0
    x = torch.zeros(2, device="mlu:1")
    with torch.mlu.device_of(x):
        assert torch.mlu.current_device() == 1
    with torch.mlu.device_of(torch.zeros(2)):  # a CPU tensor changes nothing
        assert torch.mlu.current_device() == 0
    with torch.mlu.device(None):
        assert torch.mlu.current_device() == 0


def test_device_properties():
    props = torch.mlu.get_device_properties(0)
    assert isinstance(props.name, str) and "MLU" in props.name
    assert isinstance(props.total_memory, int) and props.total_memory > 0
    assert props.multi_processor_count >= 1
    assert props.is_integrated is False
    assert torch.mlu.get_device_name() == props.name  # no argument: the current device
    assert torch.mlu.get_device_name(1) == torch.mlu.get_device_properties("mlu:1").name
    major, minor = torch.mlu.get_device_capability()
    assert (major, minor) == (props.major, props.minor)
    assert isinstance(major, int) and isinstance(minor, int)
    assert torch.mlu.is_bf16_supported() is True
    assert "MLU" in repr(props)


def test_init_and_is_initialized():
    torch.mlu.init()
    assert torch.mlu.is_initialized()


def test_synchronize_accepts_device_forms():
    for device in (None, 0, 1, "mlu:1", torch.device("mlu", 0)):
        torch.mlu.synchronize(device)


def test_invalid_device_index_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"mlu:5 does not exist.*0 to 1"):
        torch.mlu.set_device(5)
    with pytest.raises(RuntimeError, match=r"mlu:7 does not exist"):
        torch.empty(3, device="mlu:7")
    with pytest.raises(RuntimeError, match=r"mlu:2 does not exist"):
        torch.ones(3).to("mlu:2")
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.mlu.get_device_properties(3)
    with pytest.raises(ValueError, match="Expected an mlu device"):
        torch.mlu.set_device("cpu")
    # the process goes on
    assert torch.mlu.current_device() == 0
    assert torch.ones(2, device="mlu").cpu().tolist() == [1.0, 1.0]


def test_accelerator_reports_mlu():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("mlu")
    assert torch.accelerator.device_count() == 2
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    assert torch.mlu.current_device() == 1
    torch.accelerator.set_device_index(0)
    with torch.accelerator.device_index(1):
        assert torch.mlu.current_device() == 1
    assert torch.mlu.current_device() == 0
    torch.accelerator.synchronize()
    stream = torch.accelerator.current_stream()
    assert stream.device == torch.device("mlu", 0)


def test_accelerator_memory_functions():
    gc.collect()  # an earlier test's cyclic garbage (e.g. a traceback holding tensors) must not be freed mid-test
    before = torch.accelerator.memory_allocated(0)
    x = torch.empty(1024, 1024, device="mlu")
    assert torch.accelerator.memory_allocated(0) >= before + x.numel() * 4
    assert torch.accelerator.max_memory_allocated(0) >= before + x.numel() * 4
    stats = torch.accelerator.memory_stats(0)
    assert stats["allocated_bytes.all.current"] == torch.accelerator.memory_allocated(0)
    del x
    assert torch.accelerator.memory_allocated(0) == before


def test_is_available_does_not_initialise(python):
    result = python(
        """
        import os, torch, torch_mlu
        os.environ["PYTORCH_CNDEV_BASED_MLU_CHECK"] = "1"
        assert torch.mlu.is_available()
        assert torch.mlu.device_count() == 2
        assert not torch.mlu.is_initialized()
        torch.ones(1, device="mlu")
        assert torch.mlu.is_initialized()
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("visible, count", [("1", 1), ("1,0", 2), ("0,7,1", 1), ("", 0)])
def test_visible_devices(python, visible, count):
    result = python(
        "import torch, torch_mlu; print(torch.mlu.device_count(), torch.mlu.is_available())",
        env={"MLU_VISIBLE_DEVICES": visible},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(count), str(count > 0)]


def test_visible_devices_set_after_import_count_until_first_device_call(python):
    # As CUDA_VISIBLE_DEVICES does until CUDA initialises; scripts (and gpu_migration) set it after `import torch`.
    result = python(
        """
        import os, torch, torch_mlu
        os.environ["MLU_VISIBLE_DEVICES"] = "1"
        print(torch.mlu.device_count())
        os.environ["MLU_VISIBLE_DEVICES"] = "0,1"
        print(torch.mlu.device_count())
        """,
        env={"TORCH_MLU_DEVICE_CORES": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1"]  # read once, at the first device call


def test_device_count_and_memory_are_configurable(python):
    result = python(
        "import torch, torch_mlu; print(torch.mlu.device_count(), torch.mlu.get_device_properties(3).total_memory)",
        env={"TORCH_MLU_DEVICE_COUNT": "4", "TORCH_MLU_DEVICE_MEMORY": "64M"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4", str(64 << 20)]


def test_no_visible_device_gives_clear_error(python):
    result = python(
        """
        import torch, torch_mlu
        assert not torch.mlu.is_available()
        try:
            torch.ones(1, device="mlu")
        except RuntimeError as e:
            print("error:", e)
        """,
        env={"MLU_VISIBLE_DEVICES": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "No MLU devices are available" in result.stdout
