"""Nested tensors on mlu against the CPU: the strided layout (NestedTensorPrivateUse1), the Transformer fast
path that packs padded batches into it, and the jagged layout over PyTorch's nested OpInfo entries."""
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_map

import torch_mlu

warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")


def to(device, value):
    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, value)


def components(value):
    """Nested tensors as their components (CPU), tuples and lists recursively, dense tensors on the CPU."""
    if isinstance(value, torch.Tensor):
        if value.is_nested:
            return [c.cpu() for c in value.unbind()]
        return value.cpu()
    if isinstance(value, (tuple, list)):
        return [components(v) for v in value]
    return value


def assert_same(actual, expected, **tolerances):
    torch.testing.assert_close(components(actual), components(expected), **tolerances)


def nested(shapes, device="cpu", dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    return torch.nested.nested_tensor([torch.randn(s, dtype=dtype) for s in shapes], device=device)


SHAPES = [(2, 8), (5, 8), (1, 8), (3, 8)]


@pytest.fixture(autouse=True)
def no_fallback(request):
    torch_mlu.reset_fallback_report()
    yield
    report = torch_mlu.fallback_report()
    if request.node.get_closest_marker("dense_fallbacks_allowed"):
        # Ops with no mlu kernel at all fall back for dense tensors too (docs/ops.md); nothing nested may.
        report = {op: n for op, n in report.items()
                  if torch._C._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1")}
    assert report == {}, "nested ops ran on the CPU fallback"


# ---- the strided layout ----

def test_every_nested_kernel_the_cpu_and_cuda_share_is_registered():
    # Note [Nested kernels shared with the CPU]: a kernel CUDA shares with the CPU only dispatches ops.
    import pathlib
    import torchgen
    import yaml
    native = pathlib.Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    shared = []
    for entry in yaml.load(native.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        kernels = {key.strip(): k for keys, k in (entry.get("dispatch") or {}).items() for key in keys.split(",")}
        if "NestedTensorCPU" in kernels and kernels["NestedTensorCPU"] == kernels.get("NestedTensorCUDA"):
            shared.append("aten::" + entry["func"].split("(")[0])
    assert len(shared) > 80
    missing = [op for op in shared if not torch._C._dispatch_has_kernel_for_dispatch_key(op, "NestedTensorPrivateUse1")]
    assert missing == []


def test_construction_padding_unbind_and_device_moves():
    cpu = nested(SHAPES)
    nt = nested(SHAPES, device="mlu")
    assert nt.is_nested and nt.device.type == "mlu" and nt.size(0) == 4 and nt.dim() == 3
    assert_same(nt, cpu, rtol=0, atol=0)
    torch.testing.assert_close(nt.to_padded_tensor(0.5).cpu(), cpu.to_padded_tensor(0.5), rtol=0, atol=0)
    torch.testing.assert_close(nt.to_padded_tensor(0, (4, 6, 9)).cpu(), cpu.to_padded_tensor(0, (4, 6, 9)))
    back = nt.to("cpu")
    assert back.is_nested and back.device.type == "cpu"
    assert_same(cpu.to("mlu"), cpu, rtol=0, atol=0)
    assert_same(torch.nested.as_nested_tensor([torch.ones(2, 3, device="mlu"), torch.zeros(1, 3, device="mlu")]),
                torch.nested.as_nested_tensor([torch.ones(2, 3), torch.zeros(1, 3)]))
    assert nt.clone().unbind()[1].device.type == "mlu"


def test_mask_packing_and_padding_conversions():
    padded = torch.randn(3, 6, 4)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4], dtype=torch.bool)
    expected = torch._nested_tensor_from_mask(padded, mask)
    actual = torch._nested_tensor_from_mask(padded.to("mlu"), mask.to("mlu"))
    assert_same(actual, expected, rtol=0, atol=0)
    assert torch._nested_tensor_from_mask_left_aligned(padded.to("mlu"), mask.to("mlu"))
    sizes = torch._nested_tensor_size(expected) if hasattr(torch, "_nested_tensor_size") else expected._nested_tensor_size()
    assert_same(torch._nested_from_padded(padded.to("mlu"), sizes), torch._nested_from_padded(padded, sizes))
    heads = torch.randn(3, 2, 6, 2)  # [B, heads, T, dh] -> [B, T, heads * dh] (fuse_transform_0213)
    assert_same(torch._nested_from_padded(heads.to("mlu"), sizes, True), torch._nested_from_padded(heads, sizes, True))


UNARY = [torch.abs, torch.neg, torch.sgn, torch.relu, torch.tanh, torch.sin, torch.cos, F.gelu, F.silu,
         lambda t: torch.sqrt(t.abs()), lambda t: t.relu_(), lambda t: F.gelu(t.clone()).tanh_()]


@pytest.mark.parametrize("fn", UNARY, ids=range(len(UNARY)))
def test_unary(fn):
    cpu = nested(SHAPES)
    assert_same(fn(cpu.to("mlu")), fn(cpu))


BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b.abs() + 1),
          lambda a, b: torch.add(a, b, alpha=2), lambda a, b: a * 3.0, lambda a, b: a + 1,
          lambda a, b: a.add_(b), lambda a, b: a.mul_(b), lambda a, b: a.isnan().logical_not(),
          lambda a, b: a.isnan()]


