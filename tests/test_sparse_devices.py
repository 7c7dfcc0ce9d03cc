"""Sparse tensors on an mlu device that is not the current one (issue 61, case 4).

SparseTensorImpl's constructor allocates placeholder indices and values on the *current* device of the
device type, so every sparse registration must run under a device guard, as CUDA's generated wrappers do
(tools/gen_sparse_generic_ops.py, csrc/aten/sparse/SparseOps.cpp). Each path runs on the other device and
on the current one; the results agree, sit on the device asked for, and the current device is unchanged.
Indices and values on two devices get CUDA's generated device check instead of an internal assert.
"""
import io
import re

import pytest
import torch

import torch_mlu  # noqa: F401

pytestmark = pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")

I = torch.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])  # (0, 2) twice: uncoalesced
V = torch.tensor([3., 4., 5., 6., 7.])
DENSE = torch.tensor([[0., 1., 0.], [2., 0., 3.], [0., 0., 4.]])


def cpu_coo():
    return torch.sparse_coo_tensor(I, V, (3, 3))


def saved_coo():
    buffer = io.BytesIO()
    torch.save(cpu_coo(), buffer)
    return buffer.getvalue()


PATHS = {
    "to": lambda d: cpu_coo().to(d),
    "to_sparse": lambda d: DENSE.to(d).to_sparse(),
    "to_sparse sparse_dim": lambda d: DENSE.to(d).to_sparse(1),
    "sparse_coo_tensor": lambda d: torch.sparse_coo_tensor(I.to(d), V.to(d), (3, 3)),
    "sparse_coo_tensor inferred size": lambda d: torch.sparse_coo_tensor(I.to(d), V.to(d)),
    "sparse_coo_tensor device=": lambda d: torch.sparse_coo_tensor(I, V, (3, 3), device=d),
    "load map_location": lambda d: torch.load(io.BytesIO(saved_coo()), map_location=d),
    # What runs on such a tensor afterwards builds sparse tensors too.
    "coalesce": lambda d: cpu_coo().to(d).coalesce(),
    "add": lambda d: cpu_coo().to(d) + cpu_coo().to(d),
    "mul scalar": lambda d: cpu_coo().to(d) * 2,
    "clone": lambda d: cpu_coo().to(d).clone(),
    "empty sparse": lambda d: torch.empty((2, 3), layout=torch.sparse_coo, device=d),
    "zeros sparse": lambda d: torch.zeros((2, 3), layout=torch.sparse_coo, device=d),
}


def check_placed(t, device):
    assert t.device == device, f"result on {t.device}, asked for {device}"
    assert t._indices().device == device, f"indices on {t._indices().device}"
    assert t._values().device == device, f"values on {t._values().device}"


@pytest.mark.parametrize("current,target", [(0, 1), (1, 0)])
@pytest.mark.parametrize("path", PATHS)
def test_sparse_path_on_a_device_that_is_not_current(path, current, target):
    fn = PATHS[path]
    with torch.mlu.device(current):
        reference = fn(torch.device("mlu", current))  # the same call on the current device
        got = fn(torch.device("mlu", target))
        assert torch.mlu.current_device() == current, "the call changed the current device"
    check_placed(reference, torch.device("mlu", current))
    check_placed(got, torch.device("mlu", target))
    assert got.is_coalesced() == reference.is_coalesced()
    torch.testing.assert_close(got._indices().cpu(), reference._indices().cpu())
    torch.testing.assert_close(got._values().cpu(), reference._values().cpu())
    torch.testing.assert_close(got.to_dense().cpu(), reference.to_dense().cpu())


@pytest.mark.parametrize("current", [0, 1])
@pytest.mark.parametrize("indices_device,values_device", [(1, 0), (0, 1)])
@pytest.mark.parametrize("with_size", [True, False])
def test_indices_and_values_on_two_devices_is_cudas_error(indices_device, values_device, current, with_size):
    # CUDA: the generated wrapper of _sparse_coo_tensor_with_dims_and_tensors checks indices, then values
    # (check_and_update_common_device), before SparseTensorImpl's internal asserts could fire.
    indices, values = I.to(f"mlu:{indices_device}"), V.to(f"mlu:{values_device}")
    expected = (f"Expected all tensors to be on the same device, but got values is on mlu:{values_device}, "
                f"different from other tensors on mlu:{indices_device} (when checking argument in method "
                f"wrapper_SparsePrivateUse1___sparse_coo_tensor_with_dims_and_tensors)")
    args = (indices, values, (3, 3)) if with_size else (indices, values)
    with torch.mlu.device(current):
        with pytest.raises(RuntimeError, match=re.escape(expected)) as error:
            torch.sparse_coo_tensor(*args)
    assert "INTERNAL ASSERT" not in str(error.value)


def test_mismatch_under_invariant_checks_is_the_same_error():
    indices, values = I.to("mlu:1"), V.to("mlu:0")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as error:
        torch.sparse_coo_tensor(indices, values, (3, 3), check_invariants=True)
    assert "INTERNAL ASSERT" not in str(error.value)
