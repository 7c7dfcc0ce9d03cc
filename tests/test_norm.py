"""layer_norm runs natively on mlu (mlu_kernels/norm.h), forward and backward, and agrees with the CPU.

Shapes with one or more normalized dims, with and without weight / bias, float32 / float64 /
bfloat16 / float16 and bfloat16 input with float parameters (mixed precision), empty inputs, the
module training, and a transformer layer's step with no op on the CPU fallback.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu

torch.manual_seed(0)

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12),
       torch.bfloat16: dict(rtol=1.6e-2, atol=2e-2), torch.float16: dict(rtol=1e-3, atol=2e-3)}


def run(x, shape, w, b):
    leaves = [t.clone().requires_grad_() if t is not None else None for t in (x, w, b)]
    y = F.layer_norm(leaves[0], shape, leaves[1], leaves[2], eps=1e-5)
    torch.manual_seed(3)
    y.backward(torch.randn(y.shape).to(y.dtype).to(y.device))
    return [y] + [t.grad for t in leaves if t is not None]


@pytest.fixture
def check(native_oracle):
    """The shared oracle on layer_norm and its gradients, by TOL or tol; 16-bit weight / bias gradients against
    float64."""
    def check(x, shape, w=None, b=None, tol=None):
        wide, bounds = None, {}
        if x.dtype in (torch.bfloat16, torch.float16) and w is not None:
            # The CPU sums the 16-bit weight / bias gradients in 16 bits (bfloat16 on (6, 10, 96): 0.17 off
            # float64, mlu 0.08): the oracle is float64. Both use the saved mean / rstd, which are rounded to
            # the input's dtype (as on the CPU), so the bound is eps(dtype) times the sum of |terms| per column.
            wide = run(x.double(), shape, *(t.double() if t is not None else None for t in (w, b)))
            eps = torch.finfo(x.dtype).eps
            torch.manual_seed(3)
            dy = torch.randn(x.shape).to(x.dtype).double().reshape(-1, w.numel())
            xs = x.double().reshape(-1, w.numel())
            xhat = (xs - xs.mean(1, keepdim=True)) / xs.var(1, unbiased=False, keepdim=True).add(1e-5).sqrt()
            bounds = {2: 4 * eps * (dy * xhat).abs().sum(0).reshape(w.shape) + eps * wide[2].abs()}
            if b is not None:
                bounds[3] = 4 * eps * dy.abs().sum(0).reshape(w.shape) + eps * wide[3].abs()

        def compare(i, got, want):
            if i in bounds:
                err = (got.double() - wide[i]).abs()
                assert (err <= bounds[i]).all(), (err / bounds[i]).max()
            else:
                torch.testing.assert_close(got, want, **(tol or TOL[want.dtype]))

        native_oracle(run, x, shape, w, b, compare=compare)
    return check


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(dtype, affine, check):
    x = (torch.randn(6, 10, 96) * 3 + 1).to(dtype)
    w, b = (torch.randn(96).to(dtype), torch.randn(96).to(dtype)) if affine else (None, None)
    check(x, [96], w, b)


def test_several_normalized_dims_and_weight_only(check):
    check(torch.randn(3, 5, 7, 11), [7, 11], torch.randn(7, 11), torch.randn(7, 11))
    check(torch.randn(4, 33), [33], torch.randn(33))


def test_mixed_precision_parameters(check):
    x = torch.randn(8, 64).bfloat16()
    stats_cpu = torch.native_layer_norm(x, [64], torch.randn(64), torch.randn(64), 1e-5)
    stats_mlu = torch.native_layer_norm(x.to("mlu"), [64], torch.randn(64).to("mlu"), torch.randn(64).to("mlu"), 1e-5)
    assert [t.dtype for t in stats_mlu] == [t.dtype for t in stats_cpu]  # bfloat16 out, float mean / rstd
    check(x, [64], torch.randn(64), torch.randn(64), tol=TOL[torch.bfloat16])


def test_empty_and_long_rows(check):
    check(torch.randn(0, 16), [16], torch.randn(16), torch.randn(16))
    got = torch.native_layer_norm(torch.randn(3, 0).to("mlu"), [0], None, None, 1e-5)
    want = torch.native_layer_norm(torch.randn(3, 0), [0], None, None, 1e-5)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, equal_nan=True)
    check(torch.randn(3, 50000), [50000], torch.randn(50000), torch.randn(50000))


def test_bad_shapes_raise_as_on_the_cpu():
    x = torch.randn(4, 8).to("mlu")
    with pytest.raises(RuntimeError, match="Given normalized_shape="):
        F.layer_norm(x, [7])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(x, [8], torch.randn(7).to("mlu"))
    assert F.layer_norm(x, [8]).shape == (4, 8)


def test_transformer_step_runs_natively_but_dropout():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0).to("mlu")
    x = torch.randn(2, 10, 32).to("mlu")
    torch_mlu.reset_fallback_report()
    layer(x).square().mean().backward()
    report = torch_mlu.fallback_report()
    assert not any("layer_norm" in op or "batch_norm" in op for op in report), report


def bn_run(x, w, b, rm, rv, training, device):
    leaves = [t.detach().clone().to(device).requires_grad_() if t is not None else None for t in (x, w, b)]
    rm = rm.clone().to(device) if rm is not None else None
    rv = rv.clone().to(device) if rv is not None else None
    y = F.batch_norm(leaves[0], rm, rv, leaves[1], leaves[2], training=training, momentum=0.2, eps=1e-5)
    torch.manual_seed(4)
    y.backward(torch.randn(y.shape).to(y.dtype).to(device))
    return [y] + [t.grad for t in leaves if t is not None] + [t for t in (rm, rv) if t is not None]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(6, 5), (4, 3, 7), (2, 8, 5, 6), (2, 3, 2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batch_norm(training, shape, dtype, native_oracle):
    c = shape[1]
    x = (torch.randn(shape) * 2 + 0.5).to(dtype)
    w, b = torch.rand(c).to(dtype) + 0.5, torch.randn(c).to(dtype)
    rm, rv = torch.randn(c).to(dtype), torch.rand(c).to(dtype) + 0.5
    native_oracle(lambda device: bn_run(x, w, b, rm, rv, training, device), **TOL[dtype])


def test_batch_norm_without_affine_or_running_stats_and_bfloat16():
    x = torch.randn(4, 6, 5, 5)
    expected = bn_run(x, None, None, None, None, True, "cpu")
    actual = bn_run(x, None, None, None, None, True, "mlu")
    for e, a in zip(expected, actual):
        torch.testing.assert_close(a.cpu(), e, rtol=1e-5, atol=1e-5)
    xb = x.bfloat16()
    w, b, rm, rv = torch.ones(6), torch.zeros(6), torch.zeros(6), torch.ones(6)  # float parameters
    expected = bn_run(xb, w, b, rm, rv, True, "cpu")
    actual = bn_run(xb, w, b, rm, rv, True, "mlu")
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype
        torch.testing.assert_close(a.cpu(), e, rtol=2e-2, atol=5e-2)


def test_batch_norm_bfloat16_running_statistics():
    # The statistics kernel updates float running statistics in place; bfloat16 ones (a model cast with
    # .bfloat16()) go through tensor ops. Both as on the CPU.
    torch.manual_seed(1)
    x = torch.randn(4, 6, 5, 5).bfloat16()
    rm, rv = torch.randn(6).bfloat16(), (torch.rand(6) + 0.5).bfloat16()
    expected = bn_run(x, None, None, rm, rv, True, "cpu")
    actual = bn_run(x, None, None, rm, rv, True, "mlu")
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype
        torch.testing.assert_close(a.cpu(), e, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_batch_norm_16bit_forward_bit_equal_to_the_cpu(dtype):
    # Input and parameters in one 16-bit type: the CPU rounds save_mean / save_invstd (and, in bfloat16, the
    # variance and the running statistics) to that type and computes the output from the rounded values (Note
    # [16-bit batch statistics as the CPU keeps them]). Planes shorter and longer than the CPU's vectors, eval
    # and training, and float parameters (mixed) in eval, where the output must match to the bit as well.
    g = torch.Generator().manual_seed(8)
    for shape in [(3, 2, 4), (4, 3, 40), (2, 5, 7, 9), (16, 8, 14, 14), (1, 3, 1000), (64, 4, 31)]:
        for training in (True, False):
            for params in (dtype, torch.float32):
                if params == torch.float32 and training:
                    continue
                c = shape[1]
                x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
                w, b = (torch.randn(c, generator=g) * 5).to(params), (torch.randn(c, generator=g) * 5).to(params)
                rm, rv = torch.randn(c, generator=g).to(params), (torch.rand(c, generator=g) + 0.5).to(params)
                results = []
                for device in ("cpu", "mlu"):
                    stats = [rm.clone().to(device), rv.clone().to(device)]
                    out = torch.native_batch_norm(x.to(device), w.to(device), b.to(device), *stats, training, 0.3, 1e-3)
                    results.append([t.cpu() for t in (*out, *stats)])
                for name, want, got in zip(("y", "save_mean", "save_invstd", "running_mean", "running_var"), *results):
                    assert got.dtype == want.dtype and torch.equal(got, want), (name, shape, training, params)


def test_batch_norm_single_value_and_empty_input_as_on_the_cpu():
    # One value per channel: the unbiased variance is 0 / 0, so the running variance turns NaN, as on the CPU.
    x = torch.randn(1, 3)
    for device in ("cpu", "mlu"):
        rm, rv = torch.zeros(3, device=device), torch.ones(3, device=device)
        torch.native_batch_norm(x.to(device), None, None, rm, rv, True, 0.1, 1e-5)
        assert rv.isnan().all() and not rm.isnan().any(), device
    # Training statistics of no values are an error on the CPU; the running statistics stay as they were.
    rm, rv = torch.zeros(3, device="mlu"), torch.ones(3, device="mlu")
    with pytest.raises(RuntimeError, match="input tensor must have at least one element"):
        torch.native_batch_norm(torch.empty(0, 3, device="mlu"), None, None, rm, rv, True, 0.1, 1e-5)
    assert rm.eq(0).all() and rv.eq(1).all()
    y = torch.native_batch_norm(torch.empty(0, 3, device="mlu"), None, None, rm, rv, False, 0.1, 1e-5)[0]
    assert y.shape == (0, 3)


def test_batch_norm_module_and_channels_last():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(8)
    x = torch.randn(4, 8, 6, 6).to(memory_format=torch.channels_last)
    ref = bn(x)
    bn_mlu = torch.nn.BatchNorm2d(8).to("mlu")
    got = bn_mlu(x.to("mlu"))
    assert got.is_contiguous(memory_format=torch.channels_last) == ref.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn_mlu.running_mean.cpu(), bn.running_mean)
    torch.testing.assert_close(bn_mlu.running_var.cpu(), bn.running_var)
    assert bn_mlu.num_batches_tracked.item() == 1
    bn.eval()
    bn_mlu.eval()
    torch.testing.assert_close(bn_mlu(x.to("mlu")).cpu(), bn(x), rtol=1e-5, atol=1e-5)