@pytest.mark.parametrize("fn", BINARY, ids=range(len(BINARY)))
def test_binary(fn):
    a, b = nested(SHAPES, seed=1), nested(SHAPES, seed=2)
    assert_same(fn(a.to("mlu"), b.to("mlu")), fn(a.clone(), b))


def test_matmul_linear_bmm_softmax():
    a, b = nested([(2, 8), (5, 8)]), nested([(8, 3), (8, 4)], seed=1)
    weight, bias = torch.randn(6, 8), torch.randn(6)
    assert_same(torch.matmul(a.to("mlu"), b.to("mlu")), torch.matmul(a, b))
    assert_same(torch.bmm(a.to("mlu"), b.to("mlu")), torch.bmm(a, b))
    assert_same(F.linear(a.to("mlu"), weight.to("mlu"), bias.to("mlu")), F.linear(a, weight, bias))
    assert_same(torch.softmax(a.to("mlu"), -1), torch.softmax(a, -1))
    assert_same(a.to("mlu").transpose(1, 2).contiguous(), a.transpose(1, 2).contiguous())
    scores = nested([(2, 2, 3), (2, 5, 3)])  # softmax over a regular dim of 4-D components
    assert_same(torch.softmax(scores.to("mlu"), -1), torch.softmax(scores, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_and_its_backward(dtype):
    cpu = nested(SHAPES, dtype=dtype)
    weight, bias = torch.randn(8, dtype=dtype), torch.randn(8, dtype=dtype)
    out, mean, rstd = torch.native_layer_norm(cpu, [8], weight, bias, 1e-5)
    mout, mmean, mrstd = torch.native_layer_norm(cpu.to("mlu"), [8], weight.to("mlu"), bias.to("mlu"), 1e-5)
    tol = dict(rtol=1.6e-2, atol=1e-2) if dtype == torch.bfloat16 else {}
    assert_same(mout, out, **tol)
    assert mmean.shape == mean.shape == (11,) and mmean.dtype == mean.dtype
    torch.testing.assert_close(mrstd.cpu(), rstd, **tol)
    grad = nested(SHAPES, dtype=dtype, seed=3)
    expected = torch.ops.aten.native_layer_norm_backward(grad, cpu, [8], mean, rstd, weight, bias, [True] * 3)
    actual = torch.ops.aten.native_layer_norm_backward(grad.to("mlu"), cpu.to("mlu"), [8], mmean, mrstd,
                                                       weight.to("mlu"), bias.to("mlu"), [True] * 3)
    assert_same(actual, expected, **(dict(rtol=2e-2, atol=5e-2) if dtype == torch.bfloat16 else {}))
    assert_same(F.layer_norm(cpu.to("mlu"), [8], weight.to("mlu"), bias.to("mlu")),
                F.layer_norm(cpu, [8], weight, bias), **tol)


def test_sum_over_the_last_dim_and_its_backward():
    cpu = nested([(2, 3), (4, 5), (1, 1)])  # ragged last dim
    assert_same(cpu.to("mlu").sum(-1, keepdim=True), cpu.sum(-1, keepdim=True))
    grad = nested([(2, 1), (4, 1), (1, 1)], seed=1)
    assert_same(torch.ops.aten._nested_sum_backward(grad.to("mlu"), cpu.to("mlu"), [-1], True),
                torch.ops.aten._nested_sum_backward(grad, cpu, [-1], True))
    for bad in (lambda t: t.sum(1, keepdim=True), lambda t: t.sum(-1)):
        with pytest.raises(RuntimeError) as on_cpu:
            bad(cpu)
        with pytest.raises(RuntimeError) as on_mlu:
            bad(cpu.to("mlu"))
        assert str(on_mlu.value) == str(on_cpu.value)


def test_embedding_cat_chunk_and_equal():
    indices = torch.nested.nested_tensor([torch.tensor([1, 3]), torch.tensor([0, 2, 4])])
    weight = torch.randn(5, 4)
    assert_same(F.embedding(indices.to("mlu"), weight.to("mlu")), F.embedding(indices, weight))
    a = nested(SHAPES)
    assert_same([c for c in a.to("mlu").chunk(2, -1)], [c for c in a.chunk(2, -1)])
    dense = torch.randn(3, 4)
    assert torch.equal(dense.to("mlu"), dense.clone().to("mlu"))
    assert not torch.equal(dense.to("mlu"), (dense + 1).to("mlu"))
    assert not torch.equal(dense.to("mlu"), dense[:2].to("mlu"))
    assert torch.equal(torch.tensor([1, 2], device="mlu"), torch.tensor([1.0, 2.0], device="mlu"))
    assert not torch.equal(torch.tensor([float("nan")], device="mlu"), torch.tensor([float("nan")], device="mlu"))


def test_errors_match_the_cpu():
    a, b = nested(SHAPES), nested([(2, 8), (4, 8), (1, 8), (3, 8)], seed=1)
    for bad in (lambda x, y: x + y, lambda x, y: F.layer_norm(x, [4], torch.ones(4, device=x.device),
                                                               torch.zeros(4, device=x.device))):
        with pytest.raises(RuntimeError) as on_cpu:
            bad(a, b)
        with pytest.raises(RuntimeError) as on_mlu:
            bad(a.to("mlu"), b.to("mlu"))
        assert str(on_mlu.value).split("\n")[0] == str(on_cpu.value).split("\n")[0]


# ---- the Transformer fast path ----

def encoder(seed=0, activation="relu", norm_first=False, layers=2):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, activation=activation,
                                             norm_first=norm_first)
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=True).eval()


