"""torch._foreach_* on mlu (csrc/aten/ops/ForeachOps.cpp) against the CPU.

Every overload torch.optim / clip_grad / GradScaler use, out-of-place and in place, over lists mixing an empty,
a one-element, odd-sized and channels-last tensors, in float32 / bfloat16 / float16 (and int64 where the op
takes integers); lists that qualify run as ONE queue task (counted on the stream), the others (non-dense views,
mixed dtypes, integer powers) go through PyTorch's per-tensor loop and still match; errors match the CPU's.
"""
import math

import pytest
import torch

import torch_mlu

SHAPES = [(0,), (1,), (7, 3), (257,), (33, 65)]


def launches():
    s = torch.mlu.current_stream()
    return torch_mlu._C._mlu_streamLaunchCount(s.stream_id, s.device_index)


def make_list(dtype, seed, positive=False, shapes=SHAPES):
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        if dtype.is_floating_point:
            t = torch.rand(shape, generator=g) + 0.5 if positive else torch.randn(shape, generator=g)
        else:
            t = torch.randint(1 if positive else -9, 10, shape, generator=g)
        out.append(t.to(dtype))
    cl = torch.randn(2, 3, 4, 5, generator=g).abs().add(0.5).to(dtype) if dtype.is_floating_point else \
        torch.randint(1, 10, (2, 3, 4, 5), generator=g).to(dtype)
    out.append(cl.contiguous(memory_format=torch.channels_last))
    return out


def to_mlu(ts):
    return [t.to("mlu") for t in ts]


# name -> (call(lists...) for the out-of-place form, number of lists, positive inputs, takes integers)
BINARY = {
    "add_list": (lambda a, b: torch._foreach_add(a, b, alpha=3), 2, False, True),
    "add_scalar": (lambda a: torch._foreach_add(a, 1.25), 1, False, False),
    "add_scalarlist": (lambda a: torch._foreach_add(a, [0.5 * i for i in range(len(a))]), 1, False, False),
    "sub_list": (lambda a, b: torch._foreach_sub(a, b, alpha=2), 2, False, True),
    "sub_scalar": (lambda a: torch._foreach_sub(a, 3), 1, False, True),
    "mul_list": (lambda a, b: torch._foreach_mul(a, b), 2, False, True),
    "mul_scalar": (lambda a: torch._foreach_mul(a, -0.75), 1, False, False),
    "mul_scalarlist": (lambda a: torch._foreach_mul(a, [float(i) for i in range(len(a))]), 1, False, False),
    "div_list": (lambda a, b: torch._foreach_div(a, b), 2, True, False),
    "div_scalar": (lambda a: torch._foreach_div(a, 3.0), 1, False, False),
    "maximum_list": (lambda a, b: torch._foreach_maximum(a, b), 2, False, True),
    "maximum_scalar": (lambda a: torch._foreach_maximum(a, 0.1), 1, False, False),
    "minimum_list": (lambda a, b: torch._foreach_minimum(a, b), 2, False, True),
    "clamp_min_scalar": (lambda a: torch._foreach_clamp_min(a, -0.2), 1, False, False),
    "clamp_max_scalarlist": (lambda a: torch._foreach_clamp_max(a, [0.1 * i for i in range(len(a))]), 1, False,
                             False),
    "pow_scalar": (lambda a: torch._foreach_pow(a, 2.0), 1, False, False),
    "pow_half": (lambda a: torch._foreach_pow(a, 0.5), 1, True, False),
    "pow_list": (lambda a, b: torch._foreach_pow(a, b), 2, True, False),
    "addcmul_scalar": (lambda a, b, c: torch._foreach_addcmul(a, b, c, value=2), 3, False, True),
    "addcmul_scalarlist": (lambda a, b, c: torch._foreach_addcmul(a, b, c, [0.1 * i for i in range(len(a))]), 3,
                           False, False),
    "addcdiv_scalar": (lambda a, b, c: torch._foreach_addcdiv(a, b, c, value=-0.5), 3, True, False),
    "addcdiv_tensor": (lambda a, b, c: torch._foreach_addcdiv(a, b, c, torch.linspace(-1, 1, len(a))), 3, True,
                       False),
    "lerp_scalar": (lambda a, b: torch._foreach_lerp(a, b, 0.25), 2, False, False),
    "lerp_scalarlist": (lambda a, b: torch._foreach_lerp(a, b, [0.1 * i for i in range(len(a))]), 2, False, False),
    "lerp_list": (lambda a, b, c: torch._foreach_lerp(a, b, c), 3, False, False),
    "sqrt": (lambda a: torch._foreach_sqrt(a), 1, True, False),
    "rsqrt": (lambda a: torch._foreach_rsqrt(a), 1, True, False),
    "exp": (lambda a: torch._foreach_exp(a), 1, False, False),
    "log": (lambda a: torch._foreach_log(a), 1, True, False),
    "reciprocal": (lambda a: torch._foreach_reciprocal(a), 1, True, False),
    "sigmoid": (lambda a: torch._foreach_sigmoid(a), 1, False, False),
    "neg": (lambda a: torch._foreach_neg(a), 1, False, True),
    "abs": (lambda a: torch._foreach_abs(a), 1, False, True),
    "sign": (lambda a: torch._foreach_sign(a), 1, False, True),
    "trunc": (lambda a: torch._foreach_trunc(a), 1, False, False),
}
INPLACE = {  # the in-place forms of a selection (the out-of-place ones above share their code)
    "add_list_": lambda a, b: torch._foreach_add_(a, b, alpha=-1.5),
    "mul_scalar_": lambda a: torch._foreach_mul_(a, 0.9),
    "addcmul_": lambda a, b, c: torch._foreach_addcmul_(a, b, c, value=0.5),
    "addcdiv_": lambda a, b, c: torch._foreach_addcdiv_(a, b, c, value=0.5),
    "lerp_": lambda a, b: torch._foreach_lerp_(a, b, 0.1),
    "sqrt_": lambda a: torch._foreach_sqrt_(a),
    "maximum_": lambda a, b: torch._foreach_maximum_(a, b),
    "div_scalarlist_": lambda a: torch._foreach_div_(a, [1.0 + i for i in range(len(a))]),
    "zero_": lambda a: torch._foreach_zero_(a),
    "copy_": lambda a, b: torch._foreach_copy_(a, b),
}
INPLACE_ARITY = {"add_list_": 2, "mul_scalar_": 1, "addcmul_": 3, "addcdiv_": 3, "lerp_": 2, "sqrt_": 1,
                 "maximum_": 2, "div_scalarlist_": 1, "zero_": 1, "copy_": 2}
