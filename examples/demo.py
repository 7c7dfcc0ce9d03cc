"""Demo: a small model moved to `mlu`, one forward and backward pass, checked against the CPU.

Run with `make demo`. The same model and data run on the CPU (the oracle) and
on the software MLU; outputs and gradients must agree. Most ops still reach
the device through the CPU fallback (native kernels come in later issues);
the fallback report at the end lists them.
"""
import warnings

import torch
import torch.nn as nn

import torch_mlu


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.body(x)


def run(device, model, x, target):
    model = model.to(device)
    out = model(x.to(device))
    loss = nn.functional.mse_loss(out, target.to(device))
    loss.backward()
    grads = [p.grad.cpu() for p in model.parameters()]
    return out.cpu(), loss.item(), grads


def main():
    warnings.simplefilter("ignore", UserWarning)  # the fallback warnings; see the report below
    print(f"torch {torch.__version__}, torch_mlu {torch_mlu.__version__}")
    print(f"mlu available: {torch.mlu.is_available()}, devices: {torch.mlu.device_count()}, "
          f"name: {torch.mlu.get_device_name(0)}")

    torch.manual_seed(0)
    reference = TinyNet()
    device_model = TinyNet()
    device_model.load_state_dict(reference.state_dict())
    x = torch.randn(8, 16)
    target = torch.randn(8, 4)

    cpu_out, cpu_loss, cpu_grads = run("cpu", reference, x, target)
    mlu_out, mlu_loss, mlu_grads = run("mlu", device_model, x, target)

    torch.testing.assert_close(mlu_out, cpu_out)
    torch.testing.assert_close(torch.tensor(mlu_loss), torch.tensor(cpu_loss))
    for g_mlu, g_cpu in zip(mlu_grads, cpu_grads):
        torch.testing.assert_close(g_mlu, g_cpu)
    print(f"loss on cpu {cpu_loss:.6f}, on mlu {mlu_loss:.6f}: outputs and gradients match")
    print(f"parameters live on: {next(device_model.parameters()).device}")

    report = torch_mlu.fallback_report()
    print(f"ops that ran through the CPU fallback ({len(report)}):")
    for name, count in sorted(report.items()):
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
