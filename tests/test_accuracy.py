"""torch_mlu.accuracy (docs/accuracy.md): the op-by-op check against the CPU, its reproducers, the environment
switch, and the NaN/Inf origin."""
import json
import os
import subprocess
import sys

import pytest
import torch

import torch_mlu.accuracy as accuracy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from gpt import GPT, GPTConfig  # noqa: E402


def gpt_step(model, x, autocast=False):
    with torch.autocast("mlu", dtype=torch.bfloat16, enabled=autocast):
        _, loss = model(x, x)
    loss.backward()
    return loss


@pytest.fixture
def gpt():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, block_size=16, n_layer=2, n_head=4, n_embd=32)).to("mlu")
    return model, torch.randint(0, 64, (2, 16), device="mlu")


@pytest.mark.parametrize("autocast", [False, True])
def test_a_clean_training_step_has_no_divergence(gpt, autocast):
    model, x = gpt
    opt = torch.optim.AdamW(model.parameters())
    with accuracy.check(fail_fast=False, model=model, reproducer_dir=None) as report:
        gpt_step(model, x, autocast)
        opt.step()
    assert report.divergences == [], str(report)
    checked = set(report.checked)
    # Forward, backward (the autograd engine's device thread), the fused attention through its CPU reference,
    # and the optimizer.
    for op in ("aten.mm.default", "aten.native_layer_norm_backward.default",
               "aten._scaled_dot_product_fused_attention_overrideable.default",
               "aten._scaled_dot_product_fused_attention_overrideable_backward.default"):
        assert op in checked, sorted(checked)
    assert any("foreach" in op or "addcdiv" in op or "lerp" in op for op in checked), sorted(checked)
    assert all(why in ("a view",) or "random" in why for why in report.skipped.values()), report.skipped


def test_the_check_leaves_the_program_results_alone(gpt):
    model, x = gpt
    torch.manual_seed(1)
    plain = gpt_step(model, x).item()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with accuracy.check(reproducer_dir=None):
        checked = gpt_step(model, x).item()
    assert checked == plain
    for g, p in zip(grads, model.parameters()):
        assert torch.equal(g, p.grad)


def test_first_divergence_names_op_module_stack_and_its_reproducer_reproduces(gpt, tmp_path):
    model, x = gpt
    # No tolerance at all: the first op whose mlu result differs from the CPU's in any bit (layer norm's
    # reduction order) is a divergence.
    with pytest.raises(accuracy.AccuracyError) as caught:
        with accuracy.check(rtol=0, atol=0, model=model, modules=["blocks.1"], reproducer_dir=str(tmp_path)):
            gpt_step(model, x)
    d = caught.value.divergence
    assert d.module.startswith("blocks.1"), d
    assert d.phase == "forward"
    assert any("test_accuracy.py" in frame for frame in d.stack), d.stack
    assert any("gpt.py" in frame and "forward" in frame for frame in d.stack), d.stack
    assert d.outputs and d.outputs[0][1].mismatched > 0
    assert f"reproducer: python {d.reproducer}" in str(caught.value)
    run = subprocess.run([sys.executable, os.path.join(d.reproducer, "repro.py")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DIVERGES" in run.stdout, run.stdout


def test_collecting_mode_and_the_op_filter(gpt):
    model, x = gpt
    with accuracy.check(rtol=0, atol=0, fail_fast=False, ops=["mm", "aten.native_layer_norm"],
                        reproducer_dir=None) as report:
        gpt_step(model, x)
    assert set(report.checked) <= {"aten.mm.default", "aten.native_layer_norm.default"}, report.checked
    assert len(report.divergences) > 1
    assert {d.phase for d in report.divergences} == {"forward", "backward"} or all(
        d.op == "aten.native_layer_norm.default" for d in report.divergences)


def test_random_ops_are_listed_and_ties_are_checked_by_what_they_select():
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0, 3.0]], device="mlu")
    with accuracy.check(rtol=0, atol=0, reproducer_dir=None) as report:
        torch.nn.functional.dropout(torch.ones(8, device="mlu"), 0.5)
        torch.rand(4, device="mlu")
        values, indices = x.topk(2)
        x.max(dim=1)
        x.sort(dim=1)
    assert report.skipped.get("aten.rand.default") == "random"
    assert any("dropout" in op or "bernoulli" in op for op in report.skipped), report.skipped
    assert {"aten.topk.default", "aten.max.dim", "aten.sort.default"} <= set(report.checked)
    assert torch.equal(values.cpu(), torch.tensor([[3.0, 3.0]]))


