"""16-bit results equal to the CPU's to the bit where the CPU's rounding is well defined (issue 33)."""
import pytest
import torch

import torch_mlu  # noqa: F401


def special_values(dtype):
    info = torch.finfo(dtype)
    return torch.tensor([0.0, -0.0, 1.0, -1.0, info.tiny, -info.tiny, info.max, -info.max, float("inf"),
                         float("-inf"), float("nan"), info.smallest_normal / 4, 3.5, -2.25], dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_nextafter_steps_in_the_storage_type(dtype):
    # Note [nextafter in 16 bits]: one step of the 16-bit type, not a float step rounded back.
    values = special_values(dtype)
    a = values.repeat_interleave(len(values))
    b = values.repeat(len(values))
    torch.manual_seed(0)
    a = torch.cat([a, torch.randn(2000).to(dtype)])
    b = torch.cat([b, torch.randn(2000).to(dtype)])
    expected = torch.nextafter(a, b)
    actual = torch.nextafter(a.to("mlu"), b.to("mlu")).cpu()
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(expected.view(torch.int16 if dtype.itemsize == 2 else expected.dtype)[~expected.isnan()],
                       actual.view(torch.int16 if dtype.itemsize == 2 else actual.dtype)[~actual.isnan()])
    one = torch.ones(1, dtype=dtype)
    if dtype.itemsize == 2:
        assert torch.nextafter(one.to("mlu"), 2 * one.to("mlu")).item() > 1  # it moves
    out = torch.empty_like(a, device="mlu")
    torch.nextafter(a.to("mlu"), b.to("mlu"), out=out)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0, equal_nan=True)
