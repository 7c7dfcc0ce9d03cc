"""Device rules: every op checks its operands' devices as CUDA does; host memory outlives its tasks.

See Note [Device checks] in csrc/aten/DeviceCheck.h. The sweep (tests/opinfo/device_sweep.py) moves each tensor
operand of every op_db sample in turn to the CPU and to mlu:1; the mixed-device calls these rules were written
for are spelled out below as reproducers, and each op that legitimately reads host memory (0-dim CPU scalars,
CPU indices, pinned copies) is run behind a slow queue with its host tensor overwritten and freed before the
queue reaches it.
"""
import collections
import gc
import json
import pathlib
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_mlu

REPO = pathlib.Path(__file__).resolve().parent.parent
SAME_DEVICE = "Expected all tensors to be on the same device"
SLOW_QUEUE = 50_000_000  # 50 ms of device time ahead of the op under test

# Ops that CUDA runs with an operand on another device, and why. Their mixed calls must then give the
# all-on-mlu:0 values (a device error is accepted too).
CUDA_RUNS_MIXED = {
    "expand_as": "reads only the other tensor's shape",
    "view_as": "reads only the other tensor's shape",
    "reshape_as": "reads only the other tensor's shape",
    "resize_as_": "reads only the other tensor's shape",
    "broadcast_tensors": "composite of expand: shapes only",
    "slice_scatter": "composite: clone, then copy_ of src (copy_ crosses devices)",
    "select_scatter": "composite: clone, then copy_ of src",
    "diagonal_scatter": "composite: clone, then copy_ of src",
    "as_strided_scatter": "composite: clone, then copy_ of src",
    "index_put": "indices may live anywhere (moved to self's device), like index",
    "_unsafe_masked_index": "composite of index: indices and mask move to self's device",
    "_unsafe_masked_index_put_accumulate": "composite of index_put: indices and mask move to self's device",
    "linspace.tensor_overload": "0-dim start/end are read with item()",
    "logspace.tensor_overload": "0-dim start/end are read with item()",
    "nn.functional.ctc_loss": "the composite moves targets to log_probs' device (for cuDNN's sake)",
    "narrow": "a 0-dim start tensor is read with item()",
    "index_fill": "a 0-dim value tensor is read with item() (at::native::index_fill_, CUDA's too)",
}
# Ops whose 0-dim operands, on any device, move to the output's device (CUDA's where_self_out does so).
CUDA_MOVES_0DIM = {"where", "masked.amax", "masked.amin", "masked.argmax", "masked.argmin", "masked.logsumexp",
                   "masked.mean", "masked.norm", "masked.prod", "masked.sum"}