def padding_mask(lengths, width):
    return torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]


def test_issue_reproducer():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    m = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(3, 10, 64)
    mask = torch.zeros(3, 10, dtype=torch.bool)
    mask[0, 7:] = True
    with torch.no_grad():
        expected = m(x, src_key_padding_mask=mask)
        actual = m.to("mlu")(x.to("mlu"), src_key_padding_mask=mask.to("mlu"))
    torch.testing.assert_close(actual.cpu(), expected)


@pytest.mark.parametrize("activation, norm_first", [("relu", False), ("gelu", True)])
@pytest.mark.parametrize("masked", [True, False])
def test_encoder_fast_path_matches_the_cpu(activation, norm_first, masked):
    model = encoder(activation=activation, norm_first=norm_first)
    lengths = [7, 3, 9, 1]
    x = torch.randn(4, 9, 32)
    mask = padding_mask(lengths, 9) if masked else None
    with torch.no_grad():
        expected = model(x, src_key_padding_mask=mask)
        with torch.profiler.profile() as prof:
            actual = model.to("mlu")(x.to("mlu"), src_key_padding_mask=None if mask is None else mask.to("mlu"))
    names = {e.name for e in prof.events()}
    assert "aten::_transformer_encoder_layer_fwd" in names, sorted(names)  # the fast path ran on mlu
    if masked and not norm_first:  # TransformerEncoder packs the batch only for post-norm layers
        assert "aten::_nested_tensor_from_mask" in names
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_multi_head_attention_fast_path():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(3, 6, 32)
    mask = padding_mask([6, 4, 2], 6)
    with torch.no_grad():
        expected, _ = mha(x, x, x, key_padding_mask=mask, need_weights=False)
        mlu = mha.to("mlu")
        actual, _ = mlu(x.to("mlu"), x.to("mlu"), x.to("mlu"), key_padding_mask=mask.to("mlu"), need_weights=False)
        torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
        q = nested([(6, 32), (2, 32)])  # nested self-attention, as the encoder's fast path feeds it
        expected, _ = torch._native_multi_head_attention(
            q, q, q, 32, 4, mha.in_proj_weight.cpu(), mha.in_proj_bias.cpu(), mha.out_proj.weight.cpu(),
            mha.out_proj.bias.cpu(), need_weights=False)
        actual, _ = torch._native_multi_head_attention(
            q.to("mlu"), q.to("mlu"), q.to("mlu"), 32, 4, mlu.in_proj_weight, mlu.in_proj_bias,
            mlu.out_proj.weight, mlu.out_proj.bias, need_weights=False)
        assert_same(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transform_bias_rescale_qkv(dtype):
    qkv, bias = torch.randn(2, 5, 3 * 24, dtype=dtype), torch.randn(3 * 24, dtype=dtype)
    expected = torch._transform_bias_rescale_qkv(qkv, bias, 4)
    actual = torch._transform_bias_rescale_qkv(qkv.to("mlu"), bias.to("mlu"), 4)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape == (2, 4, 5, 6) and a.is_contiguous()
        torch.testing.assert_close(a.cpu(), e)
    packed = nested([(5, 72), (3, 72)], dtype=dtype)
    for a, e in zip(torch._transform_bias_rescale_qkv(packed.to("mlu"), bias.to("mlu"), 4),
                    torch._transform_bias_rescale_qkv(packed, bias, 4)):
        torch.testing.assert_close(a.cpu(), e)


@pytest.mark.parametrize("mask_type", [0, 1, 2])
def test_masked_softmax(mask_type):
    x = torch.randn(2, 3, 4, 4)
    mask = {0: torch.rand(4, 4) > 0.6, 1: torch.rand(2, 4) > 0.6, 2: torch.rand(2, 3, 4, 4) > 0.6}[mask_type]
    mask[..., 0] = False if mask_type != 2 else mask[..., 0]
    expected = torch._masked_softmax(x, mask, 3, mask_type)
    actual = torch._masked_softmax(x.to("mlu"), mask.to("mlu"), 3, mask_type)
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)
    full = torch.zeros(2, 3, 4, 4, dtype=torch.bool)
    full[0, 0, 0] = True  # a row masked entirely is NaN, as on the CPU
    assert torch._masked_softmax(x.to("mlu"), full.to("mlu"), 3, 2)[0, 0, 0].isnan().all()
    grad = torch.randn(2, 3, 4, 4)
    full_mask = torch.rand(2, 3, 4, 4) > 0.6
    out = torch._masked_softmax(x, full_mask, 3, 2)
    torch.testing.assert_close(
        torch.ops.aten._masked_softmax_backward(grad.to("mlu"), out.to("mlu"), full_mask.to("mlu"), 3).cpu(),
        torch.ops.aten._masked_softmax_backward(grad, out, full_mask, 3))


