"""Sharing an mlu storage between processes shares it in place: no address ever changes (issue 61, case 3).

Every storage-sharing path (Queue.put of a tensor, of a state_dict, share_memory_(), storage._share_mlu_, a
view with a storage offset, memory of expandable segments) must leave data_ptr() as it was, so that a graph
captured before the sharing still reads and writes the shared memory when it replays (and never the memory of
tensors allocated afterwards), a DLPack alias keeps aliasing, and the receiving process sees the data, the
sender's later writes (a replay's included), and its own writes show in the sender. See Note [Sharing mlu
storages between processes] in csrc/core/MLUStorageSharing.h and Note [Shareable device memory] in
runtime/src/ipc.cpp.
"""
import os
import warnings

import pytest
import torch
import torch.multiprocessing as mp

import mp_workers
import torch_mlu
from torch_mlu.mlu import memory

# Note [Host-access trap]: shared memory would be a second, untrapped way into device memory, so the runtime
# refuses to share (tests/test_host_trap.py checks the refusal); these run in the untrapped pass.
pytestmark = pytest.mark.untrapped

TIMEOUT = 60
PATHS = ["tensor", "state_dict", "share_memory", "storage", "view", "expandable"]


def set_settings(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        memory._set_allocator_settings(text)


@pytest.fixture
def allocator(request):
    """Expandable segments on for the "expandable" path (and a stream of the test's own), else as they are."""
    if request.param != "expandable":
        yield request.param
        return
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    set_settings("expandable_segments:True")
    try:
        with torch.mlu.stream(torch.mlu.Stream()):
            yield request.param
    finally:
        torch.mlu.synchronize()
        torch.mlu.empty_cache()
        on = "expandable_segments:True" in os.environ.get("PYTORCH_MLU_ALLOC_CONF", "")
        set_settings(f"expandable_segments:{on}")


def make(path):
    """(what is sent, the sender's tensors the receiver gets, in order)."""
    if path == "state_dict":
        model = torch.nn.Linear(4, 3).to("mlu")
        with torch.no_grad():
            model.weight.copy_(torch.arange(12.).view(3, 4))
            model.bias.copy_(torch.tensor([10., 20., 30.]))
        return model.state_dict(), [model.weight, model.bias]
    if path == "view":
        base = torch.arange(24., device="mlu")
        view = base[3:15].view(3, 4)  # storage offset 3
        return view, [view]
    x = torch.arange(16., device="mlu")
    if path == "storage":
        return x.untyped_storage(), [x]
    return x, [x]


@pytest.mark.parametrize("allocator", PATHS, indirect=True)
def test_sharing_moves_nothing(allocator):
    path = allocator
    payload, tensors = make(path)
    if path == "expandable":
        owner = [s for s in memory._snapshot()["segments"]
                 if s["address"] <= tensors[0].data_ptr() < s["address"] + s["total_size"]]
        assert len(owner) == 1 and owner[0]["is_expandable"]
    addresses = [t.data_ptr() for t in tensors]
    storage_addresses = [t.untyped_storage().data_ptr() for t in tensors]
    aliases = [torch.from_dlpack(t.detach()) for t in tensors]

    # A graph captured before the sharing reads and writes the tensors' memory.
    g = torch.mlu.MLUGraph()
    with torch.no_grad(), torch.mlu.graph(g):
        doubled = [t * 2 for t in tensors]
        for t in tensors:
            t.add_(1)

    if path == "share_memory":
        for t in tensors:
            assert t.share_memory_() is t
    if path == "storage":
        device, fd, nbytes, offset = tensors[0].untyped_storage()._share_mlu_()
        assert device == 0 and fd >= 0 and nbytes == tensors[0].untyped_storage().nbytes() and offset >= 0
    assert [t.data_ptr() for t in tensors] == addresses

    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=mp_workers.in_place_worker, args=(inbox, outbox))
    process.start()
    try:
        inbox.put(payload)
        arrived = outbox.get(timeout=TIMEOUT)
        # Nothing moved: tensors, storages, DLPack aliases.
        assert [t.data_ptr() for t in tensors] == addresses
        assert [t.untyped_storage().data_ptr() for t in tensors] == storage_addresses
        assert [a.data_ptr() for a in aliases] == addresses
        expected_offset = 3 if path == "view" else 0
        assert arrived == [(expected_offset, t.cpu().tolist()) for t in tensors]

        # Memory allocated now, of the same sizes, must not be what the graph reads and writes.
        bystanders = [torch.full((t.untyped_storage().nbytes() // 4,), 7.0, device="mlu") for t in tensors]
        before = [t.cpu() for t in tensors]
        g.replay()
        torch.mlu.synchronize()
        for t, d, b, old in zip(tensors, doubled, bystanders, before):
            assert torch.equal(d.cpu(), old * 2)
            assert torch.equal(t.cpu(), old + 1)
            assert b.cpu().eq(7.0).all(), "the replay wrote memory that belongs to another tensor"

        # The receiver sees the replay's writes...
        inbox.put("read")
        assert outbox.get(timeout=TIMEOUT) == [t.cpu().tolist() for t in tensors]
        # ...and the sender (its tensors, its DLPack aliases, its graph) sees the receiver's.
        inbox.put("write")
        assert outbox.get(timeout=TIMEOUT) == "written"
        for t, a in zip(tensors, aliases):
            assert t.cpu().eq(-5.0).all() and a.cpu().eq(-5.0).all()
        g.replay()
        torch.mlu.synchronize()
        for t, d in zip(tensors, doubled):
            assert d.cpu().eq(-10.0).all() and t.cpu().eq(-4.0).all()
        # A DLPack alias still writes the shared memory.
        with torch.no_grad():
            aliases[0].fill_(9.0)
        torch.mlu.synchronize()
        inbox.put("read")
        assert outbox.get(timeout=TIMEOUT)[0] == tensors[0].cpu().tolist()
        assert tensors[0].cpu().eq(9.0).all()
    finally:
        inbox.put("bye")  # also after a failed check, so that the child does not wait for the timeout
        process.join(TIMEOUT)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0, f"the child exited with {process.exitcode}"
    assert [t.data_ptr() for t in tensors] == addresses
    del g, doubled, aliases, tensors, payload
    torch.mlu.ipc_collect()


def test_record_stream_still_reaches_the_allocator_after_sharing():
    """A shared storage's DataPtr wraps the allocator's; record_stream must still delay the block's reuse
    (tests/test_allocator.py::test_record_stream_delays_reuse_until_the_other_stream_passes, after a share)."""
    side = torch.Stream(device="mlu")
    default = torch.accelerator.current_stream()
    x = torch.full((1 << 16,), 1.0, device="mlu")
    ptr = x.data_ptr()
    x.untyped_storage()._share_mlu_()  # synchronises the device: before the gate closes
    assert x.data_ptr() == ptr
    result = torch.empty(1 << 16, device="mlu")
    torch.accelerator.set_stream(side)
    try:
        side.wait_stream(default)
        gate = torch_mlu._C._StreamGate()  # holds the side stream
        result.copy_(x)                     # pending read of x on the side stream
    finally:
        torch.accelerator.set_stream(default)
    x.record_stream(side)
    del x  # nobody else has it open: back to the allocator, which waits for the side stream
    y = torch.empty(1 << 16, device="mlu")
    assert y.data_ptr() != ptr
    y.fill_(-5.0)
    gate.open()
    torch.mlu.synchronize()
    assert torch.equal(result.cpu(), torch.ones(1 << 16))
    del y
    z = torch.empty(1 << 16, device="mlu")
    assert z.data_ptr() == ptr
