"""torch.autocast("mlu") (csrc/aten/ops/AutocastMode.cpp: CUDA's op lists on the AutocastPrivateUse1 key),
torch.mlu.amp (autocast, custom_fwd / custom_bwd, GradScaler) and the autocast queries of torch.mlu.

Each policy is checked on representative ops of its list (the result dtype on mlu), results are compared with
CPU autocast where the CPU has the same policy (bfloat16 matrix products and convolutions), and GradScaler skips
steps with inf / NaN gradients exactly as the CPU's.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401  (registers mlu)

LOW = [torch.bfloat16, torch.float16]


def inputs(device, seed=0):
    g = torch.Generator().manual_seed(seed)
    make = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    return dict(a=make(8, 16), b=make(16, 12), w=make(12, 16), x=make(2, 3, 10, 10), k=make(4, 3, 3, 3),
                q=make(2, 2, 8, 16), v1=make(16), v2=make(16), bb=make(3, 8, 16), bc=make(3, 16, 12), m=make(8, 12))


# (op, expected dtype rule): "low" = the autocast dtype, "fp32" = float32, "promote" = the widest input.
POLICY_CASES = {
    "mm": (lambda t: torch.mm(t["a"], t["b"]), "low"),
    "matmul": (lambda t: t["a"] @ t["b"], "low"),
    "linear": (lambda t: F.linear(t["a"], t["w"]), "low"),
    "addmm": (lambda t: torch.addmm(t["m"], t["a"], t["b"]), "low"),
    "bmm": (lambda t: torch.bmm(t["bb"], t["bc"]), "low"),
    "baddbmm": (lambda t: torch.baddbmm(torch.zeros(3, 8, 12, device=t["a"].device), t["bb"], t["bc"]), "low"),
    "conv2d": (lambda t: F.conv2d(t["x"], t["k"]), "low"),
    "sdpa": (lambda t: F.scaled_dot_product_attention(t["q"], t["q"], t["q"]), "low"),
    "softmax": (lambda t: torch.softmax(t["a"], -1), "fp32"),
    "log_softmax": (lambda t: torch.log_softmax(t["a"], -1), "fp32"),
    "layer_norm": (lambda t: F.layer_norm(t["a"], [16]), "fp32"),
    "exp": (lambda t: torch.exp(t["a"]), "fp32"),
    "mse_loss": (lambda t: F.mse_loss(t["a"], t["a"] * 2), "fp32"),
    "cross_entropy": (lambda t: F.cross_entropy(t["a"], torch.arange(8, device=t["a"].device) % 16), "fp32"),
    "cumsum": (lambda t: torch.cumsum(t["a"], 0), "fp32"),
    "norm": (lambda t: torch.norm(t["a"]), "fp32"),
    "dot": (lambda t: torch.dot(t["v1"], t["v2"].to(torch.bfloat16)), "promote"),
    "addcmul": (lambda t: torch.addcmul(t["a"], t["a"].to(torch.bfloat16), t["a"]), "promote"),
}


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", list(POLICY_CASES))
def test_policy_dtypes(name, dtype):
    fn, rule = POLICY_CASES[name]
    t = inputs("mlu")
    with torch.autocast("mlu", dtype=dtype):
        out = fn(t)
    expected = {"low": dtype, "fp32": torch.float32, "promote": torch.float32}[rule]
    assert out.dtype == expected, (name, out.dtype)
    if rule != "promote":  # outside autocast nothing is cast (dot would refuse the mixed dtypes)
        assert fn(t).dtype == torch.float32


@pytest.mark.parametrize("name", ["mm", "matmul", "linear", "addmm", "bmm", "baddbmm", "conv2d"])
def test_bfloat16_results_match_cpu_autocast(name, native_oracle):
    fn, _ = POLICY_CASES[name]

    def run(device):
        with torch.autocast(device, dtype=torch.bfloat16):
            return fn(inputs(device))

    actual = native_oracle(run, rtol=1.6e-2, atol=1e-2)
    assert actual.dtype == torch.bfloat16


def test_gradients_flow_back_in_float32():
    t = inputs("mlu")
    w = t["w"].requires_grad_()
    with torch.autocast("mlu", dtype=torch.bfloat16):
        loss = F.linear(t["a"], w).float().square().mean()
    loss.backward()
    assert w.grad.dtype == torch.float32 and torch.isfinite(w.grad).all()


def test_queries_and_module_wrappers():
    assert torch.mlu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    assert not torch.mlu.is_autocast_enabled()
    with torch.mlu.amp.autocast(dtype=torch.bfloat16):
        assert torch.mlu.is_autocast_enabled() and torch.mlu.get_autocast_dtype() == torch.bfloat16
        assert torch.is_autocast_enabled("mlu")
    assert not torch.mlu.is_autocast_enabled()
    previous = torch.mlu.get_autocast_dtype()
    torch.mlu.set_autocast_dtype(torch.bfloat16)
    torch.mlu.set_autocast_enabled(True)
    try:
        assert (inputs("mlu")["a"] @ inputs("mlu")["b"]).dtype == torch.bfloat16
    finally:
        torch.mlu.set_autocast_enabled(False)
        torch.mlu.set_autocast_dtype(previous)
    with torch.autocast("mlu", dtype=torch.float64):  # unsupported: warns and disables, as for CUDA
        assert not torch.mlu.is_autocast_enabled()


def test_binary_cross_entropy_is_banned():
    p = torch.rand(4, device="mlu")
    with torch.autocast("mlu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
        assert F.binary_cross_entropy_with_logits(p, p).dtype == torch.float32


def test_custom_fwd_and_bwd():
    class Scale(torch.autograd.Function):
        @staticmethod
        @torch.mlu.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            ctx.inner_dtype = (x @ x.t()).dtype  # autocast is off inside: float32 math
            return x * 2

        @staticmethod
        @torch.mlu.amp.custom_bwd
        def backward(ctx, grad):
            return grad * 2

    x = torch.randn(4, 4, device="mlu", dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast("mlu", dtype=torch.bfloat16):
        y = Scale.apply(x)
    assert y.dtype == torch.float32
    y.sum().backward()
    torch.testing.assert_close(x.grad.float().cpu(), torch.full((4, 4), 2.0))


def scaler_run(device, scaler_cls):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = scaler_cls(init_scale=2.0 ** 8, growth_interval=2)
    scales, weights = [], []
    for step in range(6):
        x = torch.randn(16, 8).to(device)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        scaler.scale(loss).backward()
        if step in (1, 4):  # an overflowing step: skipped, scale backs off
            model.weight.grad[0, 0] = float("inf") if step == 1 else float("nan")
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        scales.append(scaler.get_scale())
        weights.append(model.weight.detach().cpu().clone())
    return scales, weights


def test_grad_scaler_matches_cpu(native_oracle):
    scalers = {"cpu": lambda **kw: torch.amp.GradScaler("cpu", **kw), "mlu": torch.mlu.amp.GradScaler}
    # _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ run natively (csrc/aten/ops/AmpOps.cpp).
    # The scales must be equal, the weights (copied to the CPU by scaler_run) close.
    mlu_scales, mlu_weights = native_oracle(lambda device: scaler_run(device, scalers[device]), rtol=2e-2, atol=2e-3,
                                            on_mlu=False)
    assert torch.equal(mlu_weights[1], mlu_weights[0])  # the inf step changed nothing
    generic, _ = scaler_run("mlu", lambda **kw: torch.amp.GradScaler("mlu", **kw))
    assert generic == mlu_scales


def test_amp_ops_directly():
    grads = [torch.tensor([1.0, 2.0], device="mlu"), torch.tensor([4.0, float("inf")], device="mlu"),
             torch.empty(0, device="mlu")]
    found = torch.zeros(1, device="mlu")
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found, torch.full((1,), 0.5, device="mlu"))
    assert found.item() == 1.0 and grads[0].tolist() == [0.5, 1.0]
    scale, tracker = torch.full((1,), 8.0, device="mlu"), torch.zeros(1, dtype=torch.int32, device="mlu")
    ok = torch.zeros(1, device="mlu")
    for expected_scale, expected_tracker in [(8.0, 1), (16.0, 0), (16.0, 1)]:
        torch._amp_update_scale_(scale, tracker, ok, 2.0, 0.5, 2)
        assert (scale.item(), tracker.item()) == (expected_scale, expected_tracker)
    torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2)
    assert (scale.item(), tracker.item()) == (8.0, 0)
    big = torch.full((1,), 3e38, device="mlu")
    torch._amp_update_scale_(big, torch.ones(1, dtype=torch.int32, device="mlu"), ok, 2.0, 0.5, 2)
    assert big.item() == pytest.approx(3e38)  # growing would overflow: the scale stays


# ---- every entry of the policy lists (parsed from the ATen header the wheel ships) ----

def policy_lists():
    import os
    import re
    text = open(os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")).read()
    lists = {}
    for macro in ("AT_FORALL_LOWER_PRECISION_FP", "AT_FORALL_FP32", "AT_FORALL_FP32_SET_OPT_DTYPE",
                  "AT_FORALL_PROMOTE"):
        body = re.search(r"#define %s\(_\)(.*?)(?=\n#define|\n#else|\n#endif)" % macro, text, re.S).group(1)
        lists[macro] = [(m.group(1), m.group(2)) for m in
                        re.finditer(r"_\(\s*([A-Za-z0-9_]+)\s*(?:,\s*([A-Za-z0-9_]+))?\s*\)", body)]
    return lists


LISTS = policy_lists()


def test_every_policy_list_entry_has_an_mlu_autocast_kernel():
    missing = []
    for macro, entries in LISTS.items():
        for name, overload in entries:
            qualified = f"aten::{name}" + (f".{overload}" if overload else "")
            if not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "AutocastPrivateUse1"):
                missing.append((macro, qualified))
    assert sum(len(e) for e in LISTS.values()) > 100
    assert not missing, missing
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::binary_cross_entropy", "AutocastPrivateUse1")
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("aten::add.Tensor", "AutocastPrivateUse1")


def op_db_cases():
    from torch.testing._internal.common_methods_invocations import op_db
    by_name = {}
    for op in op_db:
        for key in (op.name, op.aten_name or op.name):
            by_name.setdefault(key, op)
    cases = []
    for macro, low_input in (("AT_FORALL_LOWER_PRECISION_FP", True), ("AT_FORALL_FP32", False),
                             ("AT_FORALL_FP32_SET_OPT_DTYPE", False)):
        for name in sorted({n for n, _ in LISTS[macro]}):
            op = by_name.get(name) or by_name.get("nn.functional." + name)
            dtype = torch.float32 if low_input else torch.bfloat16
            if op is not None and dtype in op.supported_dtypes("cpu"):
                cases.append(pytest.param(op, dtype, low_input, id=f"{macro[10:].lower()}-{op.name}"))
    return cases


@pytest.mark.parametrize("op,dtype,low_policy", op_db_cases())
def test_policy_on_op_db_samples(op, dtype, low_policy):
    """The first op_db sample under autocast("mlu", bfloat16): lower-precision ops turn float32 into bfloat16,
    float32 ops turn bfloat16 into float32."""
    sample = next(iter(op.sample_inputs("mlu", dtype)))
    with torch.autocast("mlu", dtype=torch.bfloat16):
        out = op(sample.input, *sample.args, **sample.kwargs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
            if isinstance(o, torch.Tensor) and o.is_floating_point()]
    expected = torch.bfloat16 if low_policy else torch.float32
    assert outs and all(o.dtype == expected for o in outs), [o.dtype for o in outs]


def _no_op_db_cases():
    """Policy-list entries op_db has no OpInfo for, called directly: (entry, call(dtype) -> output, expected)."""
    aten = torch.ops.aten

    def r(*shape, dtype):
        return torch.randn(*shape, device="mlu", dtype=dtype)

    def cell(fn, gates):
        return lambda d: fn(r(3, 4, dtype=d), r(3, 5, dtype=d), r(gates * 5, 4, dtype=d), r(gates * 5, 5, dtype=d),
                            r(gates * 5, dtype=d), r(gates * 5, dtype=d))

    def lstm(d):
        return torch.lstm_cell(r(3, 4, dtype=d), (r(3, 5, dtype=d), r(3, 5, dtype=d)), r(20, 4, dtype=d),
                               r(20, 5, dtype=d), r(20, dtype=d), r(20, dtype=d))[0]

    conv_args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    low = {
        "convolution": lambda d: aten.convolution(r(2, 3, 6, 6, dtype=d), r(4, 3, 3, 3, dtype=d), None, *conv_args),
        "_convolution": lambda d: aten._convolution(r(2, 3, 6, 6, dtype=d), r(4, 3, 3, 3, dtype=d), None, *conv_args,
                                                    False, False, True, True),
        "_convolution.deprecated": lambda d: aten._convolution.deprecated(
            r(2, 3, 6, 6, dtype=d), r(4, 3, 3, 3, dtype=d), None, *conv_args, False, False, True),
        "chain_matmul": lambda d: torch.linalg.multi_dot([r(3, 4, dtype=d), r(4, 5, dtype=d), r(5, 2, dtype=d)])
        if False else aten.chain_matmul([r(3, 4, dtype=d), r(4, 5, dtype=d), r(5, 2, dtype=d)]),
        "conv_tbc": lambda d: torch.conv_tbc(r(7, 2, 3, dtype=d), r(3, 3, 4, dtype=d), r(4, dtype=d), 1),
        "gru_cell": cell(torch.gru_cell, 3),
        "rnn_relu_cell": cell(torch.rnn_relu_cell, 1),
        "rnn_tanh_cell": cell(torch.rnn_tanh_cell, 1),
        "lstm_cell": lstm,
    }
    img = lambda d: r(1, 2, 3, 3, dtype=d)  # noqa: E731
    fp32 = {
        "upsample_nearest1d": lambda d: aten.upsample_nearest1d(r(1, 2, 3, dtype=d), [6]),
        "upsample_nearest2d": lambda d: aten.upsample_nearest2d(img(d), [6, 6]),
        "upsample_nearest3d": lambda d: aten.upsample_nearest3d(r(1, 2, 3, 3, 3, dtype=d), [6, 6, 6]),
        "_upsample_nearest_exact1d": lambda d: aten._upsample_nearest_exact1d(r(1, 2, 3, dtype=d), [5]),
        "_upsample_nearest_exact2d": lambda d: aten._upsample_nearest_exact2d(img(d), [5, 5]),
        "_upsample_nearest_exact3d": lambda d: aten._upsample_nearest_exact3d(r(1, 2, 3, 3, 3, dtype=d), [5, 5, 5]),
        "upsample_linear1d": lambda d: aten.upsample_linear1d(r(1, 2, 3, dtype=d), [6], False),
        "upsample_bilinear2d": lambda d: aten.upsample_bilinear2d(img(d), [6, 6], False),
        "upsample_trilinear3d": lambda d: aten.upsample_trilinear3d(r(1, 2, 3, 3, 3, dtype=d), [6, 6, 6], False),
        "upsample_bicubic2d": lambda d: aten.upsample_bicubic2d(img(d), [6, 6], False),
        "_upsample_bicubic2d_aa": lambda d: aten._upsample_bicubic2d_aa(img(d), [2, 2], False),
        "frobenius_norm.dim": lambda d: aten.frobenius_norm.dim(r(3, 4, dtype=d), [0, 1]),
        "nll_loss2d": lambda d: aten.nll_loss2d(r(2, 3, 4, 4, dtype=d).log_softmax(1),
                                                torch.randint(0, 3, (2, 4, 4), device="mlu")),
        "nuclear_norm": lambda d: aten.nuclear_norm(r(3, 4, dtype=d)),
        "nuclear_norm.dim": lambda d: aten.nuclear_norm.dim(r(3, 4, dtype=d), [0, 1]),
    }
    cases = [pytest.param(fn, torch.float32, torch.bfloat16, id=name) for name, fn in low.items()]
    cases += [pytest.param(fn, torch.bfloat16, torch.float32, id=name) for name, fn in fp32.items()]
    # promote: the widest input type wins.
    cases.append(pytest.param(lambda d: aten.grid_sampler(r(1, 2, 4, 4, dtype=d), torch.rand(1, 3, 3, 2, device="mlu"),
                                                          0, 0, False), torch.bfloat16, torch.float32, id="grid_sampler"))
    return cases


# CUDA-only kernels (no CPU or mlu kernel exists; the policy entry is registered all the same).
CUDA_ONLY_ENTRIES = {"_thnn_fused_gru_cell", "_thnn_fused_lstm_cell", "_scaled_dot_product_flash_attention"}


@pytest.mark.parametrize("call,in_dtype,expected", _no_op_db_cases())
def test_policy_on_entries_without_op_db(call, in_dtype, expected):
    """The entries op_db has no OpInfo for (all but the CUDA-only kernels) give the policy's dtype under
    autocast("mlu", bfloat16), and the same dtype as outside autocast when their inputs already have it."""
    with torch.autocast("mlu", dtype=torch.bfloat16):
        out = call(in_dtype)
    assert out.dtype == expected
    assert call(expected).dtype == expected


def test_entries_without_op_db_are_all_covered():
    names = {p.id for p in _no_op_db_cases()} | CUDA_ONLY_ENTRIES
    from torch.testing._internal.common_methods_invocations import op_db
    known = {n for op in op_db for n in (op.name, op.aten_name or op.name)}
    for macro, entries in LISTS.items():
        for name, overload in entries:
            if name in known or "nn.functional." + name in known:
                continue
            entry = name + (f".{overload}" if overload else "")
            assert entry in names or name in names, f"{macro}: {entry} has neither an OpInfo nor a direct test"
