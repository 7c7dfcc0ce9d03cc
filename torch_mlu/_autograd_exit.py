"""Exit-time drain of PyTorch's autograd device threads for mlu.

Note [Autograd device threads at exit]
A backward on mlu runs on the autograd engine's device thread ``pt_autograd_<index>``, and the engine's
GraphTask holds a copy of the caller's thread-local state. Since torch 2.13, ``_engine_run_backward``
stashes ``contextvars.copy_context()`` in that state (a ``SafePyObject``), so whichever thread drops the
GraphTask last must take the GIL to decref it. When the device thread drops it after the caller has
returned, and the main thread has meanwhile begun finalizing the interpreter, the device thread's GIL
request makes Python end it with ``pthread_exit``; the forced unwind crosses the noexcept destructor
``~ThreadLocalState`` and ``std::terminate`` aborts the process ("terminate called without an active
exception", exit code 134) after the script has finished. CPU backward never hits this: it runs on the
calling thread.

So, while the interpreter is still whole (atexit handlers run before finalization starts), each started
mlu device thread is sent one more backward, through the engine directly, whose thread-local state holds
no Python object. A device thread takes tasks in order, so once that backward returns the thread has
released every earlier GraphTask (taking the GIL, which ``run_backward`` releases while it waits); the
drain's own GraphTask needs no GIL whoever drops it.
"""
import glob

import torch


def _started_device_threads():
    """Indices of the running pt_autograd_<index> threads; None where threads cannot be listed."""
    names = glob.glob("/proc/self/task/*/comm")
    if not names:
        return None
    indices = set()
    for name in names:
        try:
            with open(name) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith("pt_autograd_") and comm[len("pt_autograd_"):].isdigit():
            indices.add(int(comm[len("pt_autograd_"):]))
    return indices


def drain_autograd_device_threads():
    mlu = torch.mlu
    if not mlu.is_initialized():
        return  # no mlu backward ran (and in a forked child is_initialized() is False)
    started = _started_device_threads()
    for index in range(mlu.device_count()):
        if started is not None and index not in started:
            continue  # starting a device thread now would only add work at exit
        try:
            device = torch.device("mlu", index)
            leaf = torch.zeros((), device=device, requires_grad=True)
            torch.autograd.Variable._execution_engine.run_backward(
                (leaf * 1,), (torch.ones((), device=device),), False, False, (), True, True)
        except Exception:  # noqa: BLE001 - exiting anyway; a failed drain only leaves the race open
            pass