FLOATS = [torch.float32, torch.bfloat16, torch.float16]


def assert_close(got, expected):
    """PyTorch's tolerances, with an absolute one of a 16-bit ulp at 1 for bfloat16 / float16 (a result near a
    cancellation may round the other way: the CPU's vector loops fuse multiply-adds differently)."""
    atol = {torch.bfloat16: 8e-3, torch.float16: 1e-3}.get(expected.dtype)
    kw = {"atol": atol, "rtol": 1.6e-2 if expected.dtype == torch.bfloat16 else 1e-3} if atol else {}
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True, **kw)


def inputs(n_lists, dtype, positive):
    return [make_list(dtype, seed=10 + i, positive=positive) for i in range(n_lists)]


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_out_of_place_matches_cpu_in_one_task(name, dtype):
    fn, n_lists, positive, integers = BINARY[name]
    if not dtype.is_floating_point and not integers:
        pytest.skip("float-only form")
    cpu_lists = inputs(n_lists, dtype, positive)
    mlu_lists = [to_mlu(ts) for ts in cpu_lists]
    expected = fn(*cpu_lists)
    before = launches()
    got = fn(*mlu_lists)
    count = launches() - before
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.device.type == "mlu" and g.dtype == e.dtype and g.stride() == e.stride()
        assert_close(g, e)
    one_task = not (name.startswith("pow") and not dtype.is_floating_point)
    if one_task:
        assert count == 1, f"{name} on {dtype} launched {count} tasks, expected one for the whole list"


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(INPLACE))
def test_in_place_matches_cpu_in_one_task(name, dtype):
    fn = INPLACE[name]
    cpu_lists = inputs(INPLACE_ARITY[name], dtype, positive=True)
    mlu_lists = [to_mlu(ts) for ts in cpu_lists]
    fn(*cpu_lists)
    before = launches()
    fn(*mlu_lists)
    assert launches() - before == 1
    for g, e in zip(mlu_lists[0], cpu_lists[0]):
        assert_close(g, e)


