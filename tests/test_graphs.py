"""Graph capture on mlu: torch.mlu.MLUGraph / graph / make_graphed_callables, torch.accelerator.Graph.

Replays are compared with the same work run eagerly on mlu (and the training steps with the CPU too), over
several replays with new inputs copied into the static ones. Random numbers: a replay draws what the same ops
would draw eagerly from the generator's state at that point (docs/graphs.md). Every refused operation is
checked to name itself, end the capture, and leave the stream, the allocator and the graph object usable.
"""
import copy
import os
import sys
import threading

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_mlu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from gpt import GPT, GPTConfig  # noqa: E402


def assert_usable_after_refusal(g):
    """After a refused capture: the graph can capture again, the side stream and the allocator work."""
    x = torch.ones(8, device="mlu")
    with torch.mlu.graph(g):
        y = x * 3
    x.fill_(2)
    g.replay()
    assert y.cpu().tolist() == [6.0] * 8
    assert not torch.mlu.is_current_stream_capturing()
    with torch.mlu.stream(torch.mlu.graph.default_capture_streams[torch.mlu.current_device()]):
        z = torch.arange(4, device="mlu") + 1
    torch.mlu.synchronize()
    assert z.cpu().tolist() == [1, 2, 3, 4]


# ---- capture and replay ---------------------------------------------------------------------------


