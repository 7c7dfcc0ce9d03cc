"""PyTorch's device-generic APIs on mlu: torch.accelerator (capability, memory) and the generic RNG paths,
against the torch.mlu functions they stand for."""
import warnings

import pytest
import torch

KERNEL_DTYPES = {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                 torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128}
FLOAT8 = {torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz}
SUPPORTED = KERNEL_DTYPES | {torch.complex32} | FLOAT8  # storage and conversions
ALL_DTYPES = {getattr(torch, name) for name in dir(torch) if isinstance(getattr(torch, name), torch.dtype)}


def converts(dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "ComplexHalf support is experimental"
        try:
            x = torch.ones(3, dtype=dtype, device="mlu")
            ones = torch.ones(3, dtype=torch.complex128)
            return all(torch.equal(x.to(other).to(dtype).cpu().to(torch.complex128), ones) for other in KERNEL_DTYPES)
        except (RuntimeError, NotImplementedError):
            return False


def test_device_capability_lists_exactly_the_dtypes_that_work():
    capability = torch.accelerator.get_device_capability("mlu:0")
    assert set(capability) == {"supported_dtypes"}
    assert capability["supported_dtypes"] == SUPPORTED
    assert torch.accelerator.get_device_capability() == capability == torch.accelerator.get_device_capability(1)
    for dtype in sorted(ALL_DTYPES - SUPPORTED, key=str):
        assert not converts(dtype), dtype  # a dtype left out really does not work
    for dtype in SUPPORTED:
        assert converts(dtype), dtype
    with pytest.raises((RuntimeError, ValueError), match="9"):
        torch.accelerator.get_device_capability("mlu:9")


def test_accelerator_memory_reads_the_mlu_allocator():
    import torch.accelerator.memory as generic
    for d in (0, 1):
        torch.mlu.synchronize(d)
        x = torch.empty(3 << 20, dtype=torch.uint8, device=f"mlu:{d}")
        assert generic.memory_allocated(d) == torch.mlu.memory_allocated(d)
        assert generic.memory_reserved(d) == torch.mlu.memory_reserved(d)
        assert generic.max_memory_allocated(d) == torch.mlu.max_memory_allocated(d)
        assert generic.max_memory_reserved(d) == torch.mlu.max_memory_reserved(d)
        assert generic.get_memory_info(d) == torch.mlu.mem_get_info(d)
        stats = generic.memory_stats(d)
        assert stats["allocated_bytes.all.current"] == torch.mlu.memory_stats(d)["allocated_bytes.all.current"]
        del x
        generic.reset_peak_memory_stats(d)
        assert generic.max_memory_allocated(d) == torch.mlu.memory_allocated(d)
        generic.reset_accumulated_memory_stats(d)
        assert torch.mlu.memory_stats(d)["allocation.all.allocated"] == 0
    torch.mlu.synchronize()
    y = torch.empty(30 << 20, dtype=torch.uint8, device="mlu")
    del y
    before = torch.mlu.memory_reserved(0)
    generic.empty_cache()
    assert torch.mlu.memory_reserved(0) <= before - (30 << 20)
    # torch.accelerator.memory._snapshot (private) calls torch.cuda's binding for every accelerator but xpu
    # in torch 2.13; torch.mlu.memory._snapshot is mlu's.


def test_generic_random_paths_seed_mlu():
    torch.manual_seed(7)  # seeds every device's generator too
    a = torch.rand(5, device="mlu")
    torch.manual_seed(7)
    assert torch.equal(a, torch.rand(5, device="mlu"))
    module = torch.get_device_module("mlu")
    state = module.get_rng_state()
    b = torch.rand(5, device="mlu")
    with torch.random.fork_rng(device_type="mlu"):
        torch.rand(100, device="mlu")
    module.set_rng_state(state)
    assert torch.equal(b, torch.rand(5, device="mlu"))
    g = torch.Generator("mlu").manual_seed(3)
    c = torch.randn(4, device="mlu", generator=g)
    assert torch.equal(c, torch.randn(4, device="mlu", generator=torch.Generator("mlu").manual_seed(3)))