def test_modules_need_their_model():
    with pytest.raises(ValueError, match="pass model="):
        accuracy.check(modules=["fc"])


def run_script(code, env, cwd):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, cwd=cwd)


def test_the_environment_turns_it_on_for_the_whole_program(tmp_path):
    code = ("import torch\n"
            "x = torch.randn(4, 8, device='mlu')\n"
            "y = torch.nn.functional.layer_norm(x, (8,))\n"
            "print('finished', float(y.sum()))\n")
    env = {"TORCH_MLU_ACCURACY_RTOL": "0", "TORCH_MLU_ACCURACY_ATOL": "0",
           "TORCH_MLU_ACCURACY_DIR": str(tmp_path / "repro")}
    stop = run_script(code, {**env, "TORCH_MLU_ACCURACY_CHECK": "1"}, tmp_path)
    assert stop.returncode != 0 and "AccuracyError" in stop.stderr, stop.stderr
    assert "mlu and the CPU part ways at aten.native_layer_norm.default" in stop.stderr, stop.stderr
    assert (tmp_path / "repro" / "000_native_layer_norm" / "repro.py").exists()
    report = run_script(code, {**env, "TORCH_MLU_ACCURACY_CHECK": "report"}, tmp_path)
    assert report.returncode == 0 and "finished" in report.stdout, report.stderr
    assert "3 op calls compared (3 ops)" in report.stderr, report.stderr
    assert "mlu and the CPU part ways at aten.native_layer_norm.default" in report.stderr, report.stderr
    bad = run_script("import torch", {"TORCH_MLU_ACCURACY_CHECK": "always"}, tmp_path)
    assert bad.returncode != 0 and "use 1 (stop at the first divergence) or report" in bad.stderr, bad.stderr


def test_nonfinite_origin_forward_backward_and_in_place():
    x = torch.tensor([1.0, 0.0, 2.0], device="mlu")
    with pytest.raises(accuracy.NonFiniteError) as caught:
        with accuracy.nonfinite_origin():
            y = x * 2  # finite
            (y / x).sum()  # 0 / 0
    origin = caught.value.origin
    assert origin.op == "aten.div.Tensor" and origin.phase == "forward", origin
    assert origin.results == [("output 0", "1 NaN, 0 Inf of 3")]
    assert any("test_accuracy.py" in frame for frame in origin.stack)

    w = torch.tensor([1.0, 0.0], device="mlu", requires_grad=True)
    with pytest.raises(accuracy.NonFiniteError) as caught:
        with accuracy.nonfinite_origin():
            w.sqrt().sum().backward()  # d sqrt(w) / dw at 0: Inf
    assert caught.value.origin.phase == "backward", caught.value.origin

    a = torch.tensor([1e38, 3e38], device="mlu")
    with accuracy.nonfinite_origin(raise_error=False) as mode:
        a.mul_(10)  # the origin: an in-place overflow
        a.add_(1)  # passes the Inf on: not an origin
    assert mode.origin.op == "aten.mul_.Tensor", mode.origin
    assert ("argument self", "0 NaN, 2 Inf of 2") in mode.origin.results
    assert "written by the op" in mode.origin.inputs[0]


def test_nonfinite_origin_ignores_values_already_non_finite():
    x = torch.tensor([float("nan"), 1.0], device="mlu")
    with accuracy.nonfinite_origin() as mode:
        (x * 2).exp()
    assert mode.origin is None