def test_device_scalar_operand():
    """clip_grad_norm_ multiplies by a coefficient that stays on the device; the tensor-lr add form too."""
    cpu = make_list(torch.float32, 1)
    mlu = to_mlu(cpu)
    coef = torch.tensor(0.37)
    torch._foreach_mul_(cpu, coef)
    mlu_coef = coef.to("mlu")
    before = launches()
    torch._foreach_mul_(mlu, mlu_coef)
    assert launches() - before == 1
    for g, e in zip(mlu, cpu):
        torch.testing.assert_close(g.cpu(), e)
    got = torch._foreach_add(mlu, torch.tensor(2.0, device="mlu"), alpha=-0.5)
    for g, e in zip(got, torch._foreach_add(cpu, torch.tensor(2.0), alpha=-0.5)):
        torch.testing.assert_close(g.cpu(), e)
    # A one-element tensor that is not 0-dim is refused, as on the CPU.
    with pytest.raises(RuntimeError, match="scalar tensor expected to be 0 dim but it has 1 dimensions"):
        torch._foreach_mul(mlu, torch.tensor([3.0], device="mlu"))
    # A CPU scalar tensor (the optimizers' step counts with capturable=False) gives the same.
    got = torch._foreach_div(mlu, torch.tensor(4.0))
    for g, e in zip(got, torch._foreach_div(cpu, torch.tensor(4.0))):
        torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("ord", [1, 2, 3, math.inf])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_norm(ord, dtype):
    cpu = make_list(dtype, 3, shapes=SHAPES[1:] if ord == math.inf else SHAPES)
    mlu = to_mlu(cpu)
    before = launches()
    got = torch._foreach_norm(mlu, ord)
    assert launches() - before <= 2  # the task, plus zero_ for an empty tensor's norm
    for g, e in zip(got, torch._foreach_norm(cpu, ord)):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g.cpu(), e, rtol=2e-2 if dtype != torch.float32 else 1e-5, atol=1e-5)
    for g, e in zip(torch._foreach_norm(mlu, 2, dtype=torch.float64), torch._foreach_norm(cpu, 2, dtype=torch.float64)):
        assert g.dtype == torch.float64
        torch.testing.assert_close(g.cpu(), e)


def test_lists_that_do_not_qualify_take_the_per_tensor_loop():
    """Non-dense views, mixed dtypes and integer division promote or break the one-run layout: still right."""
    base = [torch.randn(6, 8), torch.randn(5, 9)]
    cpu = [t[:, ::2] for t in base]  # not dense
    mlu = [t.to("mlu")[:, ::2] for t in base]
    other = [torch.randn(t.shape) for t in cpu]
    before = launches()
    got = torch._foreach_add(mlu, to_mlu(other), alpha=2)
    assert launches() - before >= len(mlu)
    for g, e in zip(got, torch._foreach_add(cpu, other, alpha=2)):
        torch.testing.assert_close(g.cpu(), e)
    mixed = [torch.randn(4), torch.randn(4, dtype=torch.float64)]
    for g, e in zip(torch._foreach_mul(to_mlu(mixed), 3.0), torch._foreach_mul(mixed, 3.0)):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g.cpu(), e)
    ints = [torch.arange(1, 7), torch.arange(2, 5)]
    for g, e in zip(torch._foreach_div(to_mlu(ints), 2), torch._foreach_div(ints, 2)):
        assert g.dtype == e.dtype == torch.float32
        torch.testing.assert_close(g.cpu(), e)
    # In place on views of one storage: the per-tensor loop writes through the views.
    storage = torch.zeros(10)
    views = [storage[:5], storage[5:]]
    m_storage = storage.to("mlu")
    torch._foreach_add_([m_storage[:5], m_storage[5:]], [torch.ones(5, device="mlu"), torch.full((5,), 2.0, device="mlu")])
    torch._foreach_add_(views, [torch.ones(5), torch.full((5,), 2.0)])
    torch.testing.assert_close(m_storage.cpu(), storage)


def cpu_error(fn, *lists):
    with pytest.raises(Exception) as cpu_info:
        fn(*lists)
    return cpu_info


