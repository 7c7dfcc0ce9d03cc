"""Smoke test of an installed torch_mlu wheel, run by tools/test_wheel.sh in a fresh
virtual environment outside the source tree: what a new user does first.

Plain ``import torch`` must bring ``mlu`` in through PyTorch's backend autoload
(nobody imports torch_mlu), from the installed copy; then ``torch.mlu``'s
basics, the build information, a few training steps on mlu matching the CPU,
and the environment report. Exits non-zero with the reason on any failure.
"""
import os
import subprocess
import sys

import torch

assert hasattr(torch, "mlu"), "plain `import torch` did not autoload torch_mlu (entry point torch.backends)"
import torch_mlu  # noqa: E402  (already imported by the autoload: this only binds the name)

source_tree = os.environ.get("TORCH_MLU_SOURCE_TREE")
installed_at = os.path.dirname(torch_mlu.__file__)
assert source_tree and not installed_at.startswith(os.path.abspath(source_tree)), (
    f"torch_mlu was imported from {installed_at}, not from the installed wheel")
assert installed_at.startswith(sys.prefix), f"torch_mlu at {installed_at} is not inside the venv {sys.prefix}"

# torch.mlu basics.
assert torch.mlu.is_available() and torch.mlu.device_count() >= 1
torch.mlu.set_device(0)
assert torch.mlu.current_device() == 0
x = torch.arange(6, dtype=torch.float32, device="mlu").reshape(2, 3)
assert x.is_mlu and x.device == torch.device("mlu", 0)
assert torch.equal((x * 2).cpu(), torch.arange(6, dtype=torch.float32).reshape(2, 3) * 2)
stream = torch.mlu.Stream()
with torch.mlu.stream(stream):
    y = x + 1
event = stream.record_event()
event.synchronize()
torch.mlu.synchronize()
assert torch.mlu.memory_allocated() > 0
assert torch.version.mlu == torch_mlu.__version__
assert torch_mlu.version.torch_version.split("+")[0] == str(torch.__version__).split("+")[0]

# A few training steps on mlu, compared with the same steps on the CPU.
def train(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    data = torch.randn(64, 8, generator=gen)
    target = data.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(20):
        loss = torch.nn.functional.mse_loss(model(data.to(device)), target.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


mlu_losses, cpu_losses = train("mlu"), train("cpu")
assert mlu_losses[-1] < mlu_losses[0] / 2, f"training on mlu did not learn: {mlu_losses}"
torch.testing.assert_close(torch.tensor(mlu_losses), torch.tensor(cpu_losses), rtol=1e-4, atol=1e-5)
assert not torch_mlu.fallback_report(), f"ops fell back to the CPU: {torch_mlu.fallback_report()}"

# The environment report runs as a module of the installed package.
report = subprocess.run([sys.executable, "-m", "torch_mlu.utils.collect_env"], capture_output=True, text=True,
                        check=True).stdout
assert f"torch_mlu: {torch_mlu.__version__}" in report and "active_isa" in report, report
print(f"wheel smoke test passed: torch_mlu {torch_mlu.__version__} from {installed_at}, "
      f"losses {mlu_losses[0]:.3f} -> {mlu_losses[-1]:.3f}")