def dumped_run(device, folder, corrupt=None, tensors=False, steps=2):
    """A GPT-mini trained `steps` steps on `device`, recorded into `folder`; `corrupt` scales one module's
    output by 1.01 (a stand-in for a wrong kernel inside it)."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, block_size=16, n_layer=2, n_head=4, n_embd=32)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if corrupt:
        dict(model.named_modules())[corrupt].register_forward_hook(lambda m, args, out: out * 1.01)
    g = torch.Generator().manual_seed(1)
    with accuracy.dump(model, str(folder), optimizer=opt, tensors=tensors):
        for _ in range(steps):
            x = torch.randint(0, 64, (2, 16), generator=g).to(device)
            _, loss = model(x, x)
            loss.backward()
            opt.step()
            opt.zero_grad()


# ---- the dump's statistics: mlu's one-pass kernel against the same formulas on the CPU in double ----

def _layouts(shape, dtype):
    base = torch.randn(shape, dtype=torch.float32).to(dtype) * 3 + 1
    return {"contiguous": base, "transposed": base.transpose(0, 1), "strided": base[:, ::2],
            "channels_last": base.reshape(2, 3, 4, -1).contiguous(memory_format=torch.channels_last)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64])
@pytest.mark.parametrize("difference", [False, True], ids=["values", "difference"])
def test_dump_statistics_on_mlu_match_the_cpu(dtype, difference):
    from torch_mlu.accuracy._dump import statistics
    tensors = list(_layouts((24, 40), dtype).values()) + [torch.randn(70001).to(dtype)]  # several chunks
    minus = [t + 0.5 for t in tensors] if difference else None
    if difference:
        minus[1] = minus[1].contiguous()  # strides unlike the tensor's
    want = statistics(tensors, minus)
    got = statistics([t.to("mlu") for t in tensors], None if minus is None else [m.to("mlu") for m in minus])
    assert got.device.type == "mlu" and got.dtype == torch.float64 and got.shape == (len(tensors), 6)
    rtol = 1e-12 if dtype == torch.float64 else 1e-6  # 16- and 32-bit floats: float within blocks of 256
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=rtol * float(want[:, 2].max()))


def test_dump_statistics_propagate_nan_and_inf_and_refuse_bad_input():
    from torch_mlu.accuracy._dump import statistics
    nan = torch.tensor([1.0, float("nan"), 2.0] * 10000, device="mlu")
    inf = torch.tensor([1.0, float("inf"), -2.0] * 10000, device="mlu")
    rows = statistics([nan, inf]).cpu()
    assert rows[0, 0] == 30000 and rows[0, 1:].isnan().all()
    assert rows[1, 3] == 1.0 * -2 and rows[1, 4] == float("inf") and rows[1, 5] == float("inf")
    import torch_mlu
    for bad, message in [(([],), "no tensors"), (([torch.ones(3, device="mlu")], [torch.ones(2, device="mlu")]),
                                                   r"minus\[0\] must be like tensors\[0\]"),
                         (([torch.ones(3)],), "must be on mlu"), (([torch.ones(3, dtype=torch.int32, device="mlu")],),
                                                                  "floating-point or complex"),
                         (([torch.ones(0, device="mlu")],), "has no elements")]:
        with pytest.raises(ValueError, match=message):
            torch_mlu._C._mlu_tensorStatistics(*bad)
    assert statistics([torch.ones(4, device="mlu")]).cpu()[0].tolist() == [4, 1, 0, 1, 1, 2]


def compare_cli(*args):
    return subprocess.run([sys.executable, "-m", "torch_mlu.accuracy", "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_dump_and_compare_name_the_module_that_diverges(tmp_path):
    dumped_run("cpu", tmp_path / "cpu")
    dumped_run("mlu", tmp_path / "mlu")
    dumped_run("mlu", tmp_path / "bad", corrupt="blocks.1.mlp")
    clean = accuracy.compare_dumps(str(tmp_path / "mlu"), str(tmp_path / "cpu"))
    assert clean.first is None, clean.table()
    records = [json.loads(line) for line in (tmp_path / "mlu" / "records.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in records} == {"forward", "backward", "grad", "param", "update"}
    assert {r["step"] for r in records} == {0, 1}
    bad = compare_cli(tmp_path / "bad", tmp_path / "cpu", "--png", tmp_path / "error.png")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "first divergence: step 0 forward  blocks.1.mlp:" in bad.stdout, bad.stdout
    assert (tmp_path / "error.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    modules = dict(accuracy.compare_dumps(str(tmp_path / "bad"), str(tmp_path / "cpu")).by_module("forward"))
    assert modules["blocks.0.mlp"] < 1e-3 < modules["blocks.1.mlp"], modules


def test_dumps_with_full_tensors_compare_element_by_element(tmp_path):
    dumped_run("cpu", tmp_path / "cpu", tensors=True, steps=1)
    dumped_run("mlu", tmp_path / "bad", corrupt="blocks.1.mlp", tensors=True, steps=1)
    comparison = accuracy.compare_dumps(str(tmp_path / "bad"), str(tmp_path / "cpu"))
    assert comparison.first.where.startswith("step 0 forward  blocks.1.mlp"), comparison.table()
    # The outputs are 1.01 x the CPU's: the exact error of that record is 1%.
    assert comparison.first.error == pytest.approx(0.01, rel=1e-3)


def test_compare_tells_non_finite_records_apart(tmp_path):
    def run(folder, value):
        model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Hardtanh(-2.0, 2.0))
        with accuracy.dump(model, str(tmp_path / folder)):
            model(torch.full((2, 4), value, device="mlu"))

    run("nan", float("nan"))
    run("nan_again", float("nan"))
    run("inf", float("inf"))
    run("finite", 1.0)
    assert accuracy.compare_dumps(str(tmp_path / "nan"), str(tmp_path / "nan_again")).first is None
    for other in ("inf", "finite"):
        first = accuracy.compare_dumps(str(tmp_path / "nan"), str(tmp_path / other)).first
        assert first.where.startswith("step 0 forward  0") and first.error == float("inf"), first


# ---- proof that the tools find a wrong kernel: the corrupt: fault rule (Note [Corrupting an op's results]) ----

def test_the_check_names_a_corrupted_op_and_its_reproducer_reproduces_it(gpt, tmp_path):
    model, x = gpt
    with torch.mlu.fault_injection.inject("corrupt:aten::native_layer_norm_backward@2"):
        with pytest.raises(accuracy.AccuracyError) as caught:
            with accuracy.check(model=model, reproducer_dir=str(tmp_path)):
                gpt_step(model, x)
        assert torch.mlu.fault_injection.count() == 1
    d = caught.value.divergence
    assert d.op == "aten.native_layer_norm_backward.default" and d.phase == "backward", d
    # Under the same rule the reproducer's mlu run is corrupted again; without it, mlu and the CPU agree.
    env = dict(os.environ, TORCH_MLU_FAULT_INJECT="corrupt:aten::native_layer_norm_backward")
    again = subprocess.run([sys.executable, os.path.join(d.reproducer, "repro.py")], capture_output=True,
                           text=True, timeout=120, env=env)
    assert again.returncode == 1 and "DIVERGES" in again.stdout, again.stdout + again.stderr
    clean = subprocess.run([sys.executable, os.path.join(d.reproducer, "repro.py")], capture_output=True,
                           text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_the_dump_comparison_names_the_module_of_a_corrupted_op(tmp_path):
    dumped_run("cpu", tmp_path / "cpu")
    with torch.mlu.fault_injection.inject("corrupt:aten::gelu"):
        dumped_run("mlu", tmp_path / "bad")
    first = accuracy.compare_dumps(str(tmp_path / "bad"), str(tmp_path / "cpu")).first
    assert first.where.startswith("step 0 forward  blocks.0.mlp.1"), first


def test_a_corrupt_rule_scales_only_the_named_ops_mlu_results():
    x = torch.randn(64, device="mlu")
    host = x.cpu()
    want_exp, want_sin = host.exp(), host.sin()
    with torch.mlu.fault_injection.inject("corrupt:aten::exp"):
        torch.testing.assert_close(x.exp().cpu(), want_exp * (1 + 2 ** -6))  # the named op, on mlu: scaled
        torch.testing.assert_close(x.sin().cpu(), want_sin)                   # another op: untouched
        assert torch.equal(host.exp(), want_exp)                              # the named op on the CPU: untouched
        assert torch.mlu.fault_injection.count() == 1
    torch.testing.assert_close(x.exp().cpu(), want_exp)                      # the rule gone: exact again