@pytest.mark.parametrize("case", ["length_mismatch", "empty", "bool_sub", "bool_neg", "scalarlist_length",
                                  "int_float_alpha", "inf_norm_of_empty"])
def test_errors_match_cpu(case):
    calls = {
        "length_mismatch": (lambda a, b: torch._foreach_add(a, b), [[torch.ones(2)] * 2, [torch.ones(2)]]),
        "empty": (lambda: torch._foreach_mul([], 2.0), []),
        "bool_sub": (lambda a, b: torch._foreach_sub(a, b), [[torch.ones(2, dtype=torch.bool)]] * 2),
        "bool_neg": (lambda a: torch._foreach_neg(a), [[torch.ones(2, dtype=torch.bool)]]),
        "scalarlist_length": (lambda a: torch._foreach_mul(a, [1.0, 2.0]), [[torch.ones(2)] * 3]),
        "inf_norm_of_empty": (lambda a: torch._foreach_norm(a, math.inf), [[torch.ones(2), torch.ones(0)]]),
        "int_float_alpha": (lambda a, b: torch._foreach_add(a, b, alpha=0.5), [[torch.ones(2, dtype=torch.long)]] * 2),
    }
    fn, lists = calls[case]
    expected = cpu_error(fn, *lists)
    with pytest.raises(expected.type) as got:
        fn(*[to_mlu(ts) for ts in lists])
    assert str(got.value).split("\n")[0] == str(expected.value).split("\n")[0]
    assert (torch.ones(2, device="mlu") + 1).sum().item() == 4.0  # the device keeps working


def test_optimizer_foreach_step_is_a_few_tasks():
    """A foreach Adam step over 20 parameters costs a bounded number of launches, not a few per parameter."""
    params = [torch.nn.Parameter(torch.randn(16, 16, device="mlu")) for _ in range(20)]
    opt = torch.optim.Adam(params, lr=1e-2, foreach=True)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()  # creates the state
    before = launches()
    opt.step()
    assert launches() - before < 20, "a foreach step should launch O(1) tasks per op, not O(parameters)"


def _foreach_infos():
    import torch.testing._internal.common_methods_invocations as cmi
    dbs = (cmi.foreach_unary_op_db + cmi.foreach_binary_op_db + cmi.foreach_pointwise_op_db +
           cmi.foreach_reduce_op_db + cmi.foreach_other_op_db)
    return [pytest.param(op, dtype, id=f"{op.name}-{str(dtype)[6:]}") for op in dbs
            for dtype in (torch.float32, torch.bfloat16, torch.int64) if dtype in op.supported_dtypes("cpu")]


def _copy_to(x, device):
    if isinstance(x, torch.Tensor):
        return x.detach().to(device, copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(_copy_to(e, device) for e in x)
    return x


@pytest.mark.parametrize("op,dtype", _foreach_infos())
def test_foreach_opinfo_samples_match_cpu(op, dtype, native_oracle):
    """PyTorch's own foreach OpInfos (foreach_*_op_db, what its test_foreach.py runs): the first 12 samples of each
    op, out of place and in place, on mlu vs the CPU; the same exception type where the CPU raises (a bool scalar
    subtracted, integer powers, ...); nothing on the CPU fallback."""
    try:
        samples = list(op.sample_inputs("cpu", dtype, num_input_tensors=[5]))[:12]
    except TypeError:
        samples = list(op.sample_inputs("cpu", dtype))[:12]
    tol = {"atol": 1e-2, "rtol": 1.6e-2} if dtype == torch.bfloat16 else {}
    for sample in samples:
        for fn in (op.method_variant, op.inplace_variant):
            if fn is None:
                continue

            def call(device, fn=fn, sample=sample):
                args = _copy_to([sample.input, *sample.args], device)
                out = fn(*args, **sample.kwargs)
                return args[0] if fn is op.inplace_variant else out

            try:
                call("cpu")
            except Exception as cpu_error:  # noqa: BLE001 - the CPU's exception type is the oracle
                with pytest.raises(type(cpu_error)):  # (an op the CPU refuses may reach it through the fallback)
                    call("mlu")
                continue
            native_oracle(call, equal_nan=True, **tol)