def _sweep_rows():
    result = subprocess.run(
        [sys.executable, str(REPO / "tests" / "opinfo" / "device_sweep.py"), "--samples", "3"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines or not lines[-1].get("done"):
        last = lines[-1] if lines else {}
        pytest.fail(f"the sweep died (exit {result.returncode}) during {last}:\n{result.stderr[-3000:]}")
    return [row for row in lines if "outcome" in row]


def test_sweep_of_every_op_follows_cudas_device_rules():
    """Mixed-device calls follow CUDA's rules; calls with every tensor on the non-current device behave as on
    the current one (one sweep runs both)."""
    rows = _sweep_rows()
    _check_non_current_device_rows(rows)
    rows = [row for row in rows if row["slot"] != "all"]
    assert len({row["op"] for row in rows}) > 200, "the sweep must reach every op with two tensor operands"
    violations = collections.defaultdict(list)
    for row in rows:
        outcome = row["outcome"]
        if outcome == "device_error":
            continue
        scalar_on_cpu = row["target"] == "cpu" and row["dim"] == 0
        moved_scalar = row["dim"] == 0 and row["op"] in CUDA_MOVES_0DIM
        if outcome == "same" and (scalar_on_cpu or moved_scalar or row["empty"] or row["op"] in CUDA_RUNS_MIXED):
            continue
        violations[row["op"]].append((row["slot"], row["target"], outcome, row["message"][:120]))
    assert not violations, "ops that broke CUDA's device rules:\n" + "\n".join(
        f"  {op}: {cases}" for op, cases in sorted(violations.items()))
    stale = set(CUDA_RUNS_MIXED) - {row["op"] for row in rows if row["outcome"] == "same"}
    assert not stale, f"CUDA_RUNS_MIXED lists ops the sweep no longer runs mixed: {sorted(stale)}"


# Ops whose results have no defined values (uninitialised memory): only their device is compared.
UNDEFINED_VALUES = {"empty_like", "new_empty", "new_empty_strided", "empty", "empty_strided", "empty_permuted"}


def _check_non_current_device_rows(rows):
    # Slot "all": every tensor on mlu:1 while mlu:0 is current, and the reverse (see device_sweep.py).
    rows = [row for row in rows if row["slot"] == "all"]
    assert len({row["op"] for row in rows}) > 400, "the sweep must run every op on the non-current device"
    wrong = collections.defaultdict(list)
    for row in rows:
        if row["outcome"] == "same" or (row["outcome"] == "different" and row["op"] in UNDEFINED_VALUES):
            continue
        wrong[row["op"]].append((row["sample"], row["target"], row["outcome"], row["message"][:160]))
    assert not wrong, "ops that misbehave on the non-current device:\n" + "\n".join(
        f"  {op}: {cases}" for op, cases in sorted(wrong.items()))


def test_checked_op_list_matches_the_installed_torch():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_device_checks.py"), "--check"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, "csrc/aten/DeviceChecked.inc is stale: run tools/gen_device_checks.py"


def test_every_aten_kernel_is_registered_with_the_device_check():
    offenders = []
    for path in (REPO / "csrc").rglob("*.cpp"):
        if re.search(r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*PrivateUse1\b", path.read_text()):
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders, f"register aten kernels with TORCH_MLU_ATEN_IMPL (csrc/aten/DeviceCheck.h): {offenders}"


# --- reproducers: mixed-device calls the rules were written for ------------------------------------------

def test_cat_and_stack_reject_a_cpu_operand():
    n = 1 << 22
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}.*tensors is on cpu"):
        torch.cat([torch.zeros(n, device="mlu"), torch.ones(n)])
    torch.mlu._sleep(20_000_000)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        torch.cat([torch.zeros(4, device="mlu"), torch.full((4,), 7.0)])
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        torch.stack([torch.zeros(4, device="mlu"), torch.full((4,), 7.0)])
    torch.mlu.synchronize()


def test_cross_device_operands_are_rejected():
    b = torch.randn(512, 512, device="mlu:1")
    b = b @ b  # still being computed on mlu:1
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}.*mlu:1.*mlu:0"):
        torch.cat([torch.zeros(1, device="mlu:0"), b.flatten()])
    x = torch.randn(4, 5, device="mlu:0")
    on1 = torch.ones(4, 5, device="mlu:1")
    for call in (lambda: torch.stack([x, on1]),
                 lambda: x.scatter_(0, torch.zeros(1, 5, dtype=torch.long, device="mlu"), on1),
                 lambda: F.layer_norm(x, (5,), torch.ones(5, device="mlu:1")),
                 lambda: x.masked_select(on1 > 0),
                 lambda: torch.gather(x, 0, torch.zeros(1, 5, dtype=torch.long, device="mlu:1"))):
        with pytest.raises(RuntimeError, match=SAME_DEVICE):
            call()


@pytest.mark.parametrize("case", ["gather", "cross_entropy", "scatter_src", "layer_norm", "masked_select"])
def test_cpu_operands_get_cudas_error(case):
    x = torch.randn(3, 4, device="mlu")
    calls = {
        "gather": lambda: torch.gather(x, 0, torch.tensor([[1, 2]])),
        "cross_entropy": lambda: F.cross_entropy(x, torch.tensor([1, 2, 3])),
        "scatter_src": lambda: x.scatter_(0, torch.zeros(1, 4, dtype=torch.long, device="mlu"), torch.ones(1, 4)),
        "layer_norm": lambda: F.layer_norm(x, (4,), torch.ones(4), torch.zeros(4)),
        "masked_select": lambda: x.masked_select(torch.ones(3, 4, dtype=torch.bool)),
    }
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}, but got \\w+ is on cpu, different from other tensors "
                                           "on mlu:0 \\(when checking argument in method wrapper_PrivateUse1_"):
        calls[case]()
    assert torch.isfinite(x).all().item(), "the device stays usable"


def test_fallback_ops_get_the_same_check():
    # searchsorted and segment_reduce have no mlu kernel: the CPU fallback runs them, after the same check.
    values = torch.randn(8, device="mlu")
    boundaries = torch.sort(values).values
    torch_mlu.reset_fallback_report()
    torch.searchsorted(boundaries, values)
    torch.segment_reduce(values, "sum", lengths=torch.tensor([4, 4], device="mlu"))
    assert {"aten::searchsorted.Tensor", "aten::segment_reduce"} <= set(torch_mlu.fallback_report())
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}, but got self is on cpu.*"
                                           "method wrapper_PrivateUse1_Tensor_searchsorted"):
        torch.searchsorted(boundaries, values.cpu())
    # Keyword-only tensors, which the generated check skips and CUDA's kernels check themselves.
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}, but got sorter is on cpu"):
        torch.searchsorted(boundaries, values, sorter=torch.arange(8))
    with pytest.raises(RuntimeError, match=f"{SAME_DEVICE}, but got lengths is on cpu"):
        torch.segment_reduce(values, "sum", lengths=torch.tensor([4, 4]))


