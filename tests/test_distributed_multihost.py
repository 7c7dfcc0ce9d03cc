"""cncl across hosts: torchrun --nnodes 2 with a c10d rendezvous, each node a network namespace with its own
address, reaching the other only over its link (tools/netns_hosts.py; the rate shaped to 10 Gbit/s), trains DDP
and FSDP2 equal to one process (tests/multihost_train.py). Skips where namespaces cannot be made (not root)."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from netns_hosts import Hosts  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multihost_train.py")
UNAVAILABLE = Hosts.unavailable()
pytestmark = pytest.mark.training  # torchrun on two hosts: the training stage (docs/testing.md)


@pytest.mark.skipif(UNAVAILABLE is not None, reason=f"network namespaces: {UNAVAILABLE}")
@pytest.mark.parametrize("mode", ["ddp", "fsdp2"])
def test_two_hosts_train_equal_to_one_process(mode, tmp_path):
    out = tmp_path / "result.json"
    with Hosts(2, delay_us=100, rate="10gbit") as hosts:
        runs = hosts.torchrun_all([SCRIPT, "--mode", mode, "--out", str(out)], timeout=240, cwd=tmp_path)
        assert all(code == 0 for code, _ in runs), "\n\n".join(log for _, log in runs)
    result = json.loads(out.read_text())
    assert result["world"] == 2 and result["hosts"] == hosts.addresses, result
    assert result["max_diff"] <= 1e-5, result
    # Other network namespaces are other hosts: no shared memory (Note [cncl shared-memory all-reduce]).
    assert result["transport"] == "gloo", result
