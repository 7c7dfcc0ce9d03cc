"""The device-rule sweep (Note [Device checks]): every op_db op, each tensor operand moved in turn to the CPU and
to mlu:1.

For each op, the first samples of one dtype (float32 where the op takes it) run once with every tensor on
mlu:0 (the baseline; an op that fails there is skipped: test_opinfo covers it). Then, for each tensor leaf of
the sample (input, args, kwargs, lists included), the sample runs again with that one tensor on the CPU, and
again with it on mlu:1. Each run prints one JSON line:

  {"op", "sample", "slot", "target", "dim", "empty", "outcome", "message"}

(empty: some tensor of the sample has no elements, so a mixed call reads nothing.)

Each sample also runs with every tensor on the device that is not current (slot "all", target "mlu:1" while
mlu:0 is current, and "mlu:0" while mlu:1 is): its tensors are written by clones queued behind device work on
their device's stream, and the current device's stream is busy too. It must give the baseline's values, with
every tensor result on the tensors' device (outcome "wrong_device" otherwise), in its device's stream order (an
op run on the current device's stream reads its inputs before the clones have written them).

outcome is one of
  device_error   raised an exception whose message is about devices (CUDA's behaviour for a mixed call)
  other_error    raised something else (e.g. a garbage index read from freed host memory)
  same           ran, and gave the baseline's values
  different      ran, and gave other values (a silently wrong result)
  late_error     ran, but a device error surfaced at the following synchronize

A crash ends the process: the last line printed names the case that was running ("start" lines precede each
case). tests/test_device_checks.py runs this script and judges the lines against CUDA's rules.

  .venv/bin/python tests/opinfo/device_sweep.py [--ops add,cat] [--samples 2]
"""
import re
import sys

import torch

import torch_mlu  # noqa: F401
from op_sweep import emit, main, pick_dtype

from torch.utils._pytree import tree_flatten, tree_unflatten

_DEVICE_MESSAGE = re.compile(r"device|Device|mlu|cpu", re.IGNORECASE)


def to_cpu(value):
    leaves, spec = tree_flatten(value)
    return tree_unflatten([x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in leaves], spec)


def same(a, b):
    la, _ = tree_flatten(a)
    lb, _ = tree_flatten(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or x.layout != y.layout:
                return False
            if x.layout != torch.strided:  # sparse results (to_sparse): compared by their dense picture
                x, y = x.to_dense(), y.to_dense()
            if x.dtype == torch.complex32:  # nan_to_num has no ComplexHalf kernel
                x, y = x.to(torch.complex64), y.to(torch.complex64)
            if x.is_complex() or x.is_floating_point():
                if not torch.equal(torch.nan_to_num(x, nan=0.125), torch.nan_to_num(y, nan=0.125)):
                    return False
            elif not torch.equal(x, y):
                return False
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


def synchronize_all():
    for d in range(torch.mlu.device_count()):
        torch.mlu.synchronize(d)


def run(op, leaves, spec):
    sample_input, args, kwargs = tree_unflatten(leaves, spec)
    result = op(sample_input, *args, **kwargs)
    return to_cpu(result)


def deterministic(op, leaves, spec, first):
    try:
        second = run(op, leaves, spec)
        synchronize_all()
    except Exception:
        return False
    return same(first, second)


BUSY_CYCLES = 5_000_000  # 5 ms of device work ahead of the op under test


def result_devices(value):
    leaves, _ = tree_flatten(value)
    return {x.device for x in leaves if isinstance(x, torch.Tensor) and x.device.type == "mlu"}


def run_on_non_current_device(op, name, k, cpu_leaves, spec, baseline, check_values):
    for device, current in ((1, 0), (0, 1)):
        case = dict(op=name, sample=k, slot="all", target=f"mlu:{device}", dim=-1,
                    empty=any(x.numel() == 0 for x in cpu_leaves if isinstance(x, torch.Tensor)))
        emit(start=True, **case)
        outcome, message = None, ""
        settled = [x.to(f"mlu:{device}") if isinstance(x, torch.Tensor) else x for x in cpu_leaves]
        synchronize_all()
        try:
            torch.mlu.set_device(current)
            torch.mlu._sleep(BUSY_CYCLES)
            with torch.mlu.device(device):
                torch.mlu._sleep(BUSY_CYCLES)
                leaves = [x.clone() if isinstance(x, torch.Tensor) else x for x in settled]
            sample_input, args, kwargs = tree_unflatten(leaves, spec)
            result = op(sample_input, *args, **kwargs)
            devices = result_devices(result)
            values = to_cpu(result)
        except Exception as e:  # noqa: BLE001 - judged by the test
            outcome, message = "error", str(e).split("\n")[0][:300]
        finally:
            torch.mlu.set_device(0)
        try:
            synchronize_all()
        except Exception as e:  # noqa: BLE001
            if outcome is None:
                outcome, message = "late_error", str(e).split("\n")[0][:300]
        if outcome is None:
            if devices - {torch.device("mlu", device)}:
                outcome, message = "wrong_device", f"results on {sorted(map(str, devices))}"
            else:
                outcome = "same" if not check_values or same(baseline, values) else "different"
        emit(outcome=outcome, message=message, **case)


def sweep_op(op, samples_per_op):
    dtype = pick_dtype(op)
    if dtype is None:
        return
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples_per_op]
    except Exception:
        return
    for k, sample in enumerate(samples):
        cpu_leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
        slots = [i for i, x in enumerate(cpu_leaves) if isinstance(x, torch.Tensor)]
        if not slots:
            continue
        base_leaves = [x.to("mlu:0") if isinstance(x, torch.Tensor) else x for x in cpu_leaves]
        try:
            baseline = run(op, base_leaves, spec)
            synchronize_all()
        except Exception:
            try:
                synchronize_all()
            except Exception:
                pass
            continue
        check_values = deterministic(op, base_leaves, spec, baseline)
        name = op.full_name if hasattr(op, "full_name") else op.name
        run_on_non_current_device(op, name, k, cpu_leaves, spec, baseline, check_values)
        if len(slots) < 2:
            continue  # moving the only tensor mixes nothing
        for slot in slots:
            for target in ("cpu", "mlu:1"):
                leaves = list(base_leaves)
                leaves[slot] = cpu_leaves[slot].to(target)
                case = dict(op=name, sample=k, slot=slot,
                            target=target, dim=cpu_leaves[slot].dim(),
                            empty=any(cpu_leaves[i].numel() == 0 for i in slots))
                emit(start=True, **case)
                outcome, message = None, ""
                try:
                    result = run(op, leaves, spec)
                except Exception as e:  # noqa: BLE001 - every exception is judged below
                    message = str(e).split("\n")[0][:300]
                    outcome = "device_error" if _DEVICE_MESSAGE.search(message) else "other_error"
                try:
                    synchronize_all()
                except Exception as e:  # noqa: BLE001
                    if outcome is None:
                        outcome, message = "late_error", str(e).split("\n")[0][:300]
                if outcome is None:
                    outcome = "same" if not check_values or same(baseline, result) else "different"
                emit(outcome=outcome, message=message, **case)



if __name__ == "__main__":
    sys.exit(main(__doc__.splitlines()[0], sweep_op, default_samples=1))
