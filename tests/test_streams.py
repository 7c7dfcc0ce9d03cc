"""torch.mlu.Stream / Event / stream contexts, mirroring torch.cuda's."""
import pytest
import torch

import torch_mlu


def test_stream_creation_and_priorities():
    s = torch.mlu.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device("mlu", 0)
    assert s.stream_id != 0  # pool streams, never the default one
    assert s.priority == 0
    least, greatest = torch.mlu.Stream.priority_range()
    assert (least, greatest) == (0, -1)
    assert torch.mlu.Stream(priority=-1).priority == greatest
    assert torch.mlu.Stream(device=1).device_index == 1
    assert torch.mlu.Stream(device="mlu:1").device_index == 1
    with pytest.raises(RuntimeError, match="mlu:9 does not exist"):
        torch.mlu.Stream(device=9)


def test_current_default_and_set_stream():
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    assert torch.mlu.default_stream(1).device_index == 1 and torch.mlu.default_stream(1).stream_id == 0
    s = torch.mlu.Stream()
    torch.mlu.set_stream(s)
    try:
        assert torch.mlu.current_stream() == s
        assert torch.accelerator.current_stream() == s
    finally:
        torch.mlu.set_stream(torch.mlu.default_stream())
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    torch.mlu.set_stream(None)  # a no-op, as in torch.cuda


def test_stream_context_switches_stream_and_device():
    s0, s1 = torch.mlu.Stream(), torch.mlu.Stream(device=1)
    with torch.mlu.stream(s0):
        assert torch.mlu.current_stream() == s0
        x = torch.ones(4, device="mlu")
    with torch.mlu.stream(s1):
        assert torch.mlu.current_device() == 1 and torch.mlu.current_stream() == s1
    assert torch.mlu.current_device() == 0
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    assert torch.mlu.current_stream(1) == torch.mlu.default_stream(1)
    with torch.mlu.stream(None):
        assert torch.mlu.current_stream() == torch.mlu.default_stream()
    torch.mlu.synchronize()
    assert torch.equal(x.cpu(), torch.ones(4))


def test_streams_overlap_and_wait_stream_orders():
    a, b = torch.mlu.Stream(), torch.mlu.Stream()
    with torch.mlu.stream(a):
        gate = torch_mlu._C._StreamGate()  # holds stream a
        x = torch.zeros(8, device="mlu")
        x.fill_(2.0)
    with torch.mlu.stream(b):
        y = torch.empty(8, device="mlu")
        y.fill_(1.0)
    done_b = b.record_event()
    done_b.synchronize()  # b runs although a is held: the streams overlap
    assert not a.query() and b.query()
    b.wait_stream(a)
    after = b.record_event()
    assert not after.query()  # b now waits for a
    gate.open()
    after.synchronize()
    assert torch.equal(x.cpu(), torch.full((8,), 2.0)) and torch.equal(y.cpu(), torch.ones(8))
    assert isinstance(done_b, torch.mlu.Event) and not isinstance(torch.Event(device="cpu"), torch.mlu.Event)


def test_event_record_wait_query_synchronize():
    s = torch.mlu.Stream()
    e = torch.mlu.Event()
    assert e.query()  # never recorded: complete
    with torch.mlu.stream(s):
        gate = torch_mlu._C._StreamGate()
        e.record()  # on the current stream, s
    assert not e.query()
    other = torch.mlu.Stream()
    e.wait(other)
    marker = other.record_event()
    assert not marker.query()
    gate.open()
    e.synchronize()
    marker.synchronize()
    assert e.query() and marker.query()
    s.synchronize()
    assert s.query()


def test_event_timing_and_misuse():
    start, end = torch.mlu.Event(enable_timing=True), torch.mlu.Event(enable_timing=True)
    start.record()
    torch.mlu._sleep(10_000_000)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 8.0
    plain = torch.mlu.Event()
    plain.record()
    plain.synchronize()
    with pytest.raises((ValueError, RuntimeError), match="enable_timing|timing enabled"):
        start.elapsed_time(plain)
    never = torch.mlu.Event(enable_timing=True)
    with pytest.raises((ValueError, RuntimeError), match="must be recorded"):
        start.elapsed_time(never)
    shareable = torch.mlu.Event(interprocess=True)  # every mlu event can be sent (test_multiprocessing.py)
    assert isinstance(shareable, torch.mlu.Event)


def test_generic_stream_and_event_work_too():
    s = torch.Stream(device="mlu")
    e = torch.Event(device="mlu")
    e.record(s)
    s.synchronize()
    assert e.query()
    torch.accelerator.synchronize()


def test_external_stream_wraps_a_queue():
    s = torch.mlu.Stream()
    ext = torch.mlu.ExternalStream(s.mlu_stream)
    assert ext.mlu_stream == s.mlu_stream and ext.stream_id != s.stream_id
    assert torch.mlu.ExternalStream(s.mlu_stream).stream_id == ext.stream_id  # registered once
    with torch.mlu.stream(s):
        gate = torch_mlu._C._StreamGate()  # holds the queue behind both streams
    marker = ext.record_event()
    assert not marker.query()  # the same queue: ordered after the gate
    gate.open()
    marker.synchronize()
    with pytest.raises(RuntimeError, match="belongs to mlu:0, not mlu:1"):
        torch.mlu.ExternalStream(s.mlu_stream, device=1)


def test_event_recorded_on_two_devices_is_an_error():
    e = torch.mlu.Event()
    e.record(torch.mlu.Stream(device=0))
    with pytest.raises(RuntimeError, match="does not match recording stream's device"):
        e.record(torch.mlu.Stream(device=1))


def test_backward_follows_the_forward_stream():
    """As on CUDA: backward ops run on the forward op's stream, and gradients are
    usable on the calling stream once backward() returns."""
    side = torch.mlu.Stream()
    x = torch.randn(64, 32, device="mlu", requires_grad=True)
    w = torch.randn(32, 16, device="mlu", requires_grad=True)
    side.wait_stream(torch.mlu.current_stream())
    with torch.mlu.stream(side):
        loss = (x @ w).tanh().sum()
    torch.mlu.current_stream().wait_stream(side)
    loss.backward()
    xc, wc = x.detach().cpu().requires_grad_(), w.detach().cpu().requires_grad_()
    (xc @ wc).tanh().sum().backward()
    torch.testing.assert_close(x.grad.cpu(), xc.grad)
    torch.testing.assert_close(w.grad.cpu(), wc.grad)


def test_external_queue_destroyed_by_its_owner():
    queue = torch_mlu._C._mlu_create_foreign_queue(0)
    ext = torch.mlu.ExternalStream(queue)
    with torch.mlu.stream(ext):
        x = torch.full((16,), 4.0, device="mlu")
    done = ext.record_event()
    torch_mlu._C._mlu_destroy_foreign_queue(queue)  # waits for the queue's work, then ends it
    done.synchronize()  # an event recorded before the destruction is complete, not a hang
    assert done.query()
    other = torch.mlu.Stream()
    done.wait(other)
    other.synchronize()
    with pytest.raises(RuntimeError, match="destroyed"):
        ext.synchronize()
    with pytest.raises(RuntimeError, match="destroyed"):
        ext.record_event()
    assert torch.equal(x.cpu(), torch.full((16,), 4.0))
    y = torch.ones(16, device="mlu")
    y.record_stream(ext)  # a use on the dead queue: nothing to wait for at free time
    del x, y
    torch.mlu.empty_cache()  # segments of the dead queue's stream are freed synchronously