def test_cpu_scalars_and_cpu_indices_stay_legal():
    x = torch.arange(6.0, device="mlu").reshape(2, 3)
    torch.testing.assert_close((x + torch.tensor(2.0)).cpu(), torch.arange(6.0).reshape(2, 3) + 2)
    torch.testing.assert_close(x[torch.tensor([1, 0])].cpu(), torch.arange(6.0).reshape(2, 3)[[1, 0]])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           "devices, mlu:0 and cpu!"):
        x + torch.ones(3)  # a 1-dim CPU tensor is no scalar


# --- host memory a queued task reads ------------------------------------------------------------------------
# Each of these consumes its host operand at the call (a scalar travels inside the task, indices and pageable
# data are copied before the call returns), so overwriting or freeing it afterwards must not change the
# result. Pinned non_blocking copies read the host buffer later, as on CUDA: only freeing it is safe, which
# the caching host allocator guarantees (the last test).

def _behind_a_slow_queue(make_host, op):
    """Runs op(host) while the queue is busy, then overwrites and frees host before the queue gets to it."""
    host = make_host()
    expected = op(host.clone()).cpu()
    torch.mlu._sleep(SLOW_QUEUE)
    result = op(host)
    host.fill_(-12345 if host.is_floating_point() else 0)
    del host
    gc.collect()
    garbage = [torch.full((1 << 16,), -777.0) for _ in range(8)]  # reuse the freed host memory
    del garbage
    return expected, result.cpu()


HOST_READS = {
    "add_cpu_scalar": (lambda: torch.tensor(7.0), lambda s: torch.ones(1000, device="mlu") + s),
    "mul_cpu_scalar_int": (lambda: torch.tensor(3), lambda s: torch.arange(1000, device="mlu") * s),
    "where_cpu_scalar": (lambda: torch.tensor(5.0),
                         lambda s: torch.where(torch.arange(1000, device="mlu") % 2 == 0,
                                               torch.zeros(1000, device="mlu"), s)),
    "lerp_cpu_weight": (lambda: torch.tensor(0.25),
                        lambda s: torch.lerp(torch.zeros(1000, device="mlu"), torch.ones(1000, device="mlu"), s)),
    "gt_cpu_scalar": (lambda: torch.tensor(499.5), lambda s: torch.arange(1000.0, device="mlu") > s),
    "fill_cpu_value": (lambda: torch.tensor(9.0), lambda s: torch.empty(1000, device="mlu").fill_(s)),
    "masked_fill_cpu_value": (lambda: torch.tensor(4.0),
                              lambda s: torch.zeros(1000, device="mlu").masked_fill(
                                  torch.ones(1000, dtype=torch.bool, device="mlu"), s)),
    "index_cpu_indices": (lambda: torch.arange(999, -1, -1),
                          lambda i: torch.arange(1000.0, device="mlu")[i]),
    "index_put_cpu_indices": (lambda: torch.arange(0, 1000, 2),
                              lambda i: torch.zeros(1000, device="mlu").index_put_((i,), torch.tensor(3.0))),
    "index_put_cpu_value": (lambda: torch.tensor(6.0),
                            lambda v: torch.zeros(1000, device="mlu").index_put_(
                                (torch.arange(0, 1000, 3, device="mlu"),), v)),
    "foreach_cpu_scalar_tensor": (lambda: torch.tensor(2.0),
                                  lambda s: torch._foreach_mul([torch.ones(1000, device="mlu")], s)[0]),
    "copy_from_pageable": (lambda: torch.arange(1000.0),
                           lambda h: torch.empty(1000, device="mlu").copy_(h, non_blocking=True)),
    "tensor_factory": (lambda: torch.arange(1000.0), lambda h: torch.as_tensor(h, device="mlu") + 0),
}


@pytest.mark.parametrize("case", sorted(HOST_READS))
def test_host_memory_outlives_the_queued_task(case):
    make_host, op = HOST_READS[case]
    expected, result = _behind_a_slow_queue(make_host, op)
    torch.testing.assert_close(result, expected, rtol=0, atol=0)


def test_pinned_copy_of_a_freed_pinned_buffer_is_not_reused_early():
    # The pinned block goes back to the host cache only once the copy that reads it has run.
    torch.mlu._sleep(SLOW_QUEUE)
    dst = torch.empty(1 << 16, device="mlu")
    src = torch.full((1 << 16,), 3.0).pin_memory()
    dst.copy_(src, non_blocking=True)
    del src
    reuse = [torch.full((1 << 16,), -1.0).pin_memory() for _ in range(4)]
    assert (dst.cpu() == 3.0).all()
    del reuse
