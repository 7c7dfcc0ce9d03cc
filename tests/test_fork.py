"""Fork safety: a child forked after initialisation gets the documented error."""


def test_fork_after_init_raises_cuda_like_error(python):
    result = python(
        """
        import multiprocessing as mp, torch, torch_mlu
        def child(q):
            try:
                torch.ones(1, device="mlu"); q.put("ok")
            except RuntimeError as e:
                q.put(str(e))
        torch.ones(1, device="mlu")  # initialise in the parent
        ctx = mp.get_context("fork"); q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,)); p.start(); p.join(60)
        print(q.get(timeout=10))
        print(torch.ones(2, device="mlu").sum().item())  # the parent goes on
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().split("\n")
    assert lines[0].startswith("Cannot re-initialize MLU in forked subprocess")
    assert "'spawn' start method" in lines[0]
    assert lines[1] == "2.0"


def test_fork_before_init_can_use_mlu(python):
    result = python(
        """
        import multiprocessing as mp, torch, torch_mlu
        assert torch.mlu.is_available() and not torch.mlu.is_initialized()
        def child(q):
            try:
                q.put(torch.ones(3, device="mlu").sum().item())
            except Exception as e:
                q.put(repr(e))
        ctx = mp.get_context("fork"); q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,)); p.start(); p.join(60)
        print(q.get(timeout=10))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3.0"
