"""mlu tensors, storages and events shared between processes with torch.multiprocessing (spawn, forkserver).

Sharing is zero copy and in place (tests/test_ipc_in_place.py checks that no address changes): the receiver sees
the producer's later in-place updates and the producer the receiver's; views keep offsets and strides; a producer
may exit first; the producer's caching allocator never hands out memory another process still maps; a shared
block counts once, in the process that made it; Hogwild-style training on one shared model works. See
torch_mlu/mlu/reductions.py.
"""
import pytest
import torch
import torch.multiprocessing as mp

import mp_workers
import torch_mlu  # noqa: F401

# Note [Host-access trap]: shared memory would be a second, untrapped way into device memory, so the runtime
# refuses to share (tests/test_host_trap.py checks the refusal); these run in the untrapped pass.
pytestmark = pytest.mark.untrapped

TIMEOUT = 60


def start(method, target, *args):
    ctx = mp.get_context(method)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=target, args=(inbox, outbox) + args)
    process.start()
    return process, inbox, outbox


def finish(process):
    process.join(TIMEOUT)
    assert process.exitcode == 0, f"the child exited with {process.exitcode}"


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_tensors_travel_without_copy_and_updates_show_both_ways(method):
    base = torch.arange(12., device="mlu")
    view = base[2:].view(2, 5).t()  # offset 2, strides (1, 5)
    param = torch.nn.Parameter(torch.ones(3, device="mlu"))
    half = torch.full((4,), 2.5, device="mlu", dtype=torch.bfloat16)
    process, inbox, outbox = start(method, mp_workers.echo_worker)
    inbox.put([base, view, param, half])
    arrived = outbox.get(timeout=TIMEOUT)
    for (device, dtype, shape, stride, offset, kind, values), sent in zip(arrived, [base, view, param, half]):
        assert (device, dtype, shape, stride, offset) == ("mlu", sent.dtype, tuple(sent.shape), sent.stride(),
                                                          sent.storage_offset())
        assert kind == type(sent).__name__ and values == sent.tolist()
    with torch.no_grad():
        base.add_(100)
    torch.mlu.synchronize()
    inbox.put("updated")
    seen = outbox.get(timeout=TIMEOUT)
    assert seen[0] == base.tolist() and seen[1] == view.tolist()  # the child sees the parent's update
    inbox.put("write")
    assert outbox.get(timeout=TIMEOUT) == "written"
    assert base.tolist() == [-(100 + i) for i in range(12)]  # the parent sees the child's write
    inbox.put("bye")
    finish(process)


def test_producer_may_exit_first():
    ctx = mp.get_context("spawn")
    outbox, inbox = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=mp_workers.producer_worker, args=(outbox, inbox))
    process.start()
    x = outbox.get(timeout=TIMEOUT)
    inbox.put("received")
    finish(process)  # the producer is gone; its memory is not
    assert x.device.type == "mlu" and x.tolist() == [3.0 * i for i in range(1000)]
    x.add_(1)
    assert x[10].item() == 31.0


def test_shared_memory_is_never_reused_while_mapped_and_counted_once():
    torch.mlu.empty_cache()
    free_before = torch.mlu.mem_get_info()[0]
    allocated_before = torch.mlu.memory_allocated()
    x = torch.full((1 << 18,), 7.0, device="mlu")  # 1 MiB
    address = x.data_ptr()
    process, inbox, outbox = start("spawn", mp_workers.holder_worker)
    inbox.put(x)
    assert outbox.get(timeout=TIMEOUT) == "holding"
    del x
    torch.mlu.empty_cache()
    # Shared in place (Note [Sharing mlu storages between processes]): while the child maps the block, it stays
    # allocated here, as CUDA keeps a block its consumers use...
    assert torch.mlu.memory_allocated() == allocated_before + (1 << 20)
    # ...and memory allocated and written here now is not the child's.
    fresh = [torch.full((1 << 18,), -1.0, device="mlu") for _ in range(4)]
    assert address not in [f.data_ptr() for f in fresh]
    torch.mlu.synchronize()
    inbox.put("reused")
    values, child_free = outbox.get(timeout=TIMEOUT)
    assert set(values) == {7.0}
    # The child maps the block without it counting against the child's device memory (it allocated nothing).
    assert child_free == torch.mlu.mem_get_info()[1]
    inbox.put("bye")
    finish(process)
    del fresh
    torch.mlu.ipc_collect()  # the child is gone: the block is freed, and counted nowhere any more
    assert torch.mlu.memory_allocated() == allocated_before
    torch.mlu.empty_cache()
    assert torch.mlu.mem_get_info()[0] == free_before