def test_replay_follows_new_inputs_and_runs_nothing_at_capture():
    static_x = torch.zeros(64, device="mlu")
    out = torch.full((64,), -1.0, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        assert torch.mlu.is_current_stream_capturing()
        out.copy_(torch.sin(static_x) * 2 + static_x.sum())
    assert not torch.mlu.is_current_stream_capturing()
    torch.mlu.synchronize()
    assert out.cpu().eq(-1).all(), "captured work ran during the capture"
    for _ in range(3):
        data = torch.randn(64)
        static_x.copy_(data.to("mlu"))
        g.replay()
        torch.testing.assert_close(out.cpu(), torch.sin(data) * 2 + data.sum())


def test_replay_is_ordered_with_queued_eager_work():
    # A slow eager producer ahead of the replay on the same stream: the replay must read its result.
    static_x = torch.zeros(1024, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        y = static_x * 2
    gate = torch_mlu._C._StreamGate()
    try:
        static_x.fill_(3.0)   # queued behind the closed gate
        g.replay()            # queued after it
        after = y + 1         # and this after the replay
    finally:
        gate.open()
    assert after.cpu().eq(7.0).all()


def test_graph_can_replay_on_another_stream_and_the_default_stream():
    x = torch.arange(6.0, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        y = x.pow(2)
    g.replay()
    with torch.mlu.stream(torch.mlu.Stream()):
        x.add_(1)
        g.replay()
        torch.mlu.current_stream().synchronize()
    assert y.cpu().tolist() == [float(v * v) for v in range(1, 7)]


def test_capture_refuses_the_default_stream():
    g = torch.mlu.MLUGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()
    assert_usable_after_refusal(g)


def test_random_ops_draw_fresh_values_per_replay_matching_eager():
    torch.manual_seed(123)
    g = torch.mlu.MLUGraph()
    x = torch.ones(5000, device="mlu")
    with torch.mlu.graph(g):
        noise = torch.rand(16, device="mlu")
        dropped = F.dropout(x, 0.5)
    got = []
    for _ in range(3):
        g.replay()
        got.append((noise.clone(), dropped.clone()))
    torch.manual_seed(123)
    for i in range(3):
        want_noise = torch.rand(16, device="mlu")
        want_dropped = F.dropout(x, 0.5)
        torch.testing.assert_close(got[i][0], want_noise)
        torch.testing.assert_close(got[i][1], want_dropped)
    assert not torch.equal(got[0][0].cpu(), got[1][0].cpu())


def test_random_draws_from_another_generator_are_refused():
    gen = torch.Generator(device="mlu")
    g = torch.mlu.MLUGraph()
    with pytest.raises(RuntimeError, match="generator the graph does not own"):
        with torch.mlu.graph(g):
            torch.rand(4, device="mlu", generator=gen)
    assert_usable_after_refusal(g)


def test_multistream_capture_with_fork_and_join():
    x = torch.randn(256, device="mlu")
    g = torch.mlu.MLUGraph()
    side = torch.mlu.Stream()
    with torch.mlu.graph(g):
        a = x * 2
        side.wait_stream(torch.mlu.current_stream())      # fork: side joins the capture
        with torch.mlu.stream(side):
            b = a.exp()
        c = a - 1
        torch.mlu.current_stream().wait_stream(side)      # join
        out = b + c
    for _ in range(2):
        x.copy_(torch.randn(256).to("mlu"))
        g.replay()
        torch.testing.assert_close(out.cpu(), (x * 2).exp().cpu() + (x * 2 - 1).cpu())


def test_unjoined_side_stream_fails_the_capture():
    g = torch.mlu.MLUGraph()
    side = torch.mlu.Stream()
    x = torch.ones(4, device="mlu")
    with pytest.raises(RuntimeError, match="never waited for"):
        with torch.mlu.graph(g):
            side.wait_stream(torch.mlu.current_stream())
            with torch.mlu.stream(side):
                x.add_(1)
    assert_usable_after_refusal(g)


def test_two_graphs_share_a_pool():
    handle = torch.mlu.graph_pool_handle()
    x = torch.randn(1 << 16, device="mlu")
    g1, g2 = torch.mlu.MLUGraph(), torch.mlu.MLUGraph()
    with torch.mlu.graph(g1, pool=handle):
        y1 = x * 2
    with torch.mlu.graph(g2, pool=g1.pool()):
        y2 = y1 + 1
    assert g1.pool() == g2.pool() == handle
    segments = torch.mlu.memory_snapshot(handle)
    assert segments, "the graphs' memory is not in their pool's segments"
    assert any(s["address"] <= y1.data_ptr() < s["address"] + s["total_size"] for s in segments)
    assert any(s["address"] <= y2.data_ptr() < s["address"] + s["total_size"] for s in segments)
    g1.replay()
    g2.replay()
    torch.testing.assert_close(y2.cpu(), x.cpu() * 2 + 1)


def test_memory_returns_to_baseline_after_reset():
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    allocated, reserved = torch.mlu.memory_allocated(), torch.mlu.memory_reserved()
    x = torch.randn(1 << 18, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        y = (x * 2).sin() + 1
    g.replay()
    assert torch.mlu.memory_reserved() > reserved
    del x, y
    g.reset()
    torch.mlu.synchronize()
    torch.mlu.empty_cache()
    assert torch.mlu.memory_allocated() == allocated
    assert torch.mlu.memory_reserved() == reserved


def test_graph_memory_is_never_handed_to_other_work():
    x = torch.randn(4096, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        tmp = x * 3           # freed inside the capture: back to the graph's pool, not the default one
        out = tmp + 1
        del tmp
    pool_ranges = [(s["address"], s["address"] + s["total_size"]) for s in torch.mlu.memory_snapshot()
                   if tuple(s["segment_pool_id"]) == tuple(g.pool())]
    others = [torch.empty(4096, device="mlu") for _ in range(8)]
    for t in others:
        assert not any(lo <= t.data_ptr() < hi for lo, hi in pool_ranges)
    g.replay()
    torch.testing.assert_close(out.cpu(), x.cpu() * 3 + 1)


def test_debug_dump_writes_the_tasks(tmp_path):
    g = torch.mlu.MLUGraph()
    g.enable_debug_mode()
    x = torch.ones(3, device="mlu")
    with torch.mlu.graph(g):
        y = x.exp() + 1
    path = tmp_path / "graph.dot"
    g.debug_dump(str(path))
    text = path.read_text()
    assert text.startswith("digraph") and "->" in text
    assert y.shape == (3,)


def test_accelerator_graph_uses_the_same_implementation():
    assert torch.accelerator.current_accelerator().type == "mlu"
    x = torch.arange(4.0, device="mlu")
    g = torch.accelerator.Graph()
    with torch.mlu.stream(torch.mlu.Stream()), g:
        y = x * 10
    x.fill_(2)
    g.replay()
    assert y.cpu().tolist() == [20.0] * 4
    assert isinstance(g.pool(), tuple)
    g.reset()


# ---- refused operations ---------------------------------------------------------------------------


def _refused(body, match):
    g = torch.mlu.MLUGraph()
    x = torch.randn(16, device="mlu")
    with pytest.raises(RuntimeError, match=match):
        with torch.mlu.graph(g):
            body(x)
    assert not torch.mlu.is_current_stream_capturing()
    assert_usable_after_refusal(g)


def test_item_is_refused():
    _refused(lambda x: x.sum().item(), r"_local_scalar_dense")


def test_copy_to_pageable_memory_is_refused():
    _refused(lambda x: x.cpu(), r"pageable CPU memory")


def test_blocking_copy_from_pinned_memory_is_refused():
    pinned = torch.randn(16).pin_memory()
    _refused(lambda x: x.copy_(pinned), r"non_blocking=False")


def test_non_blocking_copy_from_pinned_memory_is_captured():
    pinned = torch.zeros(16).pin_memory()
    static = torch.empty(16, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g):
        static.copy_(pinned, non_blocking=True)
        out = static * 2
    for v in (1.0, 5.0):
        pinned.fill_(v)
        g.replay()
        assert out.cpu().eq(2 * v).all()


def test_synchronize_is_refused():
    _refused(lambda x: torch.mlu.synchronize(), r"capturing")


def test_stream_synchronize_is_refused():
    _refused(lambda x: torch.mlu.current_stream().synchronize(), r"synchronizing a capturing queue")


def test_event_synchronize_in_a_capture_is_refused():
    def body(x):
        e = torch.mlu.Event()
        e.record()
        e.synchronize()
    _refused(body, r"event recorded in a capture")


def test_cpu_fallback_is_refused_naming_the_op():
    op = torch.ops.aten.linalg_lstsq.out
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1")
    _refused(lambda x: torch.linalg.lstsq(x.reshape(4, 4), x.reshape(4, 4)), r"linalg_lstsq.*CPU fallback")


@pytest.mark.skipif(torch.mlu.device_count() < 2, reason="needs two mlu devices")
def test_tensor_on_another_device_is_refused():
    other = torch.ones(4, device="mlu:1")
    _refused(lambda x: other * 2, r"device 1")


def test_collective_is_refused():
    import torch.distributed as dist

    dist.init_process_group("cncl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        _refused(lambda x: dist.all_reduce(x), r"cncl collective")
        y = torch.ones(3, device="mlu")
        dist.all_reduce(y)  # the group still works outside the capture
        assert y.cpu().tolist() == [1.0, 1.0, 1.0]
    finally:
        dist.destroy_process_group()


def test_empty_cache_is_refused():
    _refused(lambda x: torch.mlu.empty_cache(), r"empty_cache")


def test_capture_error_modes_global_and_thread_local():
    # A call that may synchronize (a fresh pinned host allocation) from another thread: refused under a
    # global-mode capture, allowed under a thread-local one.
    def pin_in_thread(size):
        result = {}

        def run():
            try:
                torch.empty(size, pin_memory=True)
                result["ok"] = True
            except RuntimeError as e:
                result["error"] = str(e)
        t = threading.Thread(target=run)
        t.start()
        t.join()
        return result

    x = torch.ones(4, device="mlu")
    g = torch.mlu.MLUGraph()
    with torch.mlu.graph(g, capture_error_mode="thread_local"):
        y = x + 1
        assert pin_in_thread((1 << 20) + 3).get("ok")  # a size the pinned cache has no block for
    g.replay()
    assert y.cpu().eq(2).all()
    g2 = torch.mlu.MLUGraph()
    with pytest.raises(RuntimeError, match="invalidated"):
        with torch.mlu.graph(g2, capture_error_mode="global"):
            y2 = x + 1
            result = pin_in_thread((1 << 21) + 5)
            assert "global mode" in result.get("error", ""), result
    assert_usable_after_refusal(g2)
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        with torch.mlu.graph(torch.mlu.MLUGraph(), capture_error_mode="lenient"):
            pass
    del y2


# ---- concurrent captures on one device --------------------------------------------------------------


def capture_concurrently(bodies, modes, during=None):
    """Captures bodies[k]() into its own graph on its own stream of the current device, in a thread of its own
    with capture_error_mode modes[k], all captures underway at once: every thread begins its capture, then all
    run their bodies, then `during()` runs in the calling thread, then all end their captures (each step after
    every thread finished the one before). Returns the graphs and, per graph, the body's result or the exception
    that failed it."""
    n = len(bodies)
    streams = [torch.mlu.Stream() for _ in range(n)]
    graphs = [torch.mlu.MLUGraph() for _ in range(n)]
    outcome = [None] * n
    step = threading.Barrier(n + 1, timeout=60)
    torch.mlu.synchronize()  # nothing eager pending on the device while they capture

    def run(k):
        waits_done = False
        try:
            with torch.mlu.stream(streams[k]):
                graphs[k].capture_begin(capture_error_mode=modes[k])
                try:
                    step.wait()  # every capture is underway
                    assert torch.mlu.is_current_stream_capturing()
                    try:
                        outcome[k] = bodies[k]()
                    except RuntimeError as e:  # a refusal fails this capture only; the others go on
                        outcome[k] = e
                    step.wait()  # every body is recorded
                    step.wait()  # `during` ran
                    waits_done = True
                finally:
                    graphs[k].capture_end()
        except BaseException as e:  # noqa: B036 (reported to the test)
            outcome[k] = e
            if not waits_done:  # after the last wait an abort would break threads not yet woken from it
                step.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    try:
        step.wait()
        step.wait()
        if during is not None:
            during()
        step.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    return graphs, outcome


@pytest.mark.parametrize("mode", ["thread_local", "relaxed", "global"])
def test_two_threads_capture_on_one_device_at_once(mode):
    x = torch.zeros(4096, device="mlu")
    bodies = [lambda: torch.sin(x * 2) + 1, lambda: torch.cumsum(x, 0) - x.mean()]
    graphs, outs = capture_concurrently(bodies, [mode, mode])
    assert all(isinstance(out, torch.Tensor) for out in outs), outs
    for step in range(3):
        data = torch.randn(4096)
        x.copy_(data.to("mlu"))
        for k in ((0, 1) if step % 2 == 0 else (1, 0)):
            graphs[k].replay()
        torch.testing.assert_close(outs[0].cpu(), (torch.sin(x * 2) + 1).cpu())
        torch.testing.assert_close(outs[1].cpu(), (torch.cumsum(x, 0) - x.mean()).cpu())


def test_concurrent_captures_each_draw_fresh_random_numbers_per_replay():
    # Each graph numbers its own draws, however the captures interleave (both draw their first number before
    # either draws its second); each replay continues the generator's sequence as the same ops run eagerly
    # would, whichever graph replays (Note [Graph-safe random numbers]).
    x = torch.ones(5000, device="mlu")
    between = threading.Barrier(2, timeout=60)

    def body(k):
        def run():
            noise = torch.rand(16, device="mlu")
            between.wait()
            dropped = F.dropout(x * (k + 1), 0.5)
            return noise, dropped
        return run

    graphs, outs = capture_concurrently([body(0), body(1)], ["thread_local", "thread_local"])
    assert all(isinstance(out, tuple) for out in outs), outs
    torch.manual_seed(123)
    order = [0, 1, 1, 0, 0, 1]
    got = []
    for k in order:
        graphs[k].replay()
        got.append(tuple(t.clone() for t in outs[k]))
    state_after_replays = torch.mlu.get_rng_state()
    torch.manual_seed(123)
    for (noise, dropped), k in zip(got, order):
        torch.testing.assert_close(noise, torch.rand(16, device="mlu"))
        torch.testing.assert_close(dropped, F.dropout(x * (k + 1), 0.5))
    assert torch.equal(torch.mlu.get_rng_state(), state_after_replays)
    first, second = got[0][0].cpu(), got[3][0].cpu()  # graph 0's first and second replays
    assert not torch.equal(first, second)
    assert not torch.equal(got[0][0].cpu(), got[1][0].cpu())  # graph 0 and graph 1 draw apart


def test_concurrent_captures_keep_their_own_error_modes():
    x = torch.ones(4, device="mlu")

    def pin(size):  # a fresh pinned host allocation (mluHostMalloc, a size the pinned cache has no block for)
        try:
            torch.empty(size, pin_memory=True)
            return "allowed"
        except RuntimeError as e:
            return str(e)

    # Another thread's call: a global-mode capture refuses it (as on CUDA) and is invalidated; a thread-local
    # capture underway at the same time lets it through and ends well.
    seen = {}
    graphs, outs = capture_concurrently([lambda: x + 1, lambda: x + 2], ["global", "thread_local"],
                                        during=lambda: seen.setdefault("pin", pin((1 << 24) + 7)))
    assert "global mode" in seen["pin"], seen
    assert isinstance(outs[0], RuntimeError) and "invalidated" in str(outs[0]), outs
    assert isinstance(outs[1], torch.Tensor), outs
    graphs[1].replay()
    assert outs[1].cpu().eq(3).all()

    # The capturing thread's own call: its thread-local capture refuses it; the other thread's capture goes on.
    def pin_in_capture():
        seen["own"] = pin((1 << 25) + 7)
        return x + 2

    graphs, outs = capture_concurrently([lambda: x + 1, pin_in_capture], ["thread_local", "thread_local"])
    assert "thread_local mode" in seen["own"], seen
    assert isinstance(outs[1], RuntimeError) and "invalidated" in str(outs[1]), outs
    assert isinstance(outs[0], torch.Tensor), outs
    graphs[0].replay()
    assert outs[0].cpu().eq(2).all()
    assert_usable_after_refusal(graphs[1])


def test_non_capturable_optimizer_step_is_refused():
    model = nn.Linear(4, 4).to("mlu")
    opt = torch.optim.Adam(model.parameters(), capturable=False)
    model(torch.randn(2, 4, device="mlu")).sum().backward()
    g = torch.mlu.MLUGraph()
    with pytest.raises(RuntimeError, match="capturable is False"):
        with torch.mlu.graph(g):
            opt.step()
    assert_usable_after_refusal(g)


# ---- training steps -------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


class GPTLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = GPT(GPTConfig(vocab_size=48, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.1))

    def forward(self, x, y):
        return self.gpt(x, y)[1]


def _train(model, batches, graphed, make_opt, autocast_dtype=None, scaler=False, warmup=2):
    """Loss per step and the final parameters: eager, or warm-up steps then one captured step replayed."""
    opt = make_opt(model.parameters())
    grad_scaler = torch.amp.GradScaler("mlu", init_scale=2.0 ** 10) if scaler else None
    static = [t.clone() for t in batches[0]]

    def step():
        with torch.autocast("mlu", dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None):
            loss = model(*static)
        if grad_scaler is not None:
            grad_scaler.scale(loss).backward()
            grad_scaler.step(opt)
            grad_scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    losses = []
    if not graphed:
        for batch in batches:
            for s, b in zip(static, batch):
                s.copy_(b)
            opt.zero_grad(set_to_none=False)
            losses.append(step().detach().clone())
        return torch.stack(losses).cpu(), [p.detach().cpu() for p in model.parameters()]
    side = torch.mlu.Stream()  # warm-up and capture on one stream: autograd's nodes keep the stream they saw
    side.wait_stream(torch.mlu.current_stream())
    with torch.mlu.stream(side):
        for batch in batches[:warmup]:
            for s, b in zip(static, batch):
                s.copy_(b)
            opt.zero_grad(set_to_none=False)
            losses.append(step().detach().clone())
    torch.mlu.current_stream().wait_stream(side)
    g = torch.mlu.MLUGraph()
    opt.zero_grad(set_to_none=False)
    with torch.mlu.graph(g, stream=side):
        opt.zero_grad(set_to_none=False)
        static_loss = step()
    for batch in batches[warmup:]:
        for s, b in zip(static, batch):
            s.copy_(b)
        g.replay()
        losses.append(static_loss.detach().clone())
    return torch.stack(losses).cpu(), [p.detach().cpu() for p in model.parameters()]


def _check_graphed_training(make_model, make_batch, make_opt, steps=5, autocast_dtype=None, scaler=False,
                            atol=1e-5, rtol=1e-5):
    torch.manual_seed(0)
    base = make_model()
    batches = [tuple(t.to("mlu") for t in make_batch()) for _ in range(steps)]
    torch.manual_seed(1)
    torch.mlu.manual_seed(7)
    eager_losses, eager_params = _train(copy.deepcopy(base).to("mlu"), batches, False, make_opt, autocast_dtype,
                                        scaler)
    torch.mlu.manual_seed(7)
    graph_losses, graph_params = _train(copy.deepcopy(base).to("mlu"), batches, True, make_opt, autocast_dtype,
                                        scaler)
    torch.testing.assert_close(graph_losses, eager_losses, atol=atol, rtol=rtol)
    for got, want in zip(graph_params, eager_params):
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)
    assert len(set(eager_losses.tolist())) == steps, "the steps did not change the loss"
    assert len(set(graph_losses.tolist())) == steps, "the replays did not change the loss"


def test_mlp_training_step_with_dropout_and_capturable_adam():
    _check_graphed_training(MLP, lambda: (torch.randn(16, 32), torch.randint(0, 10, (16,))),
                            lambda p: torch.optim.Adam(p, lr=1e-2, capturable=True))


def test_mlp_training_step_amp_gradscaler_fused_adamw():
    _check_graphed_training(MLP, lambda: (torch.randn(16, 32), torch.randint(0, 10, (16,))),
                            lambda p: torch.optim.AdamW(p, lr=1e-2, capturable=True, fused=True),
                            autocast_dtype=torch.float16, scaler=True, atol=1e-3, rtol=1e-3)


def test_gpt_mini_training_step_with_dropout_amp_and_capturable_adamw():
    _check_graphed_training(GPTLoss, lambda: (torch.randint(0, 48, (2, 16)), torch.randint(0, 48, (2, 16))),
                            lambda p: torch.optim.AdamW(p, lr=1e-3, capturable=True, foreach=True),
                            autocast_dtype=torch.bfloat16, atol=2e-3, rtol=2e-3)


def test_graphed_training_matches_the_cpu():
    # The eager mlu run is the oracle above; here the eager CPU run is (no dropout: the CPU's RNG differs).
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 10))

        def forward(self, x, y):
            return F.cross_entropy(self.net(x), y)

    torch.manual_seed(0)
    base = Net()
    batches = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(4)]
    cpu_model = copy.deepcopy(base)
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    cpu_losses = []
    for x, y in batches:
        cpu_opt.zero_grad()
        loss = cpu_model(x, y)
        loss.backward()
        cpu_opt.step()
        cpu_losses.append(loss.detach())
    losses, params = _train(copy.deepcopy(base).to("mlu"), [tuple(t.to("mlu") for t in b) for b in batches], True,
                            lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    torch.testing.assert_close(losses, torch.stack(cpu_losses), atol=1e-5, rtol=1e-5)
    for got, want in zip(params, cpu_model.parameters()):
        torch.testing.assert_close(got, want.detach(), atol=1e-5, rtol=1e-5)


# ---- make_graphed_callables -----------------------------------------------------------------------


def test_make_graphed_callables_module_and_function_backward_equal_eager():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)).to("mlu")
    reference = copy.deepcopy(module)

    def fn(a, b):
        return (a * b).tanh() + a

    x = torch.randn(4, 8, device="mlu", requires_grad=True)
    a = torch.randn(4, 8, device="mlu", requires_grad=True)
    b = torch.randn(4, 8, device="mlu")
    graphed_module, graphed_fn = torch.mlu.make_graphed_callables((module, fn), ((x,), (a, b)))
    for _ in range(3):
        xi = torch.randn(4, 8, device="mlu", requires_grad=True)
        ai = torch.randn(4, 8, device="mlu", requires_grad=True)
        bi = torch.randn(4, 8, device="mlu")
        out = graphed_fn(graphed_module(xi), bi)
        out.sum().backward()
        xr, ar = xi.detach().clone().requires_grad_(), ai.detach().clone().requires_grad_()
        ref = fn(reference(xr), bi)
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(xi.grad, xr.grad)
        for p, q in zip(module.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
            p.grad = None
            q.grad = None
        del ai, ar


def test_make_graphed_callables_refuses_autocast_caching():
    module = nn.Linear(4, 4).to("mlu")
    with torch.autocast("mlu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="cache_enabled=False"):
            torch.mlu.make_graphed_callables(module, (torch.randn(2, 4, device="mlu"),))
