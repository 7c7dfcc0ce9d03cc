"""Factories, views, resize_, set_, fill_, zero_ and printing on mlu."""
import pytest
import torch


def test_empty_and_empty_strided():
    x = torch.empty(2, 3, device="mlu")
    assert x.shape == (2, 3) and x.device == torch.device("mlu", 0) and x.is_contiguous()
    y = torch.empty_strided((2, 3), (1, 2), device="mlu:1", dtype=torch.float64)
    assert y.stride() == (1, 2) and y.device == torch.device("mlu", 1) and y.dtype == torch.float64
    z = torch.empty(2, 3, 4, 5, device="mlu", memory_format=torch.channels_last)
    assert z.is_contiguous(memory_format=torch.channels_last)
    assert torch.empty(0, device="mlu").numel() == 0


def test_factories_through_fill():
    assert torch.equal(torch.zeros(2, 3, device="mlu").cpu(), torch.zeros(2, 3))
    assert torch.equal(torch.ones(4, dtype=torch.int16, device="mlu").cpu(), torch.ones(4, dtype=torch.int16))
    assert torch.equal(torch.full((2, 2), 2.5, device="mlu").cpu(), torch.full((2, 2), 2.5))
    assert torch.equal(torch.zeros_like(torch.ones(3, device="mlu")).cpu(), torch.zeros(3))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64, torch.complex64])
def test_fill_matches_cpu(dtype):
    value = True if dtype == torch.bool else (1.5 + 2j if dtype.is_complex else 3)
    x = torch.empty(5, 7, dtype=dtype, device="mlu")
    x.fill_(value)
    assert torch.equal(x.cpu(), torch.empty(5, 7, dtype=dtype).fill_(value))
    x[:, ::3].zero_()
    expected = torch.empty(5, 7, dtype=dtype).fill_(value)
    expected[:, ::3].zero_()
    assert torch.equal(x.cpu(), expected)


def test_fill_with_tensor_value():
    x = torch.zeros(3, 3, device="mlu")
    x.fill_(torch.tensor(4.0, device="mlu"))
    assert torch.equal(x.cpu(), torch.full((3, 3), 4.0))
    x.fill_(torch.tensor(2))
    assert torch.equal(x.cpu(), torch.full((3, 3), 2.0))
    with pytest.raises(RuntimeError, match="0-dimension"):
        x.fill_(torch.ones(2, device="mlu"))


def test_fill_errors_match_cpu():
    with pytest.raises(RuntimeError) as cpu_error:
        torch.zeros(2, dtype=torch.uint8).fill_(300)
    with pytest.raises(RuntimeError) as mlu_error:
        torch.zeros(2, dtype=torch.uint8, device="mlu").fill_(300)
    assert str(mlu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]
    # A fill is idempotent: the CPU fills an expanded tensor with a scalar (each address once here), and so
    # does mlu; with a tensor value both refuse.
    for device in ("cpu", "mlu"):
        x = torch.zeros(2, 1, device=device)
        x.expand(2, 3).fill_(1.0)
        x[1:].expand(1, 4).zero_()
        assert x.tolist() == [[1.0], [0.0]]
        for value in (torch.tensor(5.0), torch.tensor(5.0, device=device)):
            with pytest.raises(RuntimeError, match="more than one element"):
                x.expand(2, 3).fill_(value)


def test_views_share_storage():
    x = torch.arange(12.0).to("mlu")
    v = x.view(3, 4)
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    v[1].fill_(-1.0)
    expected = torch.arange(12.0)
    expected[4:8] = -1.0
    assert torch.equal(x.cpu(), expected)
    s = x.as_strided((2, 2), (1, 3), 2)
    assert torch.equal(s.cpu(), expected.as_strided((2, 2), (1, 3), 2))
    r = v.t().reshape(12)  # non-viewable: copies
    assert torch.equal(r.cpu(), expected.view(3, 4).t().reshape(12))
    u = x.unfold(0, 4, 2)
    assert u.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(u.cpu(), expected.unfold(0, 4, 2))
    c = torch.randn(3, 2).to("mlu")
    assert torch.equal(torch.view_as_real(torch.view_as_complex(c)).cpu(), c.cpu())


def test_resize_keeps_data_and_grows_storage():
    x = torch.arange(6.0).to("mlu")
    x.resize_(2, 3)
    assert x.shape == (2, 3) and torch.equal(x.cpu(), torch.arange(6.0).view(2, 3))
    x.resize_(4, 5)
    assert x.shape == (4, 5)
    assert torch.equal(x.view(-1)[:6].cpu(), torch.arange(6.0))
    x.resize_(0)
    assert x.numel() == 0
    y = torch.empty(2, 3, 4, 5, device="mlu").resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    assert y.is_contiguous(memory_format=torch.channels_last)


def test_storage_resize():
    x = torch.arange(4.0).to("mlu")
    storage = x.untyped_storage()
    storage.resize_(64)
    assert storage.nbytes() == 64
    assert torch.equal(torch.empty(0, device="mlu").set_(storage, 0, (4,)).cpu(), torch.arange(4.0))


def test_set_variants():
    x = torch.arange(8.0).to("mlu")
    y = torch.empty(0, device="mlu")
    y.set_(x)
    assert torch.equal(y.cpu(), torch.arange(8.0))
    z = torch.empty(0, device="mlu").set_(x.untyped_storage(), 2, (2, 3), (3, 1))
    assert torch.equal(z.cpu(), torch.arange(8.0).as_strided((2, 3), (3, 1), 2))
    w = torch.empty(0, device="mlu").set_(x.untyped_storage())
    assert w.numel() == 8
    e = torch.ones(3, device="mlu").set_()
    assert e.numel() == 0 and e.device.type == "mlu"


def test_printing():
    x = torch.tensor([[1.0, 2.5], [3.0, -4.0]], device="mlu")
    assert repr(x) == "tensor([[ 1.0000,  2.5000],\n        [ 3.0000, -4.0000]], device='mlu:0')"
    assert repr(torch.tensor([1, 2, 3], device="mlu:1")) == "tensor([1, 2, 3], device='mlu:1')"
    assert repr(torch.empty(0, device="mlu")) == "tensor([], device='mlu:0')"
    assert "device='mlu:0'" in str(torch.zeros(2, 2, dtype=torch.float16, device="mlu"))