# ---- the jagged layout: PyTorch's nested OpInfo entries ----

def njt_ops():
    from torch.testing._internal.opinfo.definitions.nested import njt_op_db
    return [op for op in njt_op_db if op.supports_njt]  # the rest raise "not supported" for any sample


# ComplexHalf is not an mlu dtype for nested tensors (docs/nested.md: "ComplexHalf aside").
NJT_SKIP = {"chalf"}


@pytest.mark.dense_fallbacks_allowed
@pytest.mark.parametrize("op", njt_ops(), ids=lambda op: f"{op.name}.{op.variant_test_name}".rstrip("."))
def test_jagged_op_db_matches_the_cpu(op):
    if op.name in NJT_SKIP:
        pytest.skip("dtype not supported on mlu")
    try:
        samples = list(op.sample_inputs(device="cpu", dtype=torch.float32, requires_grad=False))[:4]
    except Exception:
        pytest.skip("no jagged sample inputs for this op")
    samples = [s for s in samples if isinstance(s.input, torch.Tensor) and s.input.is_nested]
    if not samples:
        pytest.skip("no jagged sample inputs for this op")
    checked = 0
    for sample in samples:
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue  # not supported for jagged tensors on the CPU either
        if op.name in {"cauchy", "exponential", "geometric", "log_normal", "normal", "uniform", "bernoulli",
                       "nn.functional.dropout", "rand_like", "randn_like", "randint_like", "empty_like"}:
            actual = op(to("mlu", sample.input), *to("mlu", sample.args), **to("mlu", sample.kwargs))
            assert components(actual)[0].shape == components(expected)[0].shape
        else:
            actual = op(to("mlu", sample.input), *to("mlu", sample.args), **to("mlu", sample.kwargs))
            assert_same(actual, expected, equal_nan=True)
        checked += 1
    if checked == 0:
        pytest.skip("the CPU runs none of the jagged samples")


def test_jagged_sdpa():
    torch.manual_seed(0)
    lengths = [5, 2, 7]
    q, k, v = (torch.nested.nested_tensor([torch.randn(n, 2, 8) for n in lengths], layout=torch.jagged)
               .transpose(1, 2) for _ in range(3))
    expected = F.scaled_dot_product_attention(q, k, v)
    actual = F.scaled_dot_product_attention(q.to("mlu"), k.to("mlu"), v.to("mlu"))
    assert_same(actual, expected, rtol=1e-4, atol=1e-5)
