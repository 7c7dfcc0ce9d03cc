"""F.unfold / F.fold (im2col / col2im) run natively on mlu and agree with the CPU, forward and backward."""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu

GEOMETRIES = [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=2, padding=1),
              dict(kernel_size=3, dilation=2, padding=2), dict(kernel_size=(3, 1), stride=(1, 2))]


def both(fn, x, dtype=torch.float32, devices=("cpu", "mlu")):
    results = []
    for device in devices:
        leaf = x.detach().clone().to(dtype).to(device).requires_grad_(dtype.is_floating_point)
        out = fn(leaf)
        if dtype.is_floating_point:
            torch.manual_seed(2)
            out.backward(torch.randn(out.shape).to(dtype).to(device))
        results.append((out, leaf.grad))
    return results


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_unfold_and_fold(geometry, dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 8)
    torch_mlu.reset_fallback_report()
    columns = torch.randn(F.unfold(x, **geometry).shape)
    for fn, data in ((lambda t: F.unfold(t, **geometry), x), (lambda t: F.fold(t, (9, 8), **geometry), columns)):
        (e, eg), (a, ag) = both(fn, data, dtype)
        if dtype == torch.bfloat16 and data is columns:
            ((ref_out, _),) = both(fn, data, torch.float64, devices=("cpu",))
            assert (a.cpu().double() - ref_out).abs().max() <= (e.double() - ref_out).abs().max() + 1e-2
        else:
            torch.testing.assert_close(a.cpu(), e)
        if dtype != torch.bfloat16:
            torch.testing.assert_close(ag.cpu(), eg)
            continue
        # Sums of overlapping patches (fold, unfold's backward): the CPU adds in bfloat16, mlu in float and
        # rounds once, so the oracle is float64 and mlu may not be further from it than the CPU.
        ((_, ref),) = both(fn, data, torch.float64, devices=("cpu",))
        assert (ag.cpu().double() - ref).abs().max() <= (eg.double() - ref).abs().max() + 1e-2
    assert torch_mlu.fallback_report() == {}, "unfold / fold fell back to the CPU"


def test_unbatched_integer_and_errors(native_oracle):
    x = torch.randint(0, 100, (3, 6, 5))
    # The CPU has no integer im2col; mlu copies any dtype: the CPU's float result, exactly.
    native_oracle(lambda device: F.unfold(x.to(device), 2, padding=1) if device == "mlu"
                  else F.unfold(x.float(), 2, padding=1).long(), rtol=0, atol=0)
    (e, _), (a, _) = both(lambda t: F.fold(t, (6, 5), 2), torch.randn(12, 20))
    torch.testing.assert_close(a.cpu(), e)
    for bad in (lambda d: F.unfold(torch.randn(1, 2, 3, 3, device=d), 5),
                lambda d: F.fold(torch.randn(1, 7, 4, device=d), (3, 3), 2)):
        with pytest.raises(RuntimeError) as cpu_error:
            bad("cpu")
        with pytest.raises(RuntimeError) as mlu_error:
            bad("mlu")
        assert str(mlu_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]
