"""Device work is asynchronous: shown with events, never wall-clock asserts."""
import torch

import torch_mlu


def test_long_task_does_not_block_the_host_until_a_sync():
    x = torch.zeros(1 << 16, device="mlu")
    gate = torch_mlu._C._StreamGate()  # holds the current stream
    x.fill_(5.0)                        # returns at once, queued behind the gate
    done = torch.Event(device="mlu")
    done.record()
    assert not done.query()             # the fill has not run: the host was not blocked
    assert not torch.accelerator.current_stream().query()
    gate.open()
    done.synchronize()
    assert done.query()
    assert torch.equal(x.cpu(), torch.full((1 << 16,), 5.0))


def test_event_complete_means_finished():
    gate = torch_mlu._C._StreamGate()
    e = torch.Event(device="mlu")
    e.record()
    assert not e.query()
    gate.open()
    torch.mlu.synchronize()
    assert e.query()


def test_streams_run_independently():
    default = torch.accelerator.current_stream()
    side = torch.Stream(device="mlu")
    gate = torch_mlu._C._StreamGate()  # holds the default stream
    torch.accelerator.set_stream(side)
    try:
        y = torch.empty(8, device="mlu")
        y.fill_(1.0)
        side_done = torch.Event(device="mlu")
        side_done.record(side)
    finally:
        torch.accelerator.set_stream(default)
    side_done.synchronize()  # the side stream finishes while the default one is held
    assert side_done.query()
    assert not default.query()
    gate.open()
    torch.mlu.synchronize()
    assert torch.equal(y.cpu(), torch.ones(8))


def test_cross_stream_wait_orders_work():
    side = torch.Stream(device="mlu")
    x = torch.zeros(4, device="mlu")
    gate = torch_mlu._C._StreamGate()
    x.fill_(3.0)
    produced = torch.Event(device="mlu")
    produced.record()
    side.wait_event(produced)
    marker = torch.Event(device="mlu")
    marker.record(side)
    assert not marker.query()  # the side stream waits for the held default stream
    gate.open()
    marker.synchronize()
    assert torch.equal(x.cpu(), torch.full((4,), 3.0))


def test_elapsed_time_between_timing_events():
    start = torch.Event(device="mlu", enable_timing=True)
    end = torch.Event(device="mlu", enable_timing=True)
    start.record()
    torch.mlu._sleep(20_000_000)  # 20 ms
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 15.0
