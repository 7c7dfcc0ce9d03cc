"""Worker functions of tests/test_multiprocessing.py, run in spawned or forkserver children.

Each takes the queues it talks over; a failed check raises in the child, whose non-zero exit code the test
asserts on, and results travel back over the queue for the parent to compare.
"""
import torch

import torch_mlu  # noqa: F401


def echo_worker(inbox, outbox):
    """Receives tensors, reports what arrived, waits for the parent's update, reports it, writes back."""
    tensors = inbox.get()
    outbox.put([(t.device.type, t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), type(t).__name__,
                 t.cpu().tolist()) for t in tensors])
    assert inbox.get() == "updated"
    outbox.put([t.cpu().tolist() for t in tensors])
    assert inbox.get() == "write"
    tensors[0].mul_(-1)  # written in place here, seen there
    torch.mlu.synchronize()
    outbox.put("written")
    assert inbox.get() == "bye"


def producer_worker(outbox, inbox):
    """Makes a tensor, sends it, exits once the parent has it; its memory must outlive the process."""
    x = torch.arange(1000., device="mlu") * 3
    torch.mlu.synchronize()
    outbox.put(x)
    assert inbox.get() == "received"


def holder_worker(inbox, outbox):
    """Keeps a received tensor while the parent frees and reuses its own memory; reports what it reads."""
    x = inbox.get()
    outbox.put("holding")
    assert inbox.get() == "reused"
    outbox.put((x.cpu().tolist(), torch.mlu.mem_get_info()[0]))
    assert inbox.get() == "bye"


def event_worker(inbox, outbox):
    event, x = inbox.get()
    assert isinstance(event, torch.mlu.Event)
    assert event.query()
    torch.mlu.current_stream().wait_event(event)
    event.synchronize()
    outbox.put(x.sum().item())


def hogwild_worker(rank, model, steps, outbox):
    """Trains the shared model on its own slice of the data, updating the shared parameters in place."""
    torch.manual_seed(rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(256, 4, device="mlu")
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], device="mlu")
    for _ in range(steps):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    torch.mlu.synchronize()
    outbox.put(rank)


def _received_tensors(payload):
    """The tensors of what tests/test_ipc_in_place.py sends: a tensor, a state_dict, or a storage (as float32)."""
    if isinstance(payload, dict):
        return list(payload.values())
    if isinstance(payload, torch.UntypedStorage):
        return [torch.empty(0, device=payload.device).set_(payload)]
    return [payload]


def in_place_worker(inbox, outbox):
    """Reports what arrived (offset, values); then reads or writes on request, until "bye"."""
    tensors = _received_tensors(inbox.get())
    outbox.put([(t.storage_offset(), t.cpu().tolist()) for t in tensors])
    while True:
        request = inbox.get()
        if request == "read":
            outbox.put([t.cpu().tolist() for t in tensors])
        elif request == "write":
            with torch.no_grad():
                for t in tensors:
                    t.fill_(-5.0)
            torch.mlu.synchronize()
            outbox.put("written")
        else:
            assert request == "bye", request
            return
