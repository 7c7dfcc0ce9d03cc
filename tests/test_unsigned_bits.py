"""uint16, uint32 and uint64 (PyTorch's barely supported unsigned types) on mlu: the ops that move bits unchanged
(fill_ with the CPU's conversion of the value, copies between equal dtypes within mlu and to and from the CPU) run
natively and equal the CPU's, values past the signed range included (csrc/aten/KernelArgs.h, bits_dtype);
converting copies are refused with a clear error (tests/test_misuse.py), other ops do what the CPU
does. flash attention's rng_state is a uint64 tensor made this way (tests/test_varlen_attention.py)."""
import pytest
import torch

UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_fill_and_copies_move_the_bits(native_oracle, dtype):
    top = torch.iinfo(dtype).max

    def run(device):
        filled = torch.full((3, 5), top, dtype=dtype, device=device)
        zeros = torch.zeros(4, dtype=dtype, device=device)
        values = torch.tensor([0, 1, top // 2 + 1, top], dtype=dtype).to(device)
        strided = torch.empty(4, 2, dtype=dtype, device=device)[:, 0]
        strided.copy_(values)
        return filled, zeros, values, strided, filled.t().contiguous()

    native_oracle(run)
