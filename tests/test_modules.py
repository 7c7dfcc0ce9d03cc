"""PyTorch's module_db (torch.testing._internal.common_modules) on mlu against the CPU, float32.

For each ModuleInfo (all of module_db: 114 modules), every ModuleInput, in training and eval mode: the module is
built on the CPU, a copy moved to mlu, both run the same forward inputs and the backward of the same output
gradients; outputs, input gradients, parameter gradients and buffers must agree (PyTorch's float32 tolerances,
loosened for long sums), and no op may reach the CPU fallback, except for the modules listed in
STILL_FALLING_BACK (strict: a listed module that runs natively fails the test until it is removed from the list).
"""
import copy

import pytest
import torch
from torch.testing._internal.common_modules import module_db

import torch_mlu  # noqa: F401  (registers mlu)


# module -> why it still sends ops to the CPU (the results are checked either way).
STILL_FALLING_BACK = {}

INFOS = list(module_db)


def fresh(x, device):
    """A copy of the inputs x as new leaves on device (deepcopy refuses non-leaf tensors)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(device, copy=True).requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(fresh(e, device) for e in x)
    if isinstance(x, dict):
        return {k: fresh(v, device) for k, v in x.items()}
    return x


def leaves(x):
    if isinstance(x, torch.Tensor):
        return [x] if x.requires_grad else []
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in leaves(e)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in leaves(v)]
    return []


def outputs(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in outputs(e)]
    return []


def run(module, args, kwargs, seed):
    """The outputs, input gradients, parameter gradients and buffers of a forward and a backward of module."""
    out = outputs(module(*args, **kwargs))
    differentiable = [o for o in out if o.requires_grad]
    if differentiable:
        gen = torch.Generator().manual_seed(seed)
        grads = [torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device) for o in differentiable]
        torch.autograd.backward(differentiable, grads)
    return out, [t.grad for t in leaves((args, kwargs))], [p.grad for p in module.parameters()], \
        list(module.buffers())


def labels(result, module):
    """What each of run's results is, in the order native_oracle numbers them."""
    kinds = zip(("output", "input grad", "param grad"), result)
    return [f"{kind} {j}" for kind, part in kinds for j in range(len(part))] + \
        [f"buffer {name}" for name, _ in module.named_buffers()]


def close(what, names):
    """native_oracle's compare: PyTorch's float32 tolerances, the absolute one loosened for long sums."""
    def compare(i, actual, expected):
        # Long reductions (batch norm over many positions, attention) reorder float sums: a few ulps of the
        # largest magnitude.
        finite = expected.abs().nan_to_num(0, posinf=0)
        atol = 1e-5 + 4e-6 * finite.max().item() if expected.numel() else 1e-5
        torch.testing.assert_close(actual, expected, rtol=1.3e-5, atol=atol, equal_nan=True,
                                   msg=lambda m: f"{what}: {names[i]}\n{m}")
    return compare


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("info", INFOS, ids=[m.name for m in INFOS])
def test_module_matches_cpu(info, training, native_oracle):
    name = info.module_cls.__name__
    inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=True, training=training)
    fell_back = set()
    for i, module_input in enumerate(inputs):
        if module_input.forward_input is None:
            continue
        c_args, c_kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
        args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
        torch.manual_seed(i)
        module = info.module_cls(*c_args, **c_kwargs).to(torch.float32)
        module.train(training)
        device_module = copy.deepcopy(module)
        names = []

        def on(device, module=module, device_module=device_module):
            if device == "mlu":
                if info.is_lazy:  # materialised by the CPU forward: copy the parameters it picked
                    device_module = copy.deepcopy(module)
                    device_module.zero_grad(set_to_none=True)
                module = device_module.to("mlu")
            result = run(module, fresh(args, device), fresh(kwargs, device), seed=i)
            if device == "mlu":
                torch.mlu.synchronize()
            names[:] = labels(result, module)
            return result

        what = f"{name} input {i} ({module_input.desc})"
        native_oracle(on, compare=close(what, names), fell_back=fell_back, msg=what)
    if name in STILL_FALLING_BACK:
        assert fell_back, f"{name} runs natively now: remove it from STILL_FALLING_BACK"
    else:
        assert not fell_back, f"{name} used the CPU fallback for {sorted(fell_back)}"


def test_to_mlu_keeps_parameter_identity():
    """Module.to() moves parameters in place (`param.data = moved`) as it does between cpu and cuda: tied
    weights stay one Parameter, references held elsewhere (an optimizer's) follow, gradients move along."""
    emb = torch.nn.Embedding(7, 4)
    head = torch.nn.Linear(4, 7, bias=False)
    head.weight = emb.weight
    model = torch.nn.ModuleDict({"emb": emb, "head": head})
    held = emb.weight
    held.grad = torch.ones_like(held)
    assert torch._has_compatible_shallow_copy_type(held, held.to("mlu"))
    model.to("mlu")
    assert model["emb"].weight is model["head"].weight is held
    assert held.device.type == "mlu" and held.grad.device.type == "mlu"
    assert sum(p.numel() for p in model.parameters()) == 28
    model.to("cpu")
    assert held.device.type == "cpu" and model["head"].weight is held