def test_events_arrive_complete():
    x = torch.ones(1000, device="mlu")
    for _ in range(3):
        x = x * 2
    event = torch.mlu.Event(interprocess=True)
    event.record()
    process, inbox, outbox = start("spawn", mp_workers.event_worker)
    inbox.put((event, x))
    assert outbox.get(timeout=TIMEOUT) == 8000.0
    finish(process)


def test_storages_and_typed_storages_travel():
    process, inbox, outbox = start("spawn", mp_workers.echo_worker)
    t = torch.arange(5., device="mlu")
    inbox.put([torch.empty(0, device="mlu").set_(t.untyped_storage()).view(torch.float32)])
    assert outbox.get(timeout=TIMEOUT)[0][-1] == t.tolist()
    inbox.put("updated")
    outbox.get(timeout=TIMEOUT)
    inbox.put("write")
    assert outbox.get(timeout=TIMEOUT) == "written"
    assert t.tolist() == [-0.0, -1.0, -2.0, -3.0, -4.0]
    inbox.put("bye")
    finish(process)


def test_share_and_open_in_process():
    t = torch.arange(4., device="mlu")
    storage = t.untyped_storage()
    address = storage.data_ptr()
    device, fd, nbytes, offset = storage._share_mlu_()
    assert (device, nbytes) == (0, 16) and fd >= 0 and offset >= 0
    assert storage.data_ptr() == address == t.data_ptr()  # shared in place: nothing moved
    again = storage._share_mlu_()
    assert again == (device, fd, nbytes, offset)  # sharing twice names the same bytes
    opened = torch.UntypedStorage._new_shared_mlu(device, fd, nbytes, offset)
    assert opened.device == torch.device("mlu", 0) and opened.data_ptr() != storage.data_ptr()
    view = torch.empty(0, device="mlu").set_(opened).view(torch.float32)
    view[1] = 42
    torch.mlu.synchronize()
    assert t.tolist() == [0.0, 42.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="not resizable"):
        storage.resize_(32)  # shared memory keeps its size, as a shared CPU storage does
    with pytest.raises(RuntimeError, match="empty storage"):
        torch.UntypedStorage(0, device="mlu")._share_mlu_()
    del view, opened
    torch.mlu.ipc_collect()


def test_empty_and_sparse_tensors_travel():
    process, inbox, outbox = start("spawn", mp_workers.echo_worker)
    empty = torch.empty(0, 3, device="mlu")
    dense_of_sparse = torch.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (4,), device="mlu").to_dense()
    inbox.put([empty, dense_of_sparse])
    arrived = outbox.get(timeout=TIMEOUT)
    assert arrived[0][2] == (0, 3) and arrived[1][-1] == [1.0, 0.0, 2.0, 0.0]
    inbox.put("updated")
    outbox.get(timeout=TIMEOUT)
    inbox.put("write")
    outbox.get(timeout=TIMEOUT)
    inbox.put("bye")
    finish(process)


def test_hogwild_training_on_one_shared_model():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1, bias=False).to("mlu")
    model.share_memory()
    x = torch.randn(512, 4, device="mlu")
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], device="mlu")
    loss_before = torch.nn.functional.mse_loss(model(x), y).item()
    ctx = mp.get_context("spawn")
    outbox = ctx.Queue()
    workers = [ctx.Process(target=mp_workers.hogwild_worker, args=(rank, model, 40, outbox)) for rank in range(2)]
    for w in workers:
        w.start()
    assert sorted(outbox.get(timeout=TIMEOUT) for _ in workers) == [0, 1]
    for w in workers:
        finish(w)
    loss_after = torch.nn.functional.mse_loss(model(x), y).item()
    assert loss_after < 0.05 * loss_before, (loss_before, loss_after)  # the parent's model learned
