"""What `import torch_mlu` (or autoload) registers."""
import torch
import torch.nn as nn


def test_backend_name_and_module():
    assert torch._C._get_privateuse1_backend_name() == "mlu"
    assert torch.mlu.__name__ == "torch_mlu.mlu"
    assert torch.device("mlu:1").type == "mlu"


def test_generated_tensor_module_and_storage_methods():
    x = torch.arange(4.0)
    y = x.mlu()
    assert y.is_mlu and not x.is_mlu
    assert y.device == torch.device("mlu", 0)
    assert x.mlu(1).device == torch.device("mlu", 1)
    m = nn.Linear(3, 2).mlu()
    assert all(p.is_mlu for p in m.parameters())
    s = x.untyped_storage().mlu()
    assert s.is_mlu and s.device.type == "mlu"
    assert s.cpu().tolist() == x.untyped_storage().tolist()


def test_module_mlu_on_parameters_and_grads():
    m = nn.Linear(3, 2)
    m.weight.grad = torch.ones_like(m.weight)
    m.mlu()
    assert m.weight.is_mlu and m.weight.grad.is_mlu
    assert torch.equal(m.weight.grad.cpu(), torch.ones(2, 3))


def test_autoload_registers_mlu(python):
    result = python("import torch; print(torch.mlu.is_available(), torch.ones(2, device='mlu').device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "mlu:0"]


def test_autoload_can_be_disabled(python):
    result = python(
        "import torch; print(hasattr(torch, 'mlu'))", env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_reimport_is_harmless(python):
    result = python(
        """
        import importlib, torch, torch_mlu
        torch_mlu._register_backend()
        importlib.reload(torch_mlu)
        print(torch.ones(1, device="mlu").is_mlu)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_importing_torch_mlu_before_torch(python):
    result = python("import torch_mlu, torch; print(torch.ones(1, device='mlu').device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mlu:0"
