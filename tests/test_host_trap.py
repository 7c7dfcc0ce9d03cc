"""The host-access trap (TORCH_MLU_TRAP_HOST_ACCESS=1, Note [Host-access trap] in mlu_runtime/host_trap.h).

Device memory sits where host code cannot touch it; device kernels and copies reach it through a second mapping.
The whole suite also runs once in this mode (`make test-trap`); here: what a stray access reports, and what the
mode changes for users.
"""
import signal


from conftest import run_python

TRAP = {"TORCH_MLU_TRAP_HOST_ACCESS": "1"}


def test_work_runs_and_matches_the_cpu_under_the_trap():
    result = run_python("""
        import torch, torch_mlu
        torch.manual_seed(0)
        x = torch.randn(64, 32)
        model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
        ref = model(x)
        got = model.to("mlu")(x.to("mlu"))
        got.sum().backward()
        torch.testing.assert_close(got.cpu(), ref)
        compiled = torch.compile(lambda t: (t.sin() * 2).sum(0))
        torch.testing.assert_close(compiled(x.to("mlu")).cpu(), (x.sin() * 2).sum(0))
        print("ok", torch.mlu.get_device_properties(0).is_integrated)
        """, env=TRAP)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_a_stray_host_read_stops_the_program_with_a_report():
    result = run_python("""
        import ctypes, faulthandler, torch, torch_mlu
        faulthandler.enable()
        def make():
            return torch.arange(1024, dtype=torch.float32, device="mlu")
        x = make()
        torch.mlu.synchronize()
        print("reading", flush=True)
        value = ctypes.c_float.from_address(x.data_ptr() + 40).value  # a host read of device memory
        print("read", value, flush=True)
        """, env=TRAP)
    assert result.returncode == -signal.SIGSEGV, (result.returncode, result.stderr)
    assert "reading" in result.stdout and "read" not in result.stdout.replace("reading", "")
    err = result.stderr
    assert "host code touched device memory at" in err
    assert "it is 40 bytes into an allocation of" in err and "on mlu:0, allocated at:" in err
    assert "the access was made at:" in err
    assert 'line 9 in <module>' in err  # faulthandler: the Python line that touched it


def test_sharing_between_processes_is_refused_clearly():
    result = run_python("""
        import torch, torch_mlu
        x = torch.ones(4, device="mlu")
        try:
            x.untyped_storage()._share_mlu_()
        except RuntimeError as e:
            print("refused:", e)
        """, env=TRAP)
    assert result.returncode == 0, result.stderr
    assert "cannot be shared between processes while TORCH_MLU_TRAP_HOST_ACCESS=1" in result.stdout


def test_bad_value_is_reported():
    result = run_python("import torch, torch_mlu\ntorch.ones(1, device='mlu')",
                        env={"TORCH_MLU_TRAP_HOST_ACCESS": "yes"})
    assert result.returncode != 0
    assert "TORCH_MLU_TRAP_HOST_ACCESS='yes' is not valid: use 1 or 0" in result.stderr
